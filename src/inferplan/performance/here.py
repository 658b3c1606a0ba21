"""What runs on this machine, and how fast: the what-fits table for the accelerator ``detect`` read
(``memory/local.py``) with one request's speed for every model that fits — TTFT and output tokens/s
at ``SPEED_INPUT_TOKENS``/``SPEED_OUTPUT_TOKENS`` tokens, concurrency 1 — and the same for N GPUs of one
kind (``what_runs_on``, the web page's box). A model the GPUs do not hold carries the weight offload
``fit`` suggests (``memory/offload_suggest.py``) and the host RAM it needs, priced at that setting
when the host RAM is known (stated, or read by ``detect``) and holds it. With no engine named, each
model on N GPUs is answered with the best way it runs there across the engines that run on them
(``_best_way``)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from inferplan.catalog.detect import LocalMachine
from inferplan.catalog.engine_support import gpu_refusal
from inferplan.catalog.flags_schema import flags_for
from inferplan.catalog.loader import Catalog
from inferplan.catalog.schema import Accelerator
from inferplan.errors import InferplanError, InvalidScenarioError
from inferplan.inputs.deployment import Deployment
from inferplan.inputs.workload import Workload
from inferplan.memory.slots import sequences_held
from inferplan.memory.hardware import default_engine
from inferplan.memory.local import LocalFits, fits_here
from inferplan.memory.fit import verdict_plan
from inferplan.memory.matrix import FitsCell, fits_matrix
from inferplan.memory.offload_suggest import offload_answer
from inferplan.performance.run_record import UserRun
from inferplan.performance.serving import estimate
from inferplan.units import GiB

SPEED_INPUT_TOKENS = 1024  # the lengths `perf` defaults to
SPEED_OUTPUT_TOKENS = 256


class OffloadOnGpus(BaseModel):
    """For a model the GPUs do not hold: the weight offload ``fit`` suggests for it on them
    (``memory/offload_suggest.py``), with one request's speed at it when the host RAM is stated and holds it."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    flag: str  # the least setting that fits the GPUs, as the engine's flag (llama.cpp --n-cpu-moe 22)
    changes: dict[str, int | float | None]  # that setting as deployment fields (n_cpu_moe, n_gpu_layers, cpu_offload_gb)
    host_memory_bytes_needed: float  # host RAM it needs, with what the OS and the engine keep
    host_memory_bytes: float | None  # the host RAM stated (None: not stated, so no speed)
    fits_host: bool | None  # the stated host RAM holds it (None: not stated)
    concurrency: float | None = None  # sequences of the row's context held at once with it
    ttft_s: float | None = None
    output_tokens_per_s_per_user: float | None = None
    source: str | None = None
    note: str | None = None  # why a setting that fits has no speed


class LocalSpeed(BaseModel):
    model_config = ConfigDict(frozen=True, defer_build=True)

    model: str
    quantization: str
    ttft_s: float
    output_tokens_per_s_per_user: float
    source: str


class LocalOffload(BaseModel):
    model_config = ConfigDict(frozen=True, defer_build=True)

    model: str
    quantization: str
    offload: OffloadOnGpus


class WhatRunsHere(LocalFits):
    speeds: tuple[LocalSpeed, ...] = ()  # the models that fit, one request at a time
    offloads: tuple[LocalOffload, ...] = ()  # those that do not, with the weight offload the machine's RAM holds


def what_runs_here(machine: LocalMachine, catalog: Catalog, *, engine: str | None = None,
                   models: list[str] | None = None, max_model_len: int | None = None,
                   user_runs: tuple[UserRun, ...] = (), all_models: bool = False) -> WhatRunsHere:
    """``fits_here`` with one request's speed for each model that fits the card; for each that does not,
    the weight offload ``fit`` suggests when the machine's RAM (as ``--host-memory-gb``) holds it, with its speed."""
    fits = fits_here(machine, catalog, engine=engine, models=models, max_model_len=max_model_len, all_models=all_models)
    speeds, offloads = [], []
    for cell in fits.matrix.cells if fits.matrix else ():
        if cell.result is None:
            continue
        d = Deployment(model=cell.model, gpu=cell.hardware, engine=fits.engine, quantization=cell.quantization,
                       max_model_len=cell.result.max_model_len)
        if not cell.result.fits:
            o = _offload(d, machine.ram_bytes / GiB, catalog) if _separate_ram(machine, catalog, cell.hardware) else None
            if o is not None and o.fits_host:
                offloads.append(LocalOffload(model=cell.model, quantization=cell.quantization, offload=o))
            continue
        try:
            e = estimate(d, Workload(input_len=SPEED_INPUT_TOKENS, output_len=SPEED_OUTPUT_TOKENS), catalog,
                         user_runs=user_runs)
        except InferplanError:  # a model that fits but whose speed the model cannot place here: no row
            continue
        speeds.append(LocalSpeed(model=cell.model, quantization=cell.quantization, ttft_s=e.ttft_s,
                                 output_tokens_per_s_per_user=e.output_tokens_per_s_per_user, source=e.source))
    offloads.sort(key=lambda o: -(o.offload.output_tokens_per_s_per_user or 0.0))
    return WhatRunsHere(**fits.model_dump(), speeds=tuple(speeds), offloads=tuple(offloads))


def _separate_ram(machine: LocalMachine, catalog: Catalog, gpu: str) -> bool:
    """The machine's RAM was read and is not the accelerator's own (unified memory has no host RAM to offload to)."""
    return bool(machine.ram_bytes) and not catalog.accelerator(gpu).unified_memory


class ModelOnGpus(BaseModel):
    """One model on the GPUs asked about: whether it fits them, and one request's speed if it does."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    model: str
    quantization: str
    engine: str  # the engine the row is planned on (the one named, or the best way's)
    fits: bool
    gpus_needed: int | None  # the fewest of these GPUs that hold it (None: no layout does)
    max_model_len: int | None  # the context it is sized for
    concurrency: float | None  # sequences of max_model_len held at once, as the what-fits matrix counts them
    ttft_s: float | None
    output_tokens_per_s_per_user: float | None
    source: str | None  # measured or calibrated-model
    note: str | None = None  # why a model that fits has no speed, or what layout was chosen
    offload: OffloadOnGpus | None = None  # a model the GPUs do not hold: the weight offload that fits them


class WhatRuns(BaseModel):
    model_config = ConfigDict(frozen=True, defer_build=True)

    accelerator: str
    gpus: int
    engine: str | None  # the engine named (None: each model on the engine of its best way, of ``engines``)
    engines: tuple[str, ...] = ()  # the engines the rows were planned on
    input_len: int
    output_len: int
    host_memory_gb: float | None = None  # host RAM stated, GiB: offloads are priced against it
    models: tuple[ModelOnGpus, ...]  # those that fit first, then those an offload runs, fastest first
    left_out: tuple[str, ...] = ()  # catalogue models the default grid leaves out (the what-fits matrix's)


def what_runs_on(gpu: str, gpus: int, catalog: Catalog, *, engine: str | None = None,
                 quantizations: list[str] | None = None, all_models: bool = False,
                 host_memory_gb: float | None = None) -> WhatRuns:
    """Which catalogue models run on ``gpus`` of the accelerator ``gpu`` and how fast one request
    goes (``SPEED_INPUT_TOKENS``/``SPEED_OUTPUT_TOKENS`` tokens): the what-fits matrix for one card,
    and for each model that fits the GPUs, ``estimate`` with them as one instance (``--gpus`` alone), and
    the sequences of the model's planned context held at once there (as the what-fits matrix counts them).
    The models are the what-fits matrix's default grid, or with ``all_models`` every catalogue model with a config.
    A model the GPUs do not hold carries the weight offload ``fit`` suggests on them and the host RAM it
    needs; with ``host_memory_gb`` (GiB, as ``--host-memory-gb``) stated and holding it, its speed at it.
    With ``engine`` named, each model is its best published build on it (the what-fits matrix's); with none,
    each model is the best way it runs here of every build, and every format the engine makes from one
    (``memory.precision.model_formats``: llama.cpp's GGUF conversions, a launcher's quantization at load), on
    every engine that runs on the accelerator with a measured point (``_best_way``)."""
    accel = catalog.accelerator(gpu, "gpu")
    if host_memory_gb is not None and accel.unified_memory:
        raise InvalidScenarioError(f"{accel.name} has unified memory: its memory is the host RAM",
                                   field="host_memory_gb", allowed="leave it out (the accelerator's memory is the host RAM)")
    engines = [catalog.engine(engine).id] if engine else _engines_here(catalog, accel, quantizations or ())
    if engine:
        for name in quantizations or ():  # a format the engine cannot load is the question's error, not an empty answer
            _check_loads(catalog, engines[0], name, accel)
    candidates: dict[str, list[tuple[str, FitsCell]]] = {}
    left_out: tuple[str, ...] = ()
    for e in engines:
        matrix = fits_matrix(gpus=[accel.id], quantizations=quantizations, engine=e, all_models=all_models,
                             every_build=engine is None, catalog=catalog)
        left_out = matrix.left_out
        for cell in matrix.cells:
            if cell.result is not None:
                candidates.setdefault(cell.model, []).append((e, cell))
    rows = [_best_way([w for w in ways if _runs_here(catalog, accel, *w)] or ways, accel.id, gpus, catalog, host_memory_gb)
            if engine is None else _on_gpus(ways[0][1], accel.id, gpus, ways[0][0], catalog, host_memory_gb)
            for ways in candidates.values()]
    rows.sort(key=lambda r: (not r.fits, -_speed(r), r.model))
    return WhatRuns(accelerator=accel.id, gpus=gpus, engine=engine and engines[0], engines=tuple(engines),
                    input_len=SPEED_INPUT_TOKENS, output_len=SPEED_OUTPUT_TOKENS, host_memory_gb=host_memory_gb,
                    models=tuple(rows), left_out=left_out)


def _engines_here(catalog: Catalog, accel: Accelerator, quantizations: list[str]) -> list[str]:
    """The engines a question naming none compares on ``accel``: those that run on its software stack with a
    measured point there (``Engine.runs_measured_on``) and load every format asked for; the accelerator's
    default engine first, so that it keeps the ties."""
    first = default_engine(catalog, accel)
    here = sorted((e for e in catalog.engines if e.runs_measured_on(accel.software)), key=lambda e: e.id != first)
    loading = [e.id for e in here if all(e.loads(catalog.quantization(q), accel=accel) for q in quantizations)]
    if not loading:
        loadable = ", ".join(q.id for q in catalog.quantizations if any(e.loads(q, accel=accel) for e in here))
        raise InvalidScenarioError(f"no engine that runs on {accel.name} loads {', '.join(quantizations)} weights",
                                   field="quantization", allowed=loadable)
    return loading


def _runs_here(catalog: Catalog, accel: Accelerator, engine: str, cell: FitsCell) -> bool:
    """Whether ``engine`` runs the cell's build on ``accel``: the model's card lists it among the engines that
    serve the model (where the card lists them), it loads the format there, natively or through a fallback it
    has (``Engine.loads``), and an engine that serves GGUF files has a GGUF type for it (``EngineFlags.gguf_tags``)."""
    quant, listed = catalog.quantization(cell.quantization), catalog.model(cell.model).serving_engines
    flags = flags_for(catalog, engine)
    serves = flags is None or flags.model_source != "gguf_file" or quant.id in flags.gguf_tags
    return (not listed or engine in listed) and serves and catalog.engine(engine).loads(quant, accel=accel)


def _best_way(ways: list[tuple[str, FitsCell]], gpu: str, gpus: int, catalog: Catalog,
              host_memory_gb: float | None) -> ModelOnGpus:
    """The best of a model's (engine, build) ways on ``gpus`` GPUs: one that fits them, at the most bits per
    weight that one request's speed is placed at there (a way counted as fitting that the plan on these GPUs
    does not hold gives way to fewer bits), then the fastest; else, with the host RAM stated, the fastest weight offload it holds (decode
    streams the offloaded weights from host RAM for every token, so the smaller build that keeps more on the
    GPUs is the one worth running), then the most bits; else the way that needs the fewest GPUs, at the most
    bits. Equals keep the engines' order (the accelerator's default engine first)."""
    def needed(cell: FitsCell) -> int | None:
        return cell.result.parallel.gpus if cell.result.fits else (cell.smallest_fit.gpus if cell.smallest_fit else None)

    def bits(quantization: str) -> float:
        return catalog.quantization(quantization).bits_per_weight.value

    fitting = [(e, c) for e, c in ways if (needed(c) or gpus + 1) <= gpus]
    first = None
    for level in sorted({bits(c.quantization) for _, c in fitting}, reverse=True):
        rows = [_on_gpus(c, gpu, gpus, e, catalog, host_memory_gb) for e, c in fitting if bits(c.quantization) == level]
        first = first or rows
        if any(r.output_tokens_per_s_per_user for r in rows):  # planned on these GPUs, not only counted as fitting
            return max(rows, key=_speed)  # max keeps the first of equals
    if first:
        return first[0]
    if host_memory_gb is not None:
        rows = [_on_gpus(c, gpu, gpus, e, catalog, host_memory_gb) for e, c in ways]
        held = [r for r in rows if r.offload is not None and r.offload.output_tokens_per_s_per_user is not None]
        if held:
            return max(held, key=lambda r: (r.offload.output_tokens_per_s_per_user, bits(r.quantization)))
        return min(rows, key=lambda r: (r.gpus_needed or float("inf"), -bits(r.quantization)))
    e, c = min(ways, key=lambda w: (needed(w[1]) or float("inf"), -bits(w[1].quantization)))
    return _on_gpus(c, gpu, gpus, e, catalog, host_memory_gb)


def _speed(m: ModelOnGpus) -> float:
    """One user's output tokens/s on the GPUs, else with the offload (0: no speed)."""
    return m.output_tokens_per_s_per_user or (m.offload.output_tokens_per_s_per_user if m.offload else None) or 0.0


def _check_loads(catalog: Catalog, engine_id: str, name: str, accel: Accelerator) -> None:
    """The format asked for is one ``engine_id`` loads on ``accel`` and runs on its GPU architecture at its
    current release (engine_support.yaml ``gpu_refusals`` of a format), else the question's error."""
    quant, engine = catalog.quantization(name), catalog.engine(engine_id)

    def runs(q) -> bool:
        refused = gpu_refusal(catalog, engine.id, None, None, accel, q.id)
        return engine.loads(q, accel=accel) and (refused is None or refused.quantization is None)

    if not runs(quant):
        loadable = ", ".join(q.id for q in catalog.quantizations if runs(q))
        refused = gpu_refusal(catalog, engine.id, None, None, accel, quant.id)
        why = f" ({accel.architecture}; source {refused.sources[0]})" if refused is not None else ""
        raise InvalidScenarioError(f"{engine_id} does not run {quant.id} weights on {accel.name}{why}",
                                   field="quantization", allowed=loadable)


def _on_gpus(cell: FitsCell, gpu: str, gpus: int, engine: str, catalog: Catalog,
             host_memory_gb: float | None) -> ModelOnGpus:
    needed = cell.result.parallel.gpus if cell.result.fits else (cell.smallest_fit.gpus if cell.smallest_fit else None)
    base = dict(model=cell.model, quantization=cell.quantization, engine=engine, gpus_needed=needed,
                max_model_len=cell.result.max_model_len, ttft_s=None, output_tokens_per_s_per_user=None, source=None)
    d = Deployment(model=cell.model, gpu=gpu, gpus=gpus, engine=engine, quantization=cell.quantization,
                   max_model_len=cell.result.max_model_len)
    if needed is None or needed > gpus:
        return ModelOnGpus(**base, fits=False, concurrency=None, offload=_offload(d, host_memory_gb, catalog))
    try:
        e = estimate(d, Workload(input_len=SPEED_INPUT_TOKENS, output_len=SPEED_OUTPUT_TOKENS), catalog)
    except InferplanError as exc:
        return ModelOnGpus(**base, fits=True, concurrency=sequences_held(d, catalog), note=f"no speed estimate: {exc}")
    held = sequences_held(d, catalog)  # at the row's context (llama.cpp: the most slots that fit)
    return ModelOnGpus(**{**base, "ttft_s": e.ttft_s, "output_tokens_per_s_per_user": e.output_tokens_per_s_per_user,
                          "source": e.source}, fits=True, concurrency=held, note=e.layout_note)


def _offload(d: Deployment, host_memory_gb: float | None, catalog: Catalog) -> OffloadOnGpus | None:
    """The weight offload ``fit`` suggests for ``d``, which its GPUs do not hold (``offload_answer``), and
    with the host RAM stated and holding it, ``estimate`` at that setting (as ``perf`` with it). ``d`` is planned
    for its verdict alone (``verdict_plan``): the smallest instance that holds the model is the row's already."""
    d = d.model_copy(update={"host_memory_gb": host_memory_gb})
    try:
        mp = verdict_plan(d, catalog)
    except InferplanError:
        return None
    if mp.result.fits or mp.result.startup_note:  # an offload frees GPU weights, not the start-up headroom
        return None
    answer = offload_answer(d, mp, catalog)
    if answer.flag is None:
        return None
    changes = {k: v for k, v in (answer.suggestion.changes if answer.suggestion else {}).items() if k != "host_memory_gb"}
    stated = host_memory_gb is not None
    found = OffloadOnGpus(flag=answer.flag, changes=changes, host_memory_bytes_needed=answer.host_bytes_needed,
                          host_memory_bytes=host_memory_gb * GiB if stated else None,
                          fits_host=(answer.suggestion is not None) if stated else None)
    if not found.fits_host:
        return found
    off = d.model_copy(update=changes)
    try:
        e = estimate(off, Workload(input_len=SPEED_INPUT_TOKENS, output_len=SPEED_OUTPUT_TOKENS), catalog)
    except InferplanError as exc:
        return found.model_copy(update={"note": f"no speed estimate: {exc}"})
    return found.model_copy(update={"concurrency": sequences_held(off, catalog), "ttft_s": e.ttft_s,
                                    "output_tokens_per_s_per_user": e.output_tokens_per_s_per_user, "source": e.source})
