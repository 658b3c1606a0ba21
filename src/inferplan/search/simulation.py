"""One question for ``inferplan simulate`` and ``POST /api/simulate``: a deployment under a load,
simulated and approximated side by side."""

from __future__ import annotations

import math
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from inferplan.catalog.loader import Catalog, load_catalog
from inferplan.economics.workloads import WorkloadOverrides, resolve_workload
from inferplan.errors import InvalidScenarioError
from inferplan.inputs import Input
from inferplan.inputs.deployment import Deployment
from inferplan.inputs.workload import Workload
from inferplan.search.arrivals import BURSTY_NEEDS_A_PEAK, BURSTY_PEAK_ALLOWED, DEFAULT_BURST_PERIOD_S, Load, plural, rate_text
from inferplan.memory.extensible import pool_instance, pool_sized
from inferplan.memory.pool_channel import channel_note, stated_on_fallback, with_channel
from inferplan.memory.fit import placed_deployment, plan_memory
from inferplan.memory.hardware import build_note, resolve_hardware
from inferplan.memory.layout import instance_gpus
from inferplan.memory.state_pool import without_drafts
from inferplan.search.handover import link_bytes_per_s, link_name
from inferplan.search.load import trace_lengths
from inferplan.performance.notes import graphs_note
from inferplan.search.prefix_cache import prefix_cache_text
from inferplan.search.queueing import approximate
from inferplan.search.request import SearchRequest
from inferplan.search.tail_types import TailLatency
from inferplan.search.service import ServiceCurve, service_curve
from inferplan.search.simulate_pools import simulate_pools
from inferplan.search.simulate import MAX_REPLICAS, MAX_REQUESTS, SIM_WORK_LIMIT, Check, SimulationResult, simulate
from inferplan.search.trace import Trace, row_field

LOAD_SOURCES = ("request_rate_per_s", "users", "clients", "trace")
# what a trace brings itself, so the query leaves it at its default beside one
TRACE_BRINGS = ("arrival", "peak_to_average", "burst_period_s", "input_tokens_scv", "output_tokens_scv", "lengths")
LOAD_ALLOWED = {"peak_to_average": "1, or arrival bursty", "burst_period_s": "arrival bursty",
                "lengths": "lognormal, or spreads (SCV) of at most 1/3"}


def _stated(model: BaseModel, names: tuple[str, ...]) -> list[str]:
    """Those of ``names`` set to other than their default on ``model`` (a setting at its default is no setting)."""
    return [n for n in names if getattr(model, n) != type(model).model_fields[n].default]


def _as_searched(name: str) -> str | None:
    """A load key's description, as a search takes the same key."""
    return SearchRequest.model_fields[name].description


class SimulationQuery(Input):
    """A deployment, the requests' shape, and one way of saying how many arrive."""

    deployment: Deployment = Field(description="the engine instance simulated (with prefill_instances: the decode one)")
    workload: Workload = Field(Workload(), description="input_len / output_len: the mean lengths of a rate or clients "
                               "(concurrency is unused)")
    request_rate_per_s: float | None = Field(None, gt=0, le=1e6, description="the load as mean requests per second")
    users: int | None = Field(None, ge=1, le=100_000_000, description="users of workload_preset: its busiest-hour rate "
                              "per user and its lengths")
    workload_preset: str | None = Field(None, description="a workload preset id for users (chat-seat, agent-worker ...); "
                                        "default chat-seat")
    clients: int | None = Field(None, ge=1, le=1_000_000, description="a closed loop of this many clients")
    arrival: Literal["poisson", "bursty"] = Field("poisson", description=_as_searched("arrival"))
    peak_to_average: float = Field(1.0, ge=1, le=100, description=_as_searched("peak_to_average"))
    burst_period_s: float = Field(DEFAULT_BURST_PERIOD_S, gt=0, le=1e6, description=_as_searched("burst_period_s"))
    input_tokens_scv: float = Field(0.0, ge=0, le=100, description=_as_searched("input_tokens_scv"))
    output_tokens_scv: float = Field(0.0, ge=0, le=100, description=_as_searched("output_tokens_scv"))
    lengths: Literal["lognormal", "uniform"] = Field(
        "lognormal", description="how lengths spread around their means: log-normal, or uniform (a benchmark's random "
        "dataset, e.g. SGLang bench_serving's at its default range ratio: SCV 1/3)")
    requests: int = Field(20_000, ge=1, le=MAX_REQUESTS, description="requests simulated")
    seed: int = Field(0, ge=0, le=2**32 - 1, description="the random draws' seed: one seed, one answer")
    replicas: int = Field(1, ge=1, le=MAX_REPLICAS, description="instances of the deployment sharing the load")
    router: Literal["least-loaded", "round-robin"] = Field("least-loaded", description="how requests are spread over "
                                                           "the replicas")
    prefill_instances: int | None = Field(None, ge=1, le=MAX_REPLICAS, description=(
        "separate prefill and decode pools: this many prefill instances ahead of the deployment, which is then "
        "the decode instance (replicas: decode instances); on a system the prefill GPUs come out of it and each "
        "decode instance runs on the deployment's gpus, else on its share of the rest"))
    prefill_tensor_parallel_size: int | None = Field(None, ge=1, le=1024, description=(
        "with prefill_instances: the prefill instance's tensor parallel size (default the deployment's)"))
    kv_transfer_s: float | None = Field(None, ge=0, le=3600, description=(
        "with prefill_instances: one request's KV hand-over (default: its KV cache over the link joining the pools)"))

    @model_validator(mode="after")
    def _one_load(self) -> "SimulationQuery":
        # refused as the library's error, not pydantic's, so that each shell can name the field at fault
        given = [k for k in ("request_rate_per_s", "users", "clients") if getattr(self, k) is not None]
        if len(given) > 1:
            raise InvalidScenarioError(
                f"give one of request_rate_per_s, users or clients, not {' and '.join(given)}",
                field=given[1], allowed="one of request_rate_per_s, users, clients")
        if self.users is None and self.workload_preset is not None:
            raise InvalidScenarioError("a workload preset goes with users", field="workload_preset",
                                       allowed="leave it out, or give users")
        if self.prefill_instances is None and (pool := _stated(self, ("prefill_tensor_parallel_size", "kv_transfer_s"))):
            raise InvalidScenarioError("a prefill pool's setting goes with prefill_instances", field=pool[0],
                                       allowed="leave it out, or give prefill_instances")
        if self.prefill_instances is not None and self.clients is not None:
            raise InvalidScenarioError("separate pools are simulated under open arrivals: a rate, users or a trace",
                                       field="clients", allowed="leave it out with prefill_instances")
        if self.prefill_instances is not None and self.router != "least-loaded":
            raise InvalidScenarioError("separate pools route each request to the least-loaded instance", field="router",
                                       allowed="least-loaded")
        if self.users is not None and (lengths := _stated(self.workload, ("input_len", "output_len"))):
            raise InvalidScenarioError("users take their token counts from the workload preset",
                                       field=f"workload.{lengths[0]}",
                                       allowed="leave it out, or give request_rate_per_s with input_len and output_len")
        return self

    def preset(self) -> str:
        """The workload preset users are planned on: the one named, else the default (chat-seat), as search does."""
        return self.workload_preset or WorkloadOverrides.model_fields["preset"].default


class PoolsSimulated(BaseModel):
    model_config = ConfigDict(frozen=True, defer_build=True)

    prefill_instances: int
    prefill_tensor_parallel_size: int
    decode_instances: int
    kv_transfer_s: float
    kv_transfer_link: str | None  # None: the hand-over time was given


class SimulationReport(BaseModel):
    model_config = ConfigDict(frozen=True, defer_build=True)

    load: str  # the load as simulated
    request_rate_per_s: float | None
    input_tokens: float
    output_tokens: float
    slots: int  # running sequences one replica holds
    simulation: SimulationResult
    approximation: TailLatency | None  # None: separate pools, which the approximation prices only inside a search
    pools: PoolsSimulated | None = None  # separate prefill and decode pools, as simulated
    prefix_cache_hit_rate: float = 0.0  # share of prompt tokens taken as served from the prefix cache
    notes: tuple[str, ...] = ()  # assumptions the figures rest on (a preset's prefix-cache hit rate)


def _load_and_workload(q: SimulationQuery, catalog: Catalog, trace: Trace | None) -> tuple[Load, Workload]:
    w = q.workload
    if trace is not None:
        if any(getattr(q, k) is not None for k in ("request_rate_per_s", "users", "clients")):
            raise InvalidScenarioError("a trace brings its own arrivals: leave out the rate, users and clients",
                                       field="trace", allowed="a trace alone")
        stated = _stated(q, TRACE_BRINGS) + [f"workload.{n}" for n in _stated(w, ("input_len", "output_len"))]
        if stated:
            raise InvalidScenarioError("a trace brings its own timing and token counts", field=stated[0],
                                       allowed="leave it out with a trace")
        load = Load.from_trace(trace)
        input_len, output_len = trace_lengths(load)
        return load, w.model_copy(update={"input_len": input_len, "output_len": output_len})
    shape = dict(input_tokens=w.input_len, output_tokens=w.output_len, lengths=q.lengths, input_tokens_scv=q.input_tokens_scv,
                 output_tokens_scv=q.output_tokens_scv)
    if q.clients is not None:
        if q.arrival != "poisson" or q.peak_to_average != 1.0:
            raise InvalidScenarioError("a closed loop has no arrival process of its own", field="arrival",
                                       allowed="poisson (the default) with clients")
        return _load(arrival="closed", clients=q.clients, closed_loop_requests=q.requests, **shape), w
    rate = q.request_rate_per_s
    if q.users is not None:
        profile = _preset(catalog, q.preset())
        rate = q.users * profile.peak_output_tokens_per_s / profile.output_tokens_per_request
        w = w.model_copy(update={"input_len": profile.input_tokens_per_request,
                                 "output_len": profile.output_tokens_per_request,
                                 "prefix_cache_hit_rate": w.prefix_cache_hit_rate if "prefix_cache_hit_rate" in
                                 w.model_fields_set else profile.cache_hit_rate})
        shape.update(input_tokens=w.input_len, output_tokens=w.output_len)
    if rate is None:
        raise InvalidScenarioError("no load: give a request rate, users (of a workload preset), clients or a trace",
                                   field="request_rate_per_s", allowed=", ".join(LOAD_SOURCES))
    return _load(arrival=q.arrival, request_rate_per_s=rate, peak_to_average=q.peak_to_average,
                 burst_period_s=q.burst_period_s, open_loop_requests=q.requests, **shape), w


def _load(**fields) -> Load:
    """The ``Load`` of these fields; one that contradicts itself (a burst setting on Poisson arrivals,
    a uniform spread past an SCV of 1/3) is refused naming the query's field its message starts with."""
    try:
        return Load(**fields)
    except ValidationError as exc:
        message = exc.errors()[0]["msg"].removeprefix("Value error, ")
        field, _, said = message.partition(": ")
        known = field in SimulationQuery.model_fields
        allowed = BURSTY_PEAK_ALLOWED if said == BURSTY_NEEDS_A_PEAK else LOAD_ALLOWED.get(field)
        raise InvalidScenarioError(said if known else message, field=field if known else None,
                                   allowed=allowed) from None


def _preset(catalog: Catalog, preset: str):
    """The workload preset ``workload_preset`` names; an unknown one is refused under that field."""
    try:
        return resolve_workload(catalog, WorkloadOverrides(preset=preset))
    except InvalidScenarioError as exc:
        raise InvalidScenarioError(str(exc), field="workload_preset", allowed=exc.allowed) from None


def _describe(load: Load, replicas: int, requests: int) -> str:
    spread = f" over {replicas} replicas" if replicas > 1 else ""
    if load.arrival == "closed":
        return f"closed loop of {plural(load.clients, 'client')}{spread}"
    if load.arrival == "trace":
        n = len(load.trace)
        run = (f", replayed {requests / n:,.3g} times end to end" if requests > n
               else f", its first {requests:,}" if requests < n else "")
        return f"trace of {plural(n, 'request')} ({rate_text(load.request_rate_per_s)}/s){run}{spread}"
    kind = f"bursty, peak x{load.peak_to_average:g}" if load.arrival == "bursty" else load.arrival
    return f"{rate_text(load.request_rate_per_s)} requests/s ({kind}){spread}"


def simulate_deployment(q: SimulationQuery, catalog: Catalog | None = None, *, trace: Trace | None = None,
                        check: Check | None = None) -> SimulationReport:
    """Simulate ``q`` (its trace, when given) and approximate it beside; ``check`` is called as the simulation runs
    (``simulate.py``) and raises to stop it."""
    catalog = catalog or load_catalog()
    load, w = _load_and_workload(q, catalog, trace)
    if q.prefill_instances is not None:
        q = q.model_copy(update={"deployment": _decode_side(q, catalog)})
    if trace is not None:
        q = q.model_copy(update={"deployment": _sized_for_trace(q.deployment, trace, catalog)})
    # a pool's instance is sized as its KV connector lets the engine size it (``pool_sized``)
    curve = service_curve(q.deployment if q.prefill_instances is None else pool_sized(catalog, q.deployment, "decode"),
                          w, catalog)
    _check_work(q, curve)
    if q.prefill_instances is not None:
        return _pools_report(q, catalog, load, w, curve, check)
    sim = simulate(curve, load, requests=q.requests, seed=q.seed, replicas=q.replicas, router=q.router, check=check)
    approx = approximate(curve, load, q.replicas)
    cache = _cache(q, w, catalog)
    closed = (CLOSED_LOOP_NOTE + (IN_STEP_NOTE if sim.in_step else "")) if load.arrival == "closed" else None
    notes = cache.pop("notes") + tuple(n for n in (closed, overload_note(approx, q.replicas)) if n)
    return SimulationReport(load=_describe(load, q.replicas, q.requests), request_rate_per_s=load.request_rate_per_s,
                            input_tokens=load.input_tokens, output_tokens=load.output_tokens, slots=curve.slots,
                            simulation=sim, approximation=approx, notes=notes, **cache)


# what a simulated closed loop assumes, beside the approximation's steady state (a perf estimate's too)
CLOSED_LOOP_NOTE = ("closed loop: the clients send their first requests together, as benchmark clients do, and each "
                    "its next when its last ends (with fixed lengths they can stay in step); the approximation, like a "
                    "perf estimate, is the steady state: requests arrive spread out, each newcomer joining a running batch")
# a closed loop simulated in step: a served one drifts out of it (``measurements/tails.IN_STEP_NOTE`` says how)
IN_STEP_NOTE = ("; these clients stayed in step, each first token waiting on every prompt of its round, where a "
                "served run's drift apart (the engine steps as soon as one request has reached it, its server takes "
                "requests sent together one at a time): the approximation is the figure for a served run")


def overload_note(approx: TailLatency, replicas: int) -> str | None:
    """For a load past what the replicas serve at a full batch: the fewest replicas that keep up with it
    (the offered load over one replica's capacity, rounded up), the next step from a queue that only grows."""
    if approx.stable or not 1 < approx.utilisation < float("inf"):
        return None
    needed = math.ceil(round(approx.utilisation * replicas, 9))
    serve = "serves" if replicas == 1 else "serve"
    return (f"overloaded: the load is {approx.utilisation:,.3g} × what {plural(replicas, 'replica')} {serve} at a "
            "full batch, so the queue grows without end and the simulated waits are only how long this run lasted; "
            f"at least {needed:,} replicas keep up with it (more to meet a latency target: a search finds the "
            "cheapest deployment that meets one)")


def _cache(q: SimulationQuery, w: Workload, catalog: Catalog) -> dict:
    """The prefix-cache share simulated, and the header line that says it (``prefix_cache_text``); for an
    eager launch, the note that its speeds still assume CUDA graphs (``graphs_note``); for a model named by an
    Ollama tag, the build the tag selected (``build_note``)."""
    stated = "prefix_cache_hit_rate" in q.workload.model_fields_set
    text = prefix_cache_text(w.prefix_cache_hit_rate, preset=q.preset() if q.users is not None else None, stated=stated)
    d = placed_deployment(q.deployment, catalog)  # an Ollama tag's build: where --fit places its weights
    eager = graphs_note(catalog.engine(d.engine), True) if d.enforce_eager else None
    return {"prefix_cache_hit_rate": w.prefix_cache_hit_rate,
            "notes": tuple(n for n in (build_note(catalog, d), text, eager) if n)}


def _sized_for_trace(d: Deployment, trace: Trace, catalog: Catalog) -> Deployment:
    """``d`` with a context that holds the trace's longest request (as the search sizes a cell for
    it), where ``d`` states none; a request longer than the context it states, or than the model's,
    is refused naming its row."""
    lengths = [i + o for i, o in zip(trace.input_tokens, trace.output_tokens)]
    row = max(range(len(lengths)), key=lengths.__getitem__)
    sized = d if d.max_model_len is not None else d.model_copy(update={"max_model_len": lengths[row]})
    try:
        context = plan_memory(sized, catalog).result.max_model_len
    except InvalidScenarioError as exc:
        if d.max_model_len is not None or exc.field != "max_model_len":
            raise
        context = 0
    if lengths[row] > context:
        held = f"the {context:,}-token context" if context else "the model's context"
        raise InvalidScenarioError(
            f"trace row {row + 1} asks for {trace.input_tokens[row]:,} + {trace.output_tokens[row]:,} tokens, more than {held} "
            "the deployment is planned at", field=row_field(row, "input_tokens"),
            allowed=f"input + output at most {context:,} tokens" if context else "a request the model's context holds")
    return sized


def _check_work(q: SimulationQuery, curve: ServiceCurve) -> None:
    engines = q.replicas * curve.data_parallel + (q.prefill_instances or 0)
    if q.requests * engines > SIM_WORK_LIMIT:
        most = max(SIM_WORK_LIMIT // engines, 1)
        raise InvalidScenarioError(
            f"{q.requests:,} requests over {engines:,} engines is more than one simulation runs "
            f"(requests × engines at most {SIM_WORK_LIMIT:,})", field="requests",
            allowed=f"at most {most:,} requests at {engines:,} engines, or fewer replicas")


def _prefill_gpus(q: SimulationQuery) -> int:
    """GPUs of one prefill instance: the decode instance's pipeline at ``prefill_tensor_parallel_size``."""
    return (q.prefill_tensor_parallel_size or q.deployment.tensor_parallel_size) * q.deployment.pipeline_parallel_size


def _decode_side(q: SimulationQuery, catalog: Catalog) -> Deployment:
    """Separate pools' decode instance. On a system, the prefill pool's GPUs come out of it: each of the
    ``replicas`` decode instances runs on the GPUs the deployment states, else on its share of those the
    prefill pool leaves (whole copies of its layout); pools the system does not hold are refused naming
    ``gpus``. On GPUs named by count, the deployment as stated."""
    d = q.deployment
    if d.system is None:
        return d
    system = catalog.system(d.system, "system")
    prefill = q.prefill_instances * _prefill_gpus(q)
    instance = instance_gpus(d)
    share = (system.accelerator_count - prefill) // q.replicas
    gpus = d.gpus or share - share % instance
    if gpus < 1 or prefill + q.replicas * gpus > system.accelerator_count:
        decode = f"{plural(q.replicas, 'decode instance')} of {plural(gpus or instance, 'GPU')}"
        raise InvalidScenarioError(
            f"{plural(q.prefill_instances, 'prefill instance')} of {plural(_prefill_gpus(q), 'GPU')} and {decode} take "
            f"{prefill + q.replicas * (gpus or instance)} GPUs; {system.name} has {system.accelerator_count}",
            field="gpus", allowed=(f"at most {share} GPUs per decode instance beside the prefill pool" if share >= 1 else
                                   f"fewer prefill instances, or pools within {system.accelerator_count} GPUs")
            + f"; pools over several systems: name the GPU ({system.accelerator}) in place of the system")
    return d.model_copy(update={"gpus": gpus})


def _pools_report(q: SimulationQuery, catalog: Catalog, load: Load, w: Workload, decode: ServiceCurve,
                  check: Check | None) -> SimulationReport:
    """Separate pools: the deployment is the decode instance (``_decode_side``), ``prefill_instances`` of
    its layout at ``prefill_tensor_parallel_size`` run the prompts, and the KV cache crosses the link
    between them, priced as the search prices it (``handover.py``: both pools' GPUs). A prefill instance drafts
    nothing (drafts act in decode), so it runs without the decode instance's draft tokens, method and draft
    weights, as the search's prefill layouts do (``evaluate.prefill_partners``)."""
    d = q.deployment
    tp = q.prefill_tensor_parallel_size or d.tensor_parallel_size
    pre_d = without_drafts(d).model_copy(update={
        "tensor_parallel_size": tp, "gpus": tp * d.pipeline_parallel_size, "data_parallel_size": None,
        "enable_expert_parallel": False, "max_num_seqs": None})
    prefill = service_curve(pool_sized(catalog, pre_d, "prefill"), w.model_copy(update={"speculative_tokens": 0}), catalog)
    link = None
    transfer = q.kv_transfer_s
    if transfer is None:
        hw = resolve_hardware(catalog, d)
        sending = min(tp * d.pipeline_parallel_size, hw.gpus)  # the narrower instance's GPUs, as the search prices it
        gpus = q.prefill_instances * tp * d.pipeline_parallel_size + q.replicas * hw.gpus
        bw = float(link_bytes_per_s(hw.accel, hw.system, hw.domain_gpus, gpus, sending))
        # the planned prompt's KV cache, as the search prices it
        kv = plan_memory(d, catalog).result.kv_cache_bytes_per_token * w.input_len
        if not bw > 0:
            raise InvalidScenarioError("no link between the pools is known for this hardware", field="kv_transfer_s",
                                       allowed="a hand-over time in seconds")
        transfer, link = kv / bw, link_name(hw.accel, hw.system, hw.domain_gpus, gpus)
    notes = _pool_notes(q, catalog, w, decode, link)
    sim = simulate_pools(prefill, decode, load, requests=q.requests, seed=q.seed, prefill_instances=q.prefill_instances,
                         decode_instances=q.replicas, transfer_s=transfer, check=check)
    pools = PoolsSimulated(prefill_instances=q.prefill_instances, prefill_tensor_parallel_size=tp,
                           decode_instances=q.replicas, kv_transfer_s=transfer, kv_transfer_link=link)
    described = _describe(load, q.replicas, q.requests).replace(
        f" over {q.replicas} replicas", "") + f" on {q.prefill_instances} prefill + {q.replicas} decode instances"
    return SimulationReport(load=described, request_rate_per_s=load.request_rate_per_s, input_tokens=load.input_tokens,
                            output_tokens=load.output_tokens, slots=decode.slots, simulation=sim, approximation=None,
                            **_with_notes(_cache(q, w, catalog), notes), pools=pools)


def _with_notes(cache: dict, notes: tuple[str, ...]) -> dict:
    return {**cache, "notes": cache["notes"] + notes}


def _pool_notes(q: SimulationQuery, catalog: Catalog, w: Workload, decode: ServiceCurve, link: str | None) -> tuple[str, ...]:
    """The decode pool as planned on the runtime its platform comes as, beside the KV cache and slots the other
    runtime keeps (``pool_channel.py``); and where the switch is stated on there, that the hand-over priced on
    ``link`` within a host then runs over TCP."""
    d = q.deployment
    other = with_channel(catalog, d, "decode")
    if other is not None:
        return (channel_note(catalog, d, "decode", (decode.slots, service_curve(other, w, catalog).slots)),)
    stated = stated_on_fallback(catalog, d, "decode")
    hw = resolve_hardware(catalog, d)
    if stated is None or link is None or hw.accel.scale_up is None or link != hw.accel.scale_up.link:
        return ()
    return (f"decode pool: {stated.stated_on_said(pool_instance(catalog, d, 'decode').kv_connector)}, but the hand-over "
            f"here is priced on {link}; state --kv-transfer-s for the time it takes on this host ({', '.join(stated.sources)})",)
