"""What a search is asked: the models, the load, the service targets, the space and the objective."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, field_validator, model_validator

from inferplan.errors import InvalidScenarioError
from inferplan.inputs import Input
from inferplan.search.arrivals import BURSTY_NEEDS_A_PEAK, BURSTY_PEAK_ALLOWED, DEFAULT_BURST_PERIOD_S, UNIFORM_MAX_SCV
from inferplan.search.trace import MAX_TRACE_ROWS, TraceFile, as_trace_file

Objective = Literal["usd-per-mtok", "monthly", "capex", "gpus", "power"]
Pricing = Literal["buy", "rent", "both"]
FormFactor = Literal["workstation", "node", "rack"]
Status = Literal["shipping", "ramp", "roadmap", "discontinued"]
# the systems catalogue's tiers under each form factor a user filters by
FORM_FACTOR_TIERS = {
    "workstation": ("workstation", "desktop", "lab-box", "single-gpu"),
    "node": ("node", "server"),
    "rack": ("rack",),
}
GPU_PRICE_MAX_USD = 1e8  # one accelerator: far above any catalogued system's per GPU
GPU_PRICE_ALLOWED = ("a price in USD above 0 per GPU: id=USD pairs, comma-separated (h100-sxm=25000,rtx-4090=1800), "
                     "or one number when one accelerator is searched")
GpuPrices = float | dict[str, float]
# entries in one filter list: twice the largest kind in the catalogue (66 accelerators), so every id
# fits with room for aliases; the resolved ids are searched once each (``names.py``)
MAX_FILTER_ITEMS = 128


class Targets(Input):
    """Service targets; each one left out is not checked."""

    ttft_p50_s: float | None = Field(None, gt=0, le=3600, description="time to first token at the median, seconds at most")
    ttft_p95_s: float | None = Field(None, gt=0, le=3600, description="time to first token at p95, seconds at most")
    ttft_p99_s: float | None = Field(None, gt=0, le=3600, description="time to first token at p99, seconds at most")
    tpot_p95_s: float | None = Field(None, gt=0, le=60, description="seconds per output token at p95 at most "
                                     "(or min_output_tokens_per_s_per_user, not both)")
    min_output_tokens_per_s_per_user: float | None = Field(
        None, gt=0, le=100_000, description="output tokens/s each user sees at p95, at least (1 / TPOT p95; default "
        "with users: the workload preset's)")
    e2e_p95_s: float | None = Field(None, gt=0, le=86_400, description="end-to-end latency of a request at p95, "
                                    "seconds at most")
    max_utilisation: float | None = Field(
        None, gt=0, le=1, description="the busiest instance's load factor at most (arrivals × service time ÷ "
        "servers); with no TTFT target the search applies a default (search/data/defaults.yaml)")

    @model_validator(mode="after")
    def _one_speed_target(self) -> "Targets":
        if self.tpot_p95_s is not None and self.min_output_tokens_per_s_per_user is not None:
            raise ValueError("state tpot_p95_s or min_output_tokens_per_s_per_user, not both (one is 1 / the other)")
        return self


class SearchRequest(Input):
    """One search: exactly one way of stating the load (users with a workload preset, a request
    rate with input and output lengths, or a trace file)."""

    models: tuple[str, ...] = Field(min_length=1, max_length=8, description="catalogue model ids; each is searched")
    users: int | None = Field(None, ge=1, le=1_000_000_000, description="the load as users of a workload preset "
                              "(its busiest-hour rate per user and its lengths)")
    workload: str | None = Field(None, description="workload preset id (with users)")
    request_rate_per_s: float | None = Field(None, gt=0, le=1_000_000, description="the load as mean requests per "
                                             "second (with input_len and output_len)")
    input_len: int | None = Field(None, ge=1, le=10_000_000, description="mean prompt tokens per request (with a rate)")
    output_len: int | None = Field(None, ge=1, le=10_000_000, description="mean output tokens per request (with a rate)")
    trace: str | TraceFile | Annotated[list[Any], Field(max_length=MAX_TRACE_ROWS)] | None = Field(
        None, description="a CSV/JSONL trace file of arrival time, input and output tokens (its path; or its name "
        "and text, as {name, text, encoding}: encoding base64 for its bytes base64-encoded), or its rows inline "
        "(objects of arrival_s, input_tokens, output_tokens)")
    arrival: Literal["poisson", "bursty"] = Field(
        "poisson", description="how requests arrive (users or a request rate; a trace brings its own): independent "
        "arrivals at the mean rate, or busy and quiet spells around it")
    peak_to_average: float = Field(1.0, ge=1, le=100, description="bursty: the busy spells' rate over the mean")
    burst_period_s: float = Field(DEFAULT_BURST_PERIOD_S, gt=0, le=1e6,
                                  description="bursty: mean seconds of one busy and one quiet spell together")
    input_tokens_scv: float = Field(0.0, ge=0, le=100, description="spread of prompt lengths around input_len: their "
                                    "squared coefficient of variation (0: every prompt the mean; log-normal otherwise)")
    output_tokens_scv: float = Field(0.0, ge=0, le=100, description="spread of output lengths (squared coefficient "
                                     "of variation)")
    lengths: Literal["lognormal", "uniform"] = Field(
        "lognormal", description="how prompt and output lengths spread around their means: log-normal, or uniform "
        "between the mean ± √(3·SCV) of it (a benchmark's random dataset; SCV at most 1/3)")
    prefix_cache_hit_rate: float | None = Field(
        None, ge=0, le=1, description="share of prompt tokens served from the prefix cache, not prefilled again "
        "(default: the workload preset's with users, else 0)")
    targets: Targets = Field(Targets(), description="service targets; each one left out is not checked")
    systems: tuple[str, ...] | None = Field(None, min_length=1, max_length=MAX_FILTER_ITEMS,
                                            description="only these catalogue systems (leave out: every one)")
    accelerators: tuple[str, ...] | None = Field(None, min_length=1, max_length=MAX_FILTER_ITEMS, description="only "
                                                 "these accelerators, bought in systems or rented alone (not with systems)")
    engines: tuple[str, ...] | None = Field(None, min_length=1, max_length=MAX_FILTER_ITEMS,
                                            description="only these engines (leave out: each that runs on the hardware)")
    quantizations: tuple[str, ...] | None = Field(None, min_length=1, max_length=MAX_FILTER_ITEMS,
                                                  description="only these weight formats")
    kv_cache_dtypes: tuple[str, ...] | None = Field(None, min_length=1, max_length=MAX_FILTER_ITEMS,
                                                    description="only these KV-cache types")
    vendors: tuple[str, ...] | None = Field(None, min_length=1, max_length=MAX_FILTER_ITEMS,
                                            description="only accelerators made by these vendors")
    statuses: tuple[Status, ...] = Field(
        ("shipping",), min_length=1, max_length=MAX_FILTER_ITEMS, description="only hardware of these statuses")
    form_factors: tuple[FormFactor, ...] | None = Field(None, min_length=1, max_length=MAX_FILTER_ITEMS, description=(
        "only systems of these form factors (leave out: every one, and GPUs rented alone)"))
    max_gpus: int | None = Field(None, ge=1, le=100_000, description="GPUs of a deployment, at most")
    max_capex_usd: float | None = Field(None, gt=0, le=1e12, description="a bought deployment's capital cost, USD at most")
    max_power_w: float | None = Field(None, gt=0, le=1e10, description="a deployment's power draw, watts at most")
    pricing: Pricing = Field("both", description="price bought hardware, rented hardware, or both")
    gpu_price_usd: GpuPrices | None = Field(
        None, description="your purchase price of bare accelerators, USD per GPU, the host added as the catalogue prices it, "
        "as {accelerator: USD} or the text \"h100-sxm=25000,rtx-4090=1800\" (a bare number when one "
        "accelerator is searched); prices buying N of each, which the catalogue prices only inside systems")
    objective: Objective = Field("usd-per-mtok", description="what the results are ranked by, lowest first")
    top: int = Field(10, ge=1, le=1000, description="how many ranked deployments to return")
    speculative: bool = Field(True, description="also try speculative decoding where the model and engine offer a draft")
    disaggregated: bool = Field(True, description="also try separate prefill and decode pools where the engine runs them")

    @field_validator("trace", mode="before")
    @classmethod
    def _trace_file(cls, value: object) -> object:
        return as_trace_file(value)  # its own errors, not the union's ("trace.str: … a valid string")

    @field_validator("gpu_price_usd", mode="before")
    @classmethod
    def _gpu_prices(cls, value: object) -> object:
        return gpu_prices(value)

    @model_validator(mode="after")
    def _one_load(self) -> "SearchRequest":
        # refused as the library's error, not pydantic's, so that each shell can name the field at fault
        given = [k for k in ("users", "request_rate_per_s", "trace") if getattr(self, k) is not None]
        if len(given) != 1:
            raise InvalidScenarioError(
                "state the load one way: users (with a workload preset), request_rate_per_s (with input_len and "
                "output_len), or a trace", field=given[1] if given else "users",
                allowed="one of users, request_rate_per_s, trace")
        if self.request_rate_per_s is not None and (self.input_len is None or self.output_len is None):
            raise InvalidScenarioError("request_rate_per_s needs input_len and output_len",
                                       field="input_len" if self.input_len is None else "output_len",
                                       allowed="a whole number of tokens with request_rate_per_s")
        if self.request_rate_per_s is None and (given := [k for k in ("input_len", "output_len")
                                                          if getattr(self, k) is not None]):
            source = ("users take their token counts from the workload preset" if self.users is not None
                      else "a trace brings its own token counts")
            raise InvalidScenarioError(source, field=given[0],
                                       allowed="leave it out, or state the load as request_rate_per_s with "
                                       "input_len and output_len")
        if self.users is None and self.workload is not None:
            raise InvalidScenarioError("a workload preset goes with users", field="workload",
                                       allowed="leave it out, or give users")
        self._arrivals_fit_the_load()
        if self.systems and self.accelerators:
            raise InvalidScenarioError("name systems or accelerators, not both", field="accelerators",
                                       allowed="leave it out, or leave out systems")
        if self.gpu_price_usd is not None and self.systems:
            raise InvalidScenarioError("a GPU price prices bare accelerators; the systems named are priced by their "
                                       "price bands", field="gpu_price_usd",
                                       allowed="leave it out with systems, or name accelerators instead")
        if self.gpu_price_usd is not None and self.pricing == "rent":
            raise InvalidScenarioError("a GPU price prices buying, and the search asked rents only",
                                       field="gpu_price_usd", allowed="leave it out, or search buying too")
        return self

    def _arrivals_fit_the_load(self) -> None:
        """A trace brings its own arrivals and lengths; the burst settings go with bursty arrivals
        (a setting at its default is no setting)."""
        changed = [name for name in ("arrival", "peak_to_average", "burst_period_s", "input_tokens_scv",
                                     "output_tokens_scv", "lengths")
                   if getattr(self, name) != type(self).model_fields[name].default]
        if self.trace is not None and changed:
            raise InvalidScenarioError("a trace brings its own timing and token counts", field=changed[0],
                                       allowed="leave it out with a trace")
        if self.arrival != "bursty" and (burst := [n for n in changed if n in ("peak_to_average", "burst_period_s")]):
            raise InvalidScenarioError(f"{burst[0]} describes bursty arrivals", field=burst[0],
                                       allowed="arrival bursty, or leave it out")
        if self.arrival == "bursty" and self.peak_to_average <= 1.0:
            raise InvalidScenarioError(BURSTY_NEEDS_A_PEAK, field="peak_to_average", allowed=BURSTY_PEAK_ALLOWED)
        if self.lengths == "uniform":
            for name in ("input_tokens_scv", "output_tokens_scv"):
                if getattr(self, name) > UNIFORM_MAX_SCV + 1e-12:
                    raise InvalidScenarioError("a uniform spread reaches an SCV of 1/3 at most (from 0 to twice the "
                                               "mean)", field=name, allowed="at most 1/3 with uniform lengths, or "
                                               "lognormal lengths")


def gpu_prices(value: object) -> object:
    """A GPU price as stated: a number, ``{id: USD}``, or the text ``"id=USD,id=USD"`` / ``"USD"``; each price
    above 0 and at most ``GPU_PRICE_MAX_USD``, refused naming ``gpu_price_usd`` (or ``gpu_price_usd.<id>``)."""
    if isinstance(value, str):
        value = _price_text(value)
    if isinstance(value, dict):
        for key, usd in value.items():
            _positive(usd, f"gpu_price_usd.{key}")
        return value
    if value is not None:
        _positive(value, "gpu_price_usd")
    return value


def _price_text(text: str) -> float | dict[str, float]:
    parts = [p.strip() for p in text.split(",") if p.strip()]
    if len(parts) == 1 and "=" not in parts[0]:
        return _number(parts[0], "gpu_price_usd")
    out: dict[str, float] = {}
    for part in parts:
        key, sep, usd = (x.strip() for x in part.partition("="))
        if not sep or not key:
            raise InvalidScenarioError(f"{part!r} is no accelerator=USD pair", field="gpu_price_usd",
                                       allowed=GPU_PRICE_ALLOWED)
        out[key] = _number(usd, f"gpu_price_usd.{key}")
    if not out:
        raise InvalidScenarioError("no price given", field="gpu_price_usd", allowed=GPU_PRICE_ALLOWED)
    return out


def _number(text: str, field: str) -> float:
    try:
        return float(text.replace("_", "").replace("$", ""))
    except ValueError:
        raise InvalidScenarioError(f"{text!r} is no price", field=field, allowed=GPU_PRICE_ALLOWED) from None


def _positive(usd: object, field: str) -> None:
    if isinstance(usd, bool) or not isinstance(usd, (int, float)) or not (0 < usd <= GPU_PRICE_MAX_USD):
        raise InvalidScenarioError(f"{usd!r} is no price", field=field,
                                   allowed=f"a price in USD above 0 and at most {GPU_PRICE_MAX_USD:,.0f} per GPU")
