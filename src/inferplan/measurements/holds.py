"""Whether the deployment an imported run states could have served it at all: the weights its GPUs
hold (the memory plan's ``weights_bytes_per_gpu`` at the stated tensor parallel size and weight
format) fit in a GPU's memory. A run whose stated deployment cannot hold its weights was measured on
another one (a tensor parallel size or a weight format left unstated), and every comparison with it
would be wrong, so it is refused naming what to state; so is a setting its engine does not take (a host KV
tier or offload flag of another engine, a KV cache dtype it cannot run, an engine setting its launcher has no flag
for), a KTransformers release or ``--kt-method`` with no CPU path, a
speculative method the model or engine cannot draft with, and an EAGLE-3 run whose draft is neither named nor
catalogued, or cannot run on its engine or pipeline (``check_stated``), a deployment ``fit`` refuses (tensor
parallel over more GPUs than stated, a weight format the engine does not load, experts spread where there are none
to spread), and a context shorter than a
measured request. A deployment the planner
reckons too tight for its KV cache is stored: the run says it served, and ``compare`` shows why no
prediction is made."""

from __future__ import annotations

from inferplan.catalog.flags_schema import check_choice
from inferplan.catalog.loader import Catalog
from inferplan.errors import InferplanError, InvalidScenarioError, UnsupportedSettingError
from inferplan.memory.fit import fit
from inferplan.memory.kt_host import kt_expert_format
from inferplan.memory.eagle3 import eagle3_memory
from inferplan.memory.mtp import with_speculative
from inferplan.memory.resolve import resolve_model
from inferplan.memory.offload import check_offload_flags
from inferplan.memory.precision import check_kv_dtype
from inferplan.performance.run_record import RUN_SETTINGS, UserRun, run_deployment
from inferplan.units import GB


# the fields of a deployment ``fit`` refuses that no engine launches (tensor parallel over more GPUs than stated, a
# weight format the engine does not load, experts spread on a dense model or by an engine that spreads none: a run so
# stated would match no deployment fit, perf or plan lays out), unlike one the planner lacks a figure for (the
# host's memory)
UNLAUNCHABLE = frozenset({"gpus", "quantization", "enable_expert_parallel"})


def check_holds_weights(catalog: Catalog, run: UserRun) -> None:
    _check_context(run)
    d = run_deployment(run)
    try:
        planned = fit(d, catalog)
    except InferplanError as exc:
        if isinstance(exc, InvalidScenarioError) and exc.field in UNLAUNCHABLE:  # refused as fit refuses it
            raise InvalidScenarioError(f"the stated deployment cannot have served the run: {exc}", field=exc.field,
                                       allowed=exc.allowed) from None
        return  # a deployment the planner cannot reason about (an offload with no host memory stated): compare says why
    if planned.weights_bytes_per_gpu <= planned.gpu_memory_bytes:
        return
    raise InvalidScenarioError(
        f"{run.model} in {run.quantization} on {run.gpus}× {run.accelerator} as TP {run.tensor_parallel_size} × PP "
        f"{run.pipeline_parallel_size} puts {planned.weights_bytes_per_gpu / GB:.1f} GB of weights on a GPU of "
        f"{planned.gpu_memory_bytes / GB:.1f} GB: the run cannot have been served so; state the split it ran with "
        "(tensor_parallel_size, pipeline_parallel_size) and its quantization", field="tensor_parallel_size",
        names=("tensor_parallel_size", "pipeline_parallel_size", "quantization"),
        allowed="the split and weight format the run used")


def _check_context(run: UserRun) -> None:
    """A stated context shorter than a measured request's mean lengths: the engine would have refused those requests."""
    if run.max_model_len is None:
        return
    longest = max(run.points, key=lambda p: p.input_tokens + p.output_tokens)
    if longest.input_tokens + longest.output_tokens > run.max_model_len:
        raise InvalidScenarioError(
            f"max_model_len {run.max_model_len:,} is shorter than a measured request ({longest.input_tokens:,} + "
            f"{longest.output_tokens:,} tokens at concurrency {longest.concurrency}): the engine would have refused it",
            field="max_model_len", allowed=f"at least {longest.input_tokens + longest.output_tokens:,} tokens: the context "
            "the run was launched with")


def check_stated(catalog: Catalog, run: UserRun) -> None:
    """Refuse what the run states that its engine, model or KTransformers release cannot have run, naming
    the field (``speculative_method``, ``draft_model``, ``hicache_ratio``, ``kt_release``, ``max_num_seqs`` …) and
    what is allowed: an EAGLE-3 run names its draft, or its model has one catalogued draft, which runs on its engine."""
    d = run_deployment(run.model_copy(update={"speculative_method": None}))
    check_offload_flags(d, list(catalog.engines), catalog.engine(run.engine))
    check_settings(catalog, run)
    if run.kt_release is not None or run.kt_method is not None:
        kt_expert_format(catalog, run.kt_release, run.kt_method, run.quantization)
    drafted = with_speculative(catalog, d, run.speculative_tokens, run.speculative_method, run.draft_model)
    if drafted.eagle3_draft:  # a catalogued draft on an engine its publisher does not show it on, or under a pipeline
        spec = resolve_model(catalog, run.model)
        eagle3_memory(catalog, drafted, spec, catalog.engine(run.engine).id, run.pipeline_parallel_size)


def check_settings(catalog: Catalog, run: UserRun) -> None:
    """Refuse an engine setting (``RUN_SETTINGS``) the run's engine cannot have been started with: a KV cache
    dtype it does not run, a setting its launcher has no flag for, or a value its flag does not accept (``deploy``'s
    flag records, ``flags_schema.check_choice``)."""
    if run.kv_cache_dtype is not None:
        check_kv_dtype(catalog, run.engine, run.kv_cache_dtype)
    engine = catalog.engine(run.engine)
    for setting in (s for s in RUN_SETTINGS if s != "kv_cache_dtype" and getattr(run, s) is not None):
        if not _takes(catalog, engine.id, setting):
            takers = [e.id for e in catalog.engines if _takes(catalog, e.id, setting)]
            raise InvalidScenarioError(f"{engine.name} has no launch flag for {setting}", field=setting,
                                       allowed=f"leave it out, or engine {' | '.join(takers) or 'none'}")
        check_choice(catalog, engine.id, setting, getattr(run, setting))


def _takes(catalog: Catalog, engine: str, setting: str) -> bool:
    from inferplan.deploy.command import engine_takes

    try:
        return engine_takes(catalog, engine, setting)
    except UnsupportedSettingError:  # an engine with no launch flags on record
        return False
