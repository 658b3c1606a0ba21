"""How a run (or a measured profile's launch) was launched, compared with a deployment: its layout and offload
(``layout_differs``), else its engine settings as the engine runs them at each one's release (``settings_differ``),
so that a launch is the same whether its defaults are written out or not. Perf's matching and pooling of the user's
runs (``local_runs.py``) and the profiles' (``profiles.py``) all compare launches here."""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from inferplan.catalog.flags_schema import as_engine_runs, flags_for
from inferplan.catalog.memory_rules import read_release
from inferplan.catalog.points_schema import ProfileLaunch
from inferplan.errors import InferplanError
from inferplan.inputs.deployment import Deployment
from inferplan.memory.fit import MemoryPlan, plan_memory
from inferplan.performance.run_record import LAUNCH_OFFLOAD, RUN_SETTINGS, UserRun

if TYPE_CHECKING:  # pragma: no cover
    from inferplan.catalog.loader import Catalog
    from inferplan.memory.layout import ParallelPlan


# how the memory plan states each of RUN_SETTINGS as the engine runs it (stated, else its default): perf matches a run
# on all of them, since each changes the speed at a concurrency or the concurrency reached — the KV cache dtype the
# bytes a step reads and the sequences the cache holds, the memory fraction the sequences held, the sequence cap and
# the step's token budget the batch and the prompts fused into it, llama.cpp's micro-batch and the MoE runner the
# kernels a step runs
RUN_SETTING_AS_RUN: dict[str, Callable[[MemoryPlan, Deployment], object]] = {
    "kv_cache_dtype": lambda mp, d: mp.kv_dtype.id,
    "gpu_memory_utilization": lambda mp, d: round(mp.settings.memory_fraction, 6),
    "max_num_seqs": lambda mp, d: mp.settings.max_num_seqs,
    "max_num_batched_tokens": lambda mp, d: mp.settings.max_num_batched_tokens,
    "ubatch_size": lambda mp, d: mp.settings.prefill_micro_batch_tokens,
    "moe_runner_backend": lambda mp, d: d.moe_runner_backend,
}


def launched_settings(x: "UserRun | ProfileLaunch | Deployment") -> dict[str, object]:
    """The engine settings (``RUN_SETTINGS``) a run or deployment states (a KV cache dtype of auto states none)."""
    return {f: v for f in RUN_SETTINGS if (v := getattr(x, f)) is not None and not (f == "kv_cache_dtype" and v == "auto")}


def run_launch(d: Deployment, run: "UserRun | ProfileLaunch", release: str | None = None, *,
               stated: Deployment | None = None) -> Deployment:
    """``d`` as ``run`` (a run, or a profile's launch) was launched: the engine settings it states where they differ
    from ``stated``'s (the deployment as asked, before the planner filled any in; default ``d``), the engine's default
    where it states none, and its engine release (``run_release``; None: ``d``'s)."""
    ran, asked = launched_settings(run), launched_settings(stated or d)
    update = {f: ran.get(f, Deployment.model_fields[f].default) for f in RUN_SETTINGS if ran.get(f) != asked.get(f)}
    return d.model_copy(update=update | ({"engine_version": release} if release else {}))


def run_release(catalog: "Catalog", d: Deployment, engine_version: str | None) -> str | None:
    """The engine release a run (or a profile's launch) of ``d``'s engine ran, as ``d`` (its deployment, or one planned
    like it) takes it (``release_reading``); None: ``d``'s own release."""
    return release_reading(catalog, d, engine_version)[0]


def release_reading(catalog: "Catalog", d: Deployment, engine_version: str | None) -> tuple[str | None, str | None]:
    """The release ``engine_version`` names where the memory rules plan it (``memory_rules.read_release``) and the
    engine runs ``d``'s model and weight format at it as the catalogue knows, and None; else None and why not: the
    text names no release, no memory rule covers it (the covered ranges named), it has no such variant (V0 named
    on a release without V0), or ``d``'s memory plan is refused at it (a release that predates the model's
    architecture, naming the first that loads it)."""
    release, why = read_release(catalog, d.engine, engine_version) if engine_version else (None, "names no release")
    if release is None:
        return None, why
    try:
        plan_memory(d.model_copy(update={"engine_version": release}), catalog)
    except InferplanError as exc:
        if exc.field == "engine_version":
            return None, str(exc)
    return release, None


def settings_as_run(catalog: "Catalog", d: Deployment) -> dict[str, object] | None:
    """``d``'s engine settings (those of ``RUN_SETTINGS`` its engine's launcher takes, engine_flags.yaml) as the engine
    runs them at its release: stated, else that release's default (``RUN_SETTING_AS_RUN``; a stated value that is the
    engine's own default, ``flags_schema.as_engine_runs``, as none). None: the memory plan of ``d`` is refused."""
    try:
        mp = plan_memory(d, catalog)
    except InferplanError:
        return None
    flags = flags_for(catalog, d.engine)
    return {f: as_engine_runs(catalog, d.engine, f, RUN_SETTING_AS_RUN[f](mp, d)) for f in RUN_SETTINGS
            if flags is None or flags.takes(f)}


def settings_differ(catalog: "Catalog", d: Deployment, run: "UserRun | ProfileLaunch", *,
                    stated: Deployment | None = None) -> dict[str, tuple]:
    """The engine settings ``run`` (a run, or a profile's launch) ran with that ``d`` is not planned with, each as
    (the run's, ``d``'s), as the engine runs them (``settings_as_run``): the run's unstated settings at the defaults
    of its own release (``run_release``), ``d``'s at its own, so a launch is the same whether its defaults are written
    out or not. Where the memory plan of either launch is refused, as stated (None: the engine's default). Empty:
    the same launch. The one comparison of launches: perf's matching and pooling (``with_user_runs``) and the
    profiles' (``as_profiles``, ``profiles.find_profile``) all use it."""
    launch = run_launch(d, run, run_release(catalog, d, run.engine_version), stated=stated)
    mine, planned = settings_as_run(catalog, launch), settings_as_run(catalog, d)
    if mine is None or planned is None:
        ran, asked = launched_settings(run), launched_settings(stated or d)
        mine, planned = ({f: x.get(f) for f in RUN_SETTINGS} for x in (ran, asked))
    return {f: (mine[f], planned[f]) for f in planned if mine[f] != planned[f]}


def launched_offload(x: "UserRun | ProfileLaunch | Deployment") -> tuple:
    """How a run, profile launch or deployment was launched to use host RAM (``LAUNCH_OFFLOAD``)."""
    return tuple(getattr(x, f) for f in LAUNCH_OFFLOAD)


NO_OFFLOAD = (None,) * len(LAUNCH_OFFLOAD)  # launched_offload of a run or deployment that states none


def layout_differs(catalog: "Catalog", x: "UserRun | ProfileLaunch", d: Deployment, tp: int,
                   parallel: "ParallelPlan | None" = None) -> dict[str, tuple]:
    """How ``x`` (a run, or a profile's launch) was laid out and launched to use host RAM where ``d``, planned at
    tensor parallel size ``tp`` (and ``parallel``, the memory plan's layout, where one is planned; else ``d``'s
    stated one), is not: its TP size, pipeline stages, experts spread or not (on the same GPUs these three fix
    the data-parallel ranks; experts spread as the engine runs them, ``experts_spread``), CUDA graphs (enforce_eager)
    and offload (``LAUNCH_OFFLOAD``), each as (``x``'s, ``d``'s). Empty: the same layout and offload."""
    pp = parallel.pipeline_parallel_size if parallel else d.pipeline_parallel_size
    gpus = parallel.gpus if parallel else (d.gpus or tp * pp * (d.data_parallel_size or 1))
    ep = parallel.expert_parallel if parallel else d.enable_expert_parallel
    ep_pair = tuple(experts_spread(catalog, d.engine, spread, gpus // stages)
                    for spread, stages in ((x.enable_expert_parallel, x.pipeline_parallel_size), (ep, pp)))
    pairs = {"tensor_parallel_size": (x.tensor_parallel_size, tp), "pipeline_parallel_size": (x.pipeline_parallel_size, pp),
             "enable_expert_parallel": ep_pair, "enforce_eager": (x.enforce_eager, d.enforce_eager),
             **{f: (getattr(x, f), getattr(d, f)) for f in LAUNCH_OFFLOAD}}
    return {f: pair for f, pair in pairs.items() if pair[0] != pair[1]}


def experts_spread(catalog: "Catalog", engine: str, enable_expert_parallel: bool, moe_gpus: int) -> bool:
    """Whether ``engine`` launched with ``enable_expert_parallel`` spreads the experts, its MoE layers over
    ``moe_gpus`` GPUs (TP x DP: on the same GPUs, the GPUs over the pipeline stages): not on one GPU where its
    flag takes effect only over several (engines.yaml ``expert_parallel_needs_ranks``)."""
    return enable_expert_parallel and (moe_gpus > 1 or not catalog.engine(engine).expert_parallel_needs_ranks)


def launch_differs(catalog: "Catalog", d: Deployment, x: "UserRun | ProfileLaunch", tp: int, *,
                   stated: Deployment | None = None, parallel: "ParallelPlan | None" = None) -> dict[str, tuple]:
    """Every way ``x`` (a run, or a profile's launch) was launched that ``d`` is not planned with: its layout and
    offload (``layout_differs``), else its engine settings as the engine runs them (``settings_differ``). Empty: the
    same launch."""
    return layout_differs(catalog, x, d, tp, parallel) or settings_differ(catalog, d, x, stated=stated)


def differ_words(differs: dict[str, tuple]) -> list[str]:
    """``launch_differs``' differences in words for the user ("launched at tensor parallel size 2, planned at 1";
    "launched without expert parallelism, planned with it"; "launched with max_num_seqs 8, planned with 1024")."""
    return [_differ_said(f, ran, planned) for f, (ran, planned) in differs.items()]


# a switch that differs is on one side and off on the other: each said by how the run was launched
SWITCHES = {("enable_expert_parallel", True): "launched with expert parallelism, planned without it",
            ("enable_expert_parallel", False): "launched without expert parallelism, planned with it",
            ("enforce_eager", True): "launched without CUDA graphs (enforce_eager), planned with them",
            ("enforce_eager", False): "launched with CUDA graphs, planned without them (enforce_eager)"}


def _differ_said(f: str, ran: object, planned: object) -> str:
    if (f, ran) in SWITCHES:
        return SWITCHES[f, ran]
    if f == "tensor_parallel_size":
        return f"launched at tensor parallel size {ran}, planned at {planned}"
    if f == "pipeline_parallel_size":
        return f"launched in {ran} pipeline stage{'s' if ran != 1 else ''}, planned in {planned}"

    def said(value: object) -> str:
        return ("none" if f in LAUNCH_OFFLOAD else "the engine's default") if value is None else str(value)
    return f"launched with {f} {said(ran)}, planned with {said(planned)}"
