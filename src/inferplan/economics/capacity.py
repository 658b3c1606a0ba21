"""How many users a platform carries: replica cells packed into a loadout (one system), each
run at the highest concurrency that still meets the workload's per-user speed target.

Supported users are the tighter of three limits (the seed simulator's): token throughput at the
service target (output and input tokens), the engine's concurrency (running-sequence slots) and
per-request memory (the KV cache at the request shape). Each user keeps ``peak output rate / the
rate one request delivers`` requests in flight in the busiest hour (Little's law: a request holds
its slot for its prompt and its decode).
"""

from __future__ import annotations

import math

from pydantic import BaseModel, ConfigDict

from inferplan.catalog.loader import Catalog
from inferplan.catalog.memo import per_catalog
from inferplan.catalog.schema import System
from inferplan.economics.ollama_hosts import ollama_servers
from inferplan.economics.workloads import WorkloadProfile
from inferplan.errors import InvalidScenarioError
from inferplan.inputs.deployment import Deployment
from inferplan.inputs.workload import DecodePoolWorkload, Workload
from inferplan.memory.fit import plan_memory
from inferplan.memory.hardware import system_domain_gpus, system_scale_out
from inferplan.memory.layout import cell_widths, instance_gpus
from inferplan.memory.slots import SLOT_LIMIT, running_stated_note, with_draft_running_stated, with_most_slots
from inferplan.memory.suggest import smaller_weights
from inferplan.performance.context import ServingContext
from inferplan.performance.estimate import ServingEstimate
from inferplan.performance.profiles import find_profile, own_run_words
from inferplan.performance.serving import estimate_at, with_profile
from inferplan.performance.track_record import with_track_record


class CellCapacity(BaseModel):
    model_config = ConfigDict(frozen=True, defer_build=True)

    gpus: int
    tensor_parallel_size: int
    pipeline_parallel_size: int
    data_parallel_size: int = 1  # attention data-parallel ranks sharing the experts (expert_parallel)
    expert_parallel: bool = False  # experts spread over all the cell's GPUs
    concurrency_at_target: int  # requests one cell runs while every user still gets the target speed
    output_tokens_per_s_per_user: float
    output_tokens_per_s: float  # the cell's aggregate output at that concurrency
    input_tokens_per_s: float
    kv_max_concurrency: int
    engine_slots: int
    meets_target: bool
    source: str
    assumptions: tuple[str, ...] = ()  # of the memory and speed models behind the cell
    # the user's stored runs of this cell's deployment: the one its speed comes from, or why one is not used
    own_runs: tuple[str, ...] = ()
    # the running cap per rank the cell's launch states where the plan states one: the scenario's own, llama.cpp's
    # --parallel slots and an Ollama server's the cell is counted with (memory/slots.py with_most_slots), SGLang's
    # with a draft (with_draft_running_stated); None: the engine's own
    stated_max_num_seqs: int | None = None


class LoadoutCapacity(BaseModel):
    model_config = ConfigDict(frozen=True, defer_build=True)

    system: str
    gpus: int
    cells: int
    cell: CellCapacity
    users_by_throughput: float
    users_by_concurrency: float
    users_by_memory: float
    supported_users: int
    binding: str  # token throughput | concurrency | per-request memory | service target
    output_tokens_per_s: float
    assumptions: tuple[str, ...]
    cell_host_gpus: int | None = None  # an Ollama server's: its host's GPUs, idle ones included (None: the cell's)

    @property
    def users_at_limit(self) -> float:
        """Users the loadout carries at its tightest limit (throughput, concurrency or memory), unrounded."""
        return min(self.users_by_throughput, self.users_by_concurrency, self.users_by_memory)


def units_for_target(users_per_unit: float, target: int) -> tuple[int, int]:
    """How many units (loadouts, replica cells) carrying ``users_per_unit`` > 0 users each carry ``target``
    users, and the users they carry: whole users per unit, at least one unit; a user heavier than one
    unit takes several."""
    whole = math.floor(users_per_unit)
    if whole:
        units = max(1, math.ceil(target / whole))
        return units, whole * units
    units = math.ceil(target / users_per_unit)
    return units, math.floor(users_per_unit * units)


MAX_SYSTEMS_PER_CELL = 8  # a replica spread over more systems than this is out of scope


def smallest_fitting_cell(catalog: Catalog, base: Deployment, gpus: int) -> Deployment | None:
    """The smallest replica cell of ``base`` that fits in at most ``gpus`` GPUs (None: none does)."""
    fit = plan_memory(base.model_copy(update={"tensor_parallel_size": 1, "pipeline_parallel_size": 1, "gpus": 1}), catalog).result
    if fit.fits:
        return base.model_copy(update={"tensor_parallel_size": 1, "gpus": 1})
    s = fit.smallest_fit
    if s is None or s.gpus > gpus:
        return None
    return base.model_copy(update={"tensor_parallel_size": s.tensor_parallel_size,
                                   "pipeline_parallel_size": s.pipeline_parallel_size, "gpus": s.gpus})


def _smallest_cell(catalog: Catalog, base: Deployment, gpus: int) -> Deployment:
    """The smallest replica cell of ``base`` in a bare-GPU loadout of ``gpus`` GPUs; refused naming the
    loadout's GPU count, with the count that holds the model and the smaller weights that fit these GPUs."""
    cell = smallest_fitting_cell(catalog, base, gpus)
    if cell is None:
        one = base.model_copy(update={"tensor_parallel_size": 1, "pipeline_parallel_size": 1, "gpus": 1})
        needed = plan_memory(one, catalog).result.smallest_fit
        stated = {k: getattr(base, k) for k in base.model_fields_set - {"tensor_parallel_size", "pipeline_parallel_size"}}
        smaller = smaller_weights(Deployment(**{**stated, "gpus": gpus}), catalog)  # laid out as the engine launches
        ways = [f"at least {needed.gpus} GPUs" if needed else "",
                f"quantization {smaller.changes['quantization']}" if smaller and "max_model_len" not in smaller.changes else ""]
        raise InvalidScenarioError(
            f"{base.model} ({base.quantization or 'its own checkpoint'}) does not fit on "
            f"{gpus} × {base.gpu} at {base.max_model_len:,} tokens (the workload's request)",
            field="platform.gpus", allowed=", or ".join(w for w in ways if w) or "GPUs with more memory",
        )
    return cell


def spanning_cell(catalog: Catalog, base: Deployment, system: System, *, cell_fixed: bool = False) -> tuple[Deployment, int]:
    """The replica cell to start from on ``system``, and how many systems it needs: one when the
    model fits in a system's GPUs; else the fewest systems that hold the smallest cell that fits,
    with tensor parallelism kept inside a system's fast-link domain and pipeline stages across
    systems (their scale-out network carries the hand-over)."""
    node = system.accelerator_count
    accel = catalog.accelerators.records[system.accelerator]
    if cell_fixed:
        cell = base
    else:
        cell = smallest_fitting_cell(catalog, base, node * MAX_SYSTEMS_PER_CELL)
        if cell is None:
            raise InvalidScenarioError(
                f"{base.model} does not fit in {MAX_SYSTEMS_PER_CELL} {system.id} systems ({node * MAX_SYSTEMS_PER_CELL} GPUs) "
                f"at {base.max_model_len} tokens; a replica spread over more systems is out of scope",
                field="platform.system", allowed="a system with more or larger GPUs, or a smaller precision",
            )
    gpus = instance_gpus(cell)
    if gpus <= node:
        return cell, 1
    if not cell_fixed:  # tensor parallelism inside a system's domain, pipeline stages for the rest
        tp = min(cell.tensor_parallel_size, system_domain_gpus(system, accel))
        cell = cell.model_copy(update={"tensor_parallel_size": tp, "pipeline_parallel_size": math.ceil(gpus / tp)})
        gpus = tp * cell.pipeline_parallel_size
    systems = math.ceil(gpus / node)
    if systems > MAX_SYSTEMS_PER_CELL:
        raise InvalidScenarioError(f"a replica cell of {gpus} GPUs needs {systems} {system.id} systems; "
                                   f"more than {MAX_SYSTEMS_PER_CELL} is out of scope", field="cell",
                                   allowed=f"at most {node * MAX_SYSTEMS_PER_CELL} GPUs (tensor × pipeline parallel size)")
    if system_scale_out(system, accel) is None:
        raise InvalidScenarioError(
            f"one replica of {base.model} needs {systems} {system.id} systems, and the catalogue knows no network "
            "between them", field="platform.system", allowed="a system with a scale-out network in the catalogue, or more memory per GPU",
        )
    return cell, systems


def drafts(w: WorkloadProfile) -> dict:
    """The speculative-decoding settings of a request shape (none: none)."""
    return {"speculative_tokens": w.speculative_tokens, "acceptance_rate": w.acceptance_rate} if w.speculative_tokens else {}


def decode_pool_shape(w: Workload) -> Workload:
    """The request shape one instance of a decode pool runs: its prompt arrives as KV cache from the prefill
    pool (vLLM's and SGLang's disaggregated prefill, TRT-LLM's generation servers), so no prompt token
    rides its steps; the speed model prices that as every prompt token cached (``DecodePoolWorkload``)."""
    # built from the fields as they stand, not validated again: a shape copied without its drafts (the
    # same requests served without speculative decoding) keeps the acceptance rate stated beside them
    return DecodePoolWorkload.model_construct(w.model_fields_set | {"prefix_cache_hit_rate"},
                                              **{**dict(w), "prefix_cache_hit_rate": 1.0})


def cell_capacity(catalog: Catalog, cell: Deployment, w: WorkloadProfile, *, decode_pool: bool = False) -> CellCapacity:
    """The concurrency one replica cell runs at the workload's per-user speed target, and what it delivers there;
    ``decode_pool``: the cell is the decode pool beside a prefill pool, its steps decode only (``decode_pool_shape``)."""
    shape = Workload(input_len=w.input_tokens_per_request, output_len=w.output_tokens_per_request,
                     prefix_cache_hit_rate=w.cache_hit_rate, **drafts(w))
    if decode_pool:
        shape = decode_pool_shape(shape)
    # llama.cpp serves the --parallel slots it is started with: a cell is started with the most that
    # fit, as a search starts it; a release that caps its running requests itself while a draft runs is
    # started with the cap it runs without one
    stated, cell = cell, with_most_slots(cell, catalog, SLOT_LIMIT) if cell.max_model_len else cell
    drafted, cell = cell, with_draft_running_stated(cell, catalog)
    launch = (running_stated_note(catalog, cell),) if cell is not drafted else ()
    ctx = ServingContext(catalog, cell, shape)
    profile, skipped = find_profile(ctx, stated)  # a run not used is said so once, in own_runs

    def at(c: int) -> ServingEstimate:
        e = estimate_at(ctx, c)
        return with_profile(ctx, e, profile) if profile is not None else e

    top = min(ctx.max_concurrency(), ctx.max_running * ctx.dp)
    lo, hi = 1, top
    if at(1).output_tokens_per_s_per_user < w.target_output_tokens_per_s:
        best, meets = at(1), False
    else:
        while lo < hi:  # largest c whose per-user speed still meets the target
            mid = (lo + hi + 1) // 2
            if at(mid).output_tokens_per_s_per_user >= w.target_output_tokens_per_s:
                lo = mid
            else:
                hi = mid - 1
        best, meets = at(lo), True
    if best.source != "measured":
        best = with_track_record(catalog, ctx.rates.family, best, offloaded=ctx.mp.offload is not None)
    par = ctx.mp.result.parallel
    pooled = ("the replica cells are the decode pool: the prefill pool runs each prompt and hands its KV cache over, "
              "so a cell's steps decode only (priced as every prompt token cached) and a request holds its slot "
              "for its output alone",) if decode_pool else ()
    return CellCapacity(
        gpus=par.gpus, tensor_parallel_size=par.tensor_parallel_size, pipeline_parallel_size=par.pipeline_parallel_size,
        data_parallel_size=par.data_parallel_size, expert_parallel=par.expert_parallel,
        concurrency_at_target=best.concurrency if meets else 0,
        output_tokens_per_s_per_user=best.output_tokens_per_s_per_user,
        output_tokens_per_s=best.output_tokens_per_s_total if meets else 0.0,
        input_tokens_per_s=best.input_tokens_per_s_total if meets else 0.0,
        kv_max_concurrency=ctx.max_concurrency(), engine_slots=ctx.max_running * ctx.dp,
        meets_target=meets, source=best.source, assumptions=(*launch, *pooled, *best.assumptions),
        stated_max_num_seqs=cell.max_num_seqs,
        own_runs=own_run_words(profile, skipped),
    )


@per_catalog(maxsize=256)  # every plan of one model, platform and workload packs the same cells
def loadout_capacity(catalog: Catalog, base: Deployment, w: WorkloadProfile, *, system_gpus: int, system: str,
                     cell_fixed: bool = False, nodes: tuple[str, int] | None = None,
                     start: Deployment | None = None, decode_pool: bool = False) -> LoadoutCapacity:
    """Pack replica cells into one loadout of ``system_gpus`` GPUs and count the users it carries:
    of the layouts ``candidate_loadouts`` tries, the one carrying the most users is kept (wider cells
    are faster per user, narrower ones pack more replicas)."""
    trials, note = candidate_loadouts(catalog, base, w, system_gpus=system_gpus, system=system, cell_fixed=cell_fixed,
                                      nodes=nodes, start=start, decode_pool=decode_pool)
    best = None
    for trial in trials:
        best = _better(best, trial)
    assert best is not None
    return best.model_copy(update={"assumptions": (*best.assumptions, note)}) if note else best


@per_catalog(maxsize=256)
def candidate_loadouts(catalog: Catalog, base: Deployment, w: WorkloadProfile, *, system_gpus: int, system: str,
                       cell_fixed: bool = False, nodes: tuple[str, int] | None = None,
                       start: Deployment | None = None, decode_pool: bool = False) -> tuple[tuple[LoadoutCapacity, ...], str | None]:
    """One loadout of ``system_gpus`` GPUs packed with each replica-cell layout, and a note of the
    wider tensor-parallel cells not tried (None: none skipped).

    Unless the cell is fixed, every tensor-parallel width from the smallest that fits up to the
    loadout (``memory.layout.cell_widths``) is tried, and for a mixture-of-experts model on an engine that runs
    expert parallelism every expert-parallel cell too (``expert_parallel_cells``). ``nodes`` —
    (system id, GPUs per system) — makes the loadout several such systems: a cell wider than one
    runs over their network; ``start`` is the narrowest cell to try (see ``spanning_cell``); ``decode_pool``: the
    cells are a decode pool (``cell_capacity``). An Ollama tag's
    build is instead one server per host, on the GPUs Ollama loads it on (``ollama_servers``). Empty:
    no layout from ``start`` up fits in ``system_gpus`` GPUs."""
    if cell_fixed:
        return (_loadout(catalog, base, w, system_gpus=system_gpus, system=system, nodes=nodes, decode_pool=decode_pool),), None
    if nodes is None and (servers := ollama_servers(catalog, base, system_gpus, system)) is not None:
        loadouts = tuple(_ollama_loadout(catalog, server, w, host_gpus=servers[1], system_gpus=system_gpus, system=system)
                         for server in servers[0])
        if all(t.cell.data_parallel_size == 1 for t in loadouts):  # copies of an instance are no one server
            return loadouts, None
    smallest = start or _smallest_cell(catalog, base, system_gpus)
    trials: list[LoadoutCapacity] = []
    note = None
    for tp in cell_widths(smallest.tensor_parallel_size, system_gpus // smallest.pipeline_parallel_size):
        try:
            trial = _loadout(catalog, smallest.model_copy(update={"tensor_parallel_size": tp}), w,
                             system_gpus=system_gpus, system=system, nodes=nodes, decode_pool=decode_pool)
        except InvalidScenarioError as exc:
            if not trials or exc.field != "tensor_parallel_size":
                raise
            # a cell wider than the hardware's links carry: keep the narrower ones, and say so
            note = f"replica cells wider than {trials[-1].cell.gpus} GPUs not tried: {exc}"
            break
        trials.append(trial)
    trials += expert_parallel_cells(catalog, base, w, system_gpus=system_gpus, system=system, nodes=nodes,
                                    decode_pool=decode_pool)
    return tuple(trials), note


def _better(best: LoadoutCapacity | None, trial: LoadoutCapacity) -> LoadoutCapacity:
    """The loadout carrying more users (then more output tokens/s); the earlier one on a tie."""
    if best is None or (trial.supported_users, trial.output_tokens_per_s) > (best.supported_users, best.output_tokens_per_s):
        return trial
    return best


def expert_parallel_cells(catalog: Catalog, base: Deployment, w: WorkloadProfile, *, system_gpus: int, system: str,
                          nodes: tuple[str, int] | None = None, decode_pool: bool = False) -> list[LoadoutCapacity]:
    """Loadouts of expert-parallel cells — attention data-parallel, one rank per GPU, the experts
    spread over all the cell's GPUs (how DeepSeek-style models are served at scale) — for every
    cell width from 2 GPUs up to the loadout (``memory.layout.cell_widths``: powers of two, one
    system's GPUs and the whole loadout) that holds the model. None for a dense model or an engine
    without expert parallelism (engines.yaml ``expert_parallel``)."""
    if catalog.engine(base.engine).expert_parallel is not True:
        return []
    domain = nodes[1] if nodes else system_gpus
    loadouts = []
    for width in cell_widths(2, system_gpus, fills=(domain, system_gpus)):
        cell = base.model_copy(update={"tensor_parallel_size": 1, "pipeline_parallel_size": 1,
                                       "data_parallel_size": width, "enable_expert_parallel": True})
        try:
            loadouts.append(_loadout(catalog, cell, w, system_gpus=system_gpus, system=system, nodes=nodes,
                                     decode_pool=decode_pool))
        except InvalidScenarioError as exc:
            if exc.field == "enable_expert_parallel":  # a dense model: no experts to spread
                return []
            # "cell": too small for the model, or not whole systems; "data_parallel_size": wider than
            # the GPUs' links reach with no network known beyond (a 16-GPU PCIe platform): not a layout
            if exc.field not in ("cell", "data_parallel_size"):
                raise
    return loadouts


def _loadout(catalog: Catalog, cell_d: Deployment, w: WorkloadProfile, *, system_gpus: int, system: str,
             nodes: tuple[str, int] | None = None, decode_pool: bool = False) -> LoadoutCapacity:
    n = instance_gpus(cell_d)
    dp = cell_d.data_parallel_size or 1
    if n > system_gpus:
        raise InvalidScenarioError(f"a replica cell needs {n} GPUs; {system} has {system_gpus}", field="cell")
    hardware = {"system": None}
    if nodes and n > nodes[1]:  # the cell spans systems: their network carries its traffic
        if n % nodes[1]:
            raise InvalidScenarioError(f"a replica cell of {n} GPUs does not fill whole {nodes[0]} systems "
                                       f"of {nodes[1]} GPUs", field="cell", allowed=f"multiples of {nodes[1]} GPUs")
        hardware = {"system": nodes[0], "gpu": None}
    cell_d = cell_d.model_copy(update={"gpus": n, "data_parallel_size": dp, **hardware})
    try:
        cap = cell_capacity(catalog, cell_d, w, decode_pool=decode_pool)
    except InvalidScenarioError as exc:
        if exc.field != "gpus":
            raise
        # a replica cell (fixed in the scenario, or tried by the sweep) too small for the model
        raise InvalidScenarioError(str(exc), field="cell",
                                   allowed="a larger tensor × pipeline parallel size, or omit `cell` to size it") from exc
    layout = (f" (attention data-parallel over {dp} ranks of TP{cell_d.tensor_parallel_size}, experts spread over all {n})"
              if cell_d.enable_expert_parallel else
              f" (data-parallel over {dp} ranks of TP{cell_d.tensor_parallel_size}, each expert split over all {n}: "
              "its MoE layers' TP × DP group)" if dp > 1 else "")
    return _packed(cap, w, cells=system_gpus // n, cell_gpus=n, system=system, system_gpus=system_gpus, layout=layout)


def _ollama_loadout(catalog: Catalog, server: Deployment, w: WorkloadProfile, *, host_gpus: int, system_gpus: int,
                    system: str) -> LoadoutCapacity:
    """A loadout of hosts of ``host_gpus`` GPUs, each running one Ollama server (``ollama_servers``): one
    replica cell per host, every GPU paid for."""
    cap = cell_capacity(catalog, server, w)
    more = (f"one `ollama serve` per GPU behind a router (each with its own CUDA_VISIBLE_DEVICES and port) would run "
            f"{host_gpus} copies per host and carry more" if cap.gpus < host_gpus else "")
    where = f" on each host of {host_gpus} GPUs" if system_gpus > host_gpus else ""
    # fit and deploy lay a deployment of all the GPUs out as one engine's copies and stages, across hosts
    spans = (f"`fit` and `deploy` of the tag with {system_gpus} GPUs lay it out over all of them (the engine's copies "
             f"and pipeline stages, which may span hosts), not as one Ollama server per host; this plan prices "
             f"{system_gpus // host_gpus} servers of {host_gpus} GPUs, as Ollama runs on one host"
             if system_gpus > host_gpus else "")
    loadout = _packed(cap, w, cells=system_gpus // host_gpus, cell_gpus=cap.gpus, system=system,
                      system_gpus=system_gpus, layout=f" (one Ollama server{where})",
                      extra=tuple(n for n in (server.gpus_chosen_by, more, spans) if n))
    return loadout.model_copy(update={"cell_host_gpus": host_gpus})


def _stated_cap_note(cap: CellCapacity, w: WorkloadProfile) -> str | None:
    """Where a stated running cap is more than the KV cache holds at the request shape: the cache binds, not the cap."""
    stated = cap.stated_max_num_seqs
    if stated is None or stated * cap.data_parallel_size <= cap.engine_slots or cap.engine_slots != cap.kv_max_concurrency:
        return None
    per_cell = f"{stated:,}" + (f" per rank × {cap.data_parallel_size} ranks" if cap.data_parallel_size > 1 else "")
    return (f"the stated max_num_seqs ({per_cell}) is more than the KV cache holds: {cap.kv_max_concurrency:,} requests "
            f"of {w.input_tokens_per_request + w.output_tokens_per_request:,} tokens per cell, so a cell runs at most "
            f"{cap.engine_slots:,} at once (its engine slots) and the stated cap never binds")


def _packed(cap: CellCapacity, w: WorkloadProfile, *, cells: int, cell_gpus: int, system: str, system_gpus: int,
            layout: str, extra: tuple[str, ...] = ()) -> LoadoutCapacity:
    """The users ``cells`` replica cells of ``cell_gpus`` GPUs and capacity ``cap`` carry in a loadout of
    ``system_gpus`` GPUs."""
    # a user's requests in flight: its busiest-hour output rate over what one request delivers at the
    # cell's operating point — its output over the time it holds a slot, prompt included (the target
    # when even one request misses it)
    speed = cap.output_tokens_per_s / cap.concurrency_at_target if cap.meets_target else w.target_output_tokens_per_s
    per_user_requests = w.peak_output_tokens_per_s / speed
    # token throughput counts both sides: a month more input-heavy than the request shape runs out
    # of prompt throughput before output throughput
    by_output = cells * cap.output_tokens_per_s / w.peak_output_tokens_per_s
    by_input = cells * cap.input_tokens_per_s / w.peak_input_tokens_per_s
    by_tp = min(by_output, by_input)
    by_conc = cells * cap.engine_slots / per_user_requests
    by_mem = cells * cap.kv_max_concurrency / per_user_requests
    limits = {"per-request memory": by_mem, "concurrency": by_conc, "token throughput": by_tp}
    least = min(limits.values())
    # a cell run at every slot it has carries as many users by throughput as by slots (each user's
    # requests run at the speed those slots give): the slots bind, so a tie goes to them
    binding = next(k for k, v in limits.items() if v <= least * (1 + 1e-9))
    supported = math.floor(least)
    if not cap.meets_target:
        binding, supported = "service target", 0
    notes = [
        f"{cells} replica cell(s) of {cell_gpus} GPU(s){layout} in {system}; each runs {cap.concurrency_at_target} requests "
        f"at ≥ {w.target_output_tokens_per_s:g} output tok/s per user ({cap.source})", *extra,
        f"a user generates {w.peak_output_tokens_per_s:.3f} output tok/s in the busiest hour "
        f"({w.monthly_output_tokens:,.0f} output tokens a month × peak/average {w.peak_to_average:g}), "
        f"i.e. {per_user_requests:.3f} requests in flight at {speed:,.1f} tok/s each",
        "users are counted with every slot busy in the busiest hour (the mean load): arrivals that bunch up wait "
        "for a slot, so the first token's tail at that load is longer than an idle request's; `inferplan simulate` "
        "and `search` price that queue",
    ]
    if by_input < by_output and cap.meets_target:
        notes.append(f"input tokens bind the throughput: a user sends {w.peak_input_tokens_per_s:,.1f} input tok/s in the busiest "
                     f"hour, more per output token ({(1 - w.output_share) / w.output_share:,.1f}) than the request shape's "
                     f"{w.input_tokens_per_request / w.output_tokens_per_request:,.1f}")
    notes.extend(n for n in (_stated_cap_note(cap, w),) if n)
    notes.extend(cap.assumptions)
    if not cap.meets_target:
        notes.append(f"even one request gets only {cap.output_tokens_per_s_per_user:.1f} tok/s: the service target is not met")
    return LoadoutCapacity(
        system=system, gpus=system_gpus, cells=cells, cell=cap,
        users_by_throughput=by_tp, users_by_concurrency=by_conc, users_by_memory=by_mem,
        supported_users=supported, binding=binding, output_tokens_per_s=cells * cap.output_tokens_per_s,
        assumptions=tuple(notes),
    )
