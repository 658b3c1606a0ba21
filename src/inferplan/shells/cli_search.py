"""``inferplan search``: the cheapest deployment that meets a service target.

Flags become one ``SearchRequest``; the library's ``search`` does the work; this module renders the
ranked deployments (a list layout that keeps every id whole in 100 columns), the failed families and
the cost/interactivity front, with a progress bar on stderr for sweeps longer than a second.
"""

import math
import time
from pathlib import Path
from typing import Optional

import typer

from inferplan.errors import InferplanError
from inferplan.shells.cli_measurements import DbOpt, user_catalog
from inferplan.shells.cli_flags import ModelArgument, model_given
from inferplan.shells.cli_common import JsonOpt, console, emit_json, err_console, fail, fail_naming, flags_in, split_list, TokensOpt

# the request's domain fields -> the flag a user typed
SEARCH_FLAGS = {
    "models": "--model", "users": "--users", "workload": "--workload", "request_rate_per_s": "--request-rate",
    "input_len": "--input-len", "output_len": "--output-len", "trace": "--trace", "systems": "--systems",
    "accelerators": "--accelerators", "engines": "--engines", "quantizations": "--quantizations",
    "kv_cache_dtypes": "--kv-cache-dtypes", "vendors": "--vendors", "statuses": "--status",
    "form_factors": "--form-factors", "max_gpus": "--max-gpus", "max_capex_usd": "--max-capex",
    "max_power_w": "--max-power", "pricing": "--rent/--buy", "gpu_price_usd": "--gpu-price-usd", "objective": "--objective", "top": "--top",
    "targets.ttft_p50_s": "--ttft-p50", "targets.ttft_p95_s": "--ttft-p95", "targets.ttft_p99_s": "--ttft-p99",
    "targets.tpot_p95_s": "--tpot-p95", "targets.min_output_tokens_per_s_per_user": "--min-tokens-per-s-per-user",
    "arrival": "--arrival", "peak_to_average": "--peak-to-average", "burst_period_s": "--burst-period",
    "input_tokens_scv": "--input-scv", "output_tokens_scv": "--output-scv", "lengths": "--lengths", "targets.e2e_p95_s": "--e2e-p95", "targets.max_utilisation": "--max-utilisation", "max_utilisation": "--max-utilisation",
    "prefix_cache_hit_rate": "--prefix-cache-hit-rate",
    "targets": "--tpot-p95/--min-tokens-per-s-per-user",
}

NOTE_SETTINGS = ("max_utilisation", "prefix_cache_hit_rate")


def search_cmd(
    model_argument: Optional[str] = ModelArgument,
    model: Optional[str] = typer.Option(None, "--model", help="Catalogue model id or alias (or the command's argument)."),
    models: Optional[str] = typer.Option(None, "--models", help="Several models, comma-separated (instead of --model)."),
    users: Optional[int] = typer.Option(None, "--users", help="Users to carry (with --workload)."),
    workload: Optional[str] = typer.Option(None, "--workload", help="Workload preset for --users (default chat-seat)."),
    request_rate_per_s: Optional[float] = typer.Option(None, "--request-rate", help="Requests per second to carry (with --input-len, --output-len)."),
    input_len: Optional[int] = TokensOpt(None, "--input-len", help="Prompt tokens per request."),
    output_len: Optional[int] = TokensOpt(None, "--output-len", help="Generated tokens per request."),
    trace: Optional[str] = typer.Option(None, "--trace", help="CSV/JSONL trace (gzip, xz, bzip2 or zip too): arrival time, input tokens, output tokens; the Azure, BurstGPT and Mooncake traces' columns are read as published."),
    arrival: Optional[str] = typer.Option(None, "--arrival", help="poisson | bursty: how the users' or the rate's requests arrive (default poisson)."),
    peak_to_average: Optional[float] = typer.Option(None, "--peak-to-average", help="Bursty: busy-spell rate over the mean (above 1)."),
    burst_period_s: Optional[float] = typer.Option(None, "--burst-period", help="Bursty: mean seconds of one busy and one quiet spell (default 60)."),
    input_scv: Optional[float] = typer.Option(None, "--input-scv", help="Spread of prompt lengths: squared coefficient of variation (default 0: all the mean)."),
    output_scv: Optional[float] = typer.Option(None, "--output-scv", help="Spread of output lengths: squared coefficient of variation (default 0)."),
    lengths: Optional[str] = typer.Option(None, "--lengths", help="lognormal | uniform: how spread lengths are drawn (uniform: a benchmark's random dataset, SCV at most 1/3; default lognormal)."),
    ttft_p50_s: Optional[float] = typer.Option(None, "--ttft-p50", help="Time to first token, median, seconds."),
    ttft_p95_s: Optional[float] = typer.Option(None, "--ttft-p95", help="Time to first token, 95th percentile, seconds."),
    ttft_p99_s: Optional[float] = typer.Option(None, "--ttft-p99", help="Time to first token, 99th percentile, seconds."),
    tpot_p95_s: Optional[float] = typer.Option(None, "--tpot-p95", help="Time per output token, 95th percentile, seconds."),
    min_tps: Optional[float] = typer.Option(None, "--min-tokens-per-s-per-user", help="Output tokens/s each user gets at least."),
    e2e_p95_s: Optional[float] = typer.Option(None, "--e2e-p95", help="End-to-end request latency, 95th percentile, seconds."),
    max_utilisation: Optional[float] = typer.Option(None, "--max-utilisation", help="Busiest instance's load factor at most, above 0 and at most 1 (with no TTFT target an assumed default applies, said in the notes)."),
    prefix_cache_hit_rate: Optional[float] = typer.Option(None, "--prefix-cache-hit-rate", help="Share of prompt tokens served from the prefix cache, 0 to 1 (default: the --workload preset's with --users, else 0)."),
    systems: Optional[str] = typer.Option(None, "--systems", help="Only these systems (comma-separated ids)."),
    accelerators: Optional[str] = typer.Option(None, "--accelerators", help="Only N of these accelerators, rented, or bought at --gpu-price-usd (comma-separated)."),
    engines: Optional[str] = typer.Option(None, "--engines", help="Only these engines (comma-separated): vllm, sglang, ktransformers, trtllm, llamacpp, mlx."),
    quantizations: Optional[str] = typer.Option(None, "--quantizations", help="Weight formats to try (default: the model's builds)."),
    kv_cache_dtypes: Optional[str] = typer.Option(None, "--kv-cache-dtypes", help="KV-cache types to try (default: auto,fp8)."),
    vendors: Optional[str] = typer.Option(None, "--vendors", help="Only these accelerator vendors (nvidia, amd, ...)."),
    status: Optional[str] = typer.Option(None, "--status", help="Catalogue status of the platforms (default shipping)."),
    form_factors: Optional[str] = typer.Option(None, "--form-factors", help="workstation, node, rack."),
    max_gpus: Optional[int] = typer.Option(None, "--max-gpus", help="At most this many GPUs in all."),
    max_capex_usd: Optional[float] = typer.Option(None, "--max-capex", help="At most this purchase price, USD."),
    max_power_w: Optional[float] = typer.Option(None, "--max-power", help="At most this power draw, W."),
    rent: bool = typer.Option(False, "--rent", help="Price renting only."),
    buy: bool = typer.Option(False, "--buy", help="Price buying only."),
    gpu_price_usd: Optional[str] = typer.Option(None, "--gpu-price-usd", help="Your price per bare GPU, USD, the host added as the catalogue prices it: id=USD,... (h100-sxm=25000), or one number with one --accelerators."),
    objective: str = typer.Option("usd-per-mtok", "--objective", help="usd-per-mtok | monthly | capex | gpus | power"),
    top: int = typer.Option(10, "--top", help="Deployments to list."),
    no_speculative: bool = typer.Option(False, "--no-speculative", help="Do not try speculative decoding."),
    no_disaggregated: bool = typer.Option(False, "--no-disaggregated", help="Do not try separate prefill and decode pools."),
    show_deploy: bool = typer.Option(False, "--deploy", help="Print each deployment's launch command."),
    db: Optional[Path] = DbOpt,
    as_json: bool = JsonOpt,
) -> None:
    """The cheapest deployment that meets a service target: what to buy or rent, how to run it."""
    from inferplan.search.request import SearchRequest
    from inferplan.search.budget import Budget
    from inferplan.search.run import search

    model = model_given(model_argument, model, required=False)
    if model and models:
        fail("--model and --models: give one (--models takes a comma-separated list)", field="--model")
    if rent and buy:
        fail("--rent and --buy: give one, or neither to price both", field="--rent/--buy", allowed="--rent | --buy | neither")
    names = split_list(models, "--models") if models else ([model] if model else None)
    flags = {**SEARCH_FLAGS, "models": "--models"} if models else SEARCH_FLAGS  # the model flag as typed
    if not names:
        fail("--model: name a model to search for", field="--model",
             allowed="a model id, as the argument or --model, or several as --models")
    fields = dict(
        models=names, users=users, workload=workload, request_rate_per_s=request_rate_per_s, input_len=input_len,
        output_len=output_len, trace=trace, arrival=arrival.strip().lower() if arrival else None,
        peak_to_average=peak_to_average, burst_period_s=burst_period_s, input_tokens_scv=input_scv,
        output_tokens_scv=output_scv, lengths=lengths.strip().lower() if lengths else None,
        systems=split_list(systems, "--systems"),
        accelerators=split_list(accelerators, "--accelerators"), engines=split_list(engines, "--engines"),
        quantizations=split_list(quantizations, "--quantizations"), kv_cache_dtypes=split_list(kv_cache_dtypes, "--kv-cache-dtypes"),
        vendors=split_list(vendors, "--vendors"), statuses=split_list(status, "--status"),
        form_factors=split_list(form_factors, "--form-factors"), max_gpus=max_gpus, max_capex_usd=max_capex_usd,
        max_power_w=max_power_w, pricing="rent" if rent else "buy" if buy else "both", objective=objective, top=top,
        speculative=not no_speculative, disaggregated=not no_disaggregated, prefix_cache_hit_rate=prefix_cache_hit_rate,
        gpu_price_usd=gpu_price_usd)
    targets = dict(ttft_p50_s=ttft_p50_s, ttft_p95_s=ttft_p95_s, ttft_p99_s=ttft_p99_s, tpot_p95_s=tpot_p95_s,
                   min_output_tokens_per_s_per_user=min_tps, e2e_p95_s=e2e_p95_s, max_utilisation=max_utilisation)
    request = _checked(lambda: SearchRequest(**{k: v for k, v in fields.items() if v is not None},
                                             targets={k: v for k, v in targets.items() if v is not None}),
                       own=flags, flags=flags)
    catalog = user_catalog(db)  # your stored runs as measured profiles (measurements import); None: the shipped one
    # no wall-clock limit at a terminal: the same search on a busier machine must not fail where it passed
    # on an idle one, and the person watching the progress bar stops it with Ctrl-C (the API keeps its limit)
    unlimited = Budget(deadline_s=math.inf)
    if as_json:
        result = _checked(lambda: search(request, catalog, budget=unlimited), flags=flags)
        emit_json({"results": [r.model_dump(mode="json") for r in result.results],
                   "infeasible": [x.model_dump(mode="json") for x in result.infeasible],
                   "candidates": result.candidates, "elapsed_s": result.elapsed_s,
                   "pareto": [p.model_dump(mode="json") for p in result.pareto],
                   "api": [a.model_dump(mode="json") for a in result.api],
                   **result.model_dump(mode="json", include={"cells", "objective", "targets", "load", "notes",
                                                             "near_misses", "near_miss_margin",
                                                             "infeasible_summary"})})
        return
    with _LateProgress() as progress:
        result = _checked(lambda: search(request, catalog, progress=progress, budget=unlimited), flags=flags)
    from inferplan.shells.render_search import print_search

    said = {k: SEARCH_FLAGS[k] for k in NOTE_SETTINGS}  # the settings a note tells the user to change, as flags
    print_search(console, result.model_copy(update={"notes": tuple(flags_in(n, said) for n in result.notes)}),
                 show_deploy=show_deploy, flags={k.removeprefix("targets."): v for k, v in SEARCH_FLAGS.items()},
                 next_command=lambda changes: search_command(request, changes))


def search_command(request, changes: dict) -> str:
    """The ``inferplan search`` command of ``request`` with ``changes`` (request fields; None: left out, a
    price of None: ``USD``, yours to state), every setting the request states as its flag."""
    import shlex

    fields = {**request.model_dump(exclude_defaults=True, exclude_none=True), **changes}
    targets = fields.pop("targets", {}) or {}
    models = fields.pop("models")
    words = ["inferplan", "search", *(["--model", models[0]] if len(models) == 1 else ["--models", ",".join(models)])]
    for key, value in [*fields.items(), *((f"targets.{k}", v) for k, v in targets.items())]:
        if value is None:
            continue
        if key == "pricing":
            words += [] if value == "both" else [f"--{value}"]
        elif key in ("speculative", "disaggregated"):
            words += [] if value else [f"--no-{key}"]
        elif isinstance(value, dict):
            words += [SEARCH_FLAGS[key], ",".join(f"{k}={'USD' if v is None else f'{v:.12g}'}" for k, v in value.items())]
        else:
            words += [SEARCH_FLAGS[key], ",".join(map(str, value)) if isinstance(value, (list, tuple)) else f"{value:.12g}"
                      if isinstance(value, float) else str(value)]
    return " ".join(shlex.quote(w) for w in words)


def _checked(build, *, own: dict[str, str] | None = None, flags: dict[str, str] = SEARCH_FLAGS):
    """Run ``build``; a library or validation error becomes one line naming the flag (exit 2), the inputs
    its message names said as flags (``fail_naming``); ``own``: the request's own checks, whose every
    field is a flag wherever it stands; ``flags``: each field's flag as the command was given it."""
    from pydantic import ValidationError  # loaded already by whatever raises it

    from inferplan.shells.pydantic_errors import allowed_by, error_message

    try:
        return build()
    except InferplanError as exc:
        field = exc.field or ""
        fail_naming(flags, exc, flags.get(field, flags.get(field.split(".")[0], exc.field)), own=own)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = ".".join(str(p) for p in first["loc"])
        flag = flags.get(loc, flags.get(loc.split(".")[0], loc))
        message = error_message(first)
        fail(f"{flag}: {message}" if loc else message, field=flag or None, allowed=allowed_by(first), detail=message)


class _LateProgress:
    """A progress bar on stderr that appears only once a sweep has run for a second."""

    def __init__(self):
        self.start, self.bar, self.task, self.stage = time.perf_counter(), None, None, None

    def __enter__(self):
        return self

    def __call__(self, done: int, total: int, stage: str) -> None:
        if self.bar is None:
            if time.perf_counter() - self.start < 1.0:
                return
            from rich.progress import Progress

            self.bar = Progress(console=err_console, transient=True)
            self.bar.start()
        if stage != self.stage:  # each stage its own line: modelling the cells, then simulating the picks
            self.stage, self.task = stage, self.bar.add_task(stage, total=total)
        self.bar.update(self.task, completed=done, total=total)

    def __exit__(self, *exc):
        if self.bar is not None:
            self.bar.stop()
