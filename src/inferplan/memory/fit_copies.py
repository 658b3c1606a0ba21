"""Where a deployment states no parallel sizes, the layouts its memory fit (``memory/fit.py``) tries beyond the
engine's own split of one instance: data-parallel copies of the smallest instance that holds the model over a
GPU count beyond one host or over a system named alone, one instance over a whole system that no smaller
instance fits, and the search for that smallest instance. Each plans a layout with ``fit_at``, the fit of one
stated layout without the search for a smaller one (``fit.py`` passes its own).
"""

from __future__ import annotations

import dataclasses
from typing import Callable

from inferplan.catalog.flag_scope import stated_release
from inferplan.catalog.flags_schema import flags_for
from inferplan.catalog.loader import Catalog
from inferplan.catalog.models import ModelSpec
from inferplan.catalog.mtp_rules import drafts_at_pipeline
from inferplan.inputs.deployment import Deployment
from inferplan.memory.engine_budget import device_total_bytes
from inferplan.memory.fit_parts import copies_gpus, weights_floor_bytes
from inferplan.memory.fit_plan import MemoryPlan
from inferplan.memory.hardware import Hardware
from inferplan.memory.layout import ParallelPlan, describe_split, host_gpus, launch_split, layout_stated, stated_plan
from inferplan.memory.precision import planned_weight_format
from inferplan.memory.state_pool import probe_pool_settings
from inferplan.memory.tp_split import tp_splits

FitAt = Callable[[Catalog, Deployment, ModelSpec, Hardware, ParallelPlan], MemoryPlan]  # the plan of one stated layout


def system_copies(catalog: Catalog, d: Deployment, spec: ModelSpec, hw: Hardware, one_gpu: MemoryPlan,
                  fit_at: FitAt) -> tuple[MemoryPlan, str] | None:
    """A system named with no GPU count and no parallel sizes runs data-parallel copies of one GPU each;
    where the model does not fit on one GPU, as many copies of the smallest power-of-two instance that
    holds it as the system has room for, the GPUs fewer than one more copy left idle; where no instance
    within the system holds it, the largest one it allows (``_whole_system``). None: the one-GPU copies
    stand."""
    smallest = one_gpu.result.smallest_fit  # of a power-of-two count: copies tile an HGX's 8 GPUs or an NVL72's 72
    if hw.system is None or d.gpus is not None or layout_stated(d) or one_gpu.result.fits:
        return None
    if smallest is None or smallest.gpus > hw.gpus:
        return _whole_system(catalog, d, spec, hw, one_gpu, fit_at)
    return _copies(catalog, d, spec, hw, smallest, f"{hw.system.name}: {hw.gpus} GPUs,", "", fit_at)


def host_copies(catalog: Catalog, d: Deployment, spec: ModelSpec, hw: Hardware,
                fit_at: FitAt) -> tuple[MemoryPlan, str] | None:
    """A GPU count beyond one host (``host_gpus``) with no parallel sizes runs data-parallel copies of the
    smallest power-of-two instance that holds the model, as the vLLM guide sizes one replica
    (eng-vllm-distributed-serving: GPUs, then nodes, until the model fits; tensor parallel within a node,
    pipeline stages across nodes only for a model one node does not hold). None: within one host, a stated
    layout, or an instance past one host of which no two copies fit the GPUs, where the engine's own split of
    one instance over all of them stands;
    so too where the copies would leave part of each of several systems idle, a GPU count a deployment of
    that system cannot state (64 of each GB200 NVL72's 72)."""
    host = host_gpus(hw)
    if d.gpus is None or hw.gpus <= host or layout_stated(d):
        return None
    smallest, _ = smallest_fit(catalog, d, spec, hw, fit_at, between=False)
    if smallest is None or smallest.gpus > host and 2 * smallest.gpus > hw.gpus or hw.system is not None and copies_gpus(hw, smallest.gpus) % host:
        return None
    what = f"one {hw.system.name}" if hw.system is not None else "one host"
    return _copies(catalog, d, spec, hw, smallest, f"{hw.gpus} GPUs, more than {what} holds ({host}):",
                   "; pipeline stages span hosts only for a model one host does not hold: state the parallel sizes "
                   "for another layout", fit_at)


def _copies(catalog: Catalog, d: Deployment, spec: ModelSpec, hw: Hardware, instance: ParallelPlan, lead: str,
            tail: str, fit_at: FitAt) -> tuple[MemoryPlan, str]:
    """The plan of data-parallel copies of ``instance`` on ``hw``, each within one host where one host holds
    it (``host_gpus``), the GPUs fewer than one more copy left idle; and the note that says so."""
    tp, pp, size = instance.tensor_parallel_size, instance.pipeline_parallel_size, instance.gpus
    used = copies_gpus(hw, size)  # a GPU count below the hardware's: the copies on part of it
    copies = used // size
    # the copies are launched apart, so no data-parallel size is stated (it follows from the GPUs): an engine's
    # data-parallel ranks that share the experts (moe_tp_spans_data_parallel) are those a launch states
    sized = d.model_copy(update={"tensor_parallel_size": tp, "pipeline_parallel_size": pp, "data_parallel_size": None,
                                 **({"gpus": used} if used < hw.gpus else {})})
    mp = fit_at(catalog, sized, spec, dataclasses.replace(hw, gpus=used), stated_plan(sized, used))
    idle = f" ({used} GPUs; {hw.gpus - used} left idle)" if used < hw.gpus else ""
    what = "one GPU each" if size == 1 else describe_split(tp, pp)
    return mp, (f"{lead} {copies} data-parallel {'copy' if copies == 1 else 'copies'} of {what}{idle}, the smallest "
                f"instance that holds the model (no parallel sizes given{tail})")


def _whole_system(catalog: Catalog, d: Deployment, spec: ModelSpec, hw: Hardware, one_gpu: MemoryPlan,
                  fit_at: FitAt) -> tuple[MemoryPlan, str] | None:
    """One instance over all of a system's GPUs, split as the engine launches it there (``launch_split``):
    the largest the system allows, planned where no instance within it holds the model, so that its
    shortfall and the changes suggested are those of the instance that comes closest. The smallest
    instance that holds the model (beyond the system) is kept from the one-GPU plan."""
    split = launch_split(spec, catalog.engine(d.engine), hw, flags_for(catalog, d.engine),
                         planned_weight_format(catalog, d, spec), stated_release(d))
    if split is None or split == (1, 1):
        return None
    tp, pp = split
    sized = d.model_copy(update={"tensor_parallel_size": tp, "pipeline_parallel_size": pp, "data_parallel_size": 1})
    mp = fit_at(catalog, sized, spec, hw, stated_plan(sized, hw.gpus))
    kept = {"smallest_fit": one_gpu.result.smallest_fit, "fewest_gpus_fit": one_gpu.result.fewest_gpus_fit}
    return (dataclasses.replace(mp, result=mp.result.model_copy(update=kept)),
            f"{hw.system.name}: {hw.gpus} GPUs, one instance of {describe_split(tp, pp)} over all of them, the largest "
            "the system allows: no instance within it holds the model (no parallel sizes given)")



def smallest_fit(catalog: Catalog, d: Deployment, spec: ModelSpec, hw: Hardware, fit_at: FitAt,
                 between: bool = True) -> tuple[ParallelPlan | None, ParallelPlan | None]:
    """Fewest GPUs that hold one instance the engine's launcher can start (engine_flags.yaml: a flag for
    each size above 1): of a power-of-two count (what tiles a system), and at any count the engine splits
    over (tensor parallel sizes that split the widths the engine divides, memory/tp_split.py; pipeline
    stages of at least a layer each). The powers of two are tried first; the counts between the largest that does not
    fit and the smallest that does are then tried in turn (unless not ``between``: the power of two is both),
    since a layer split (llama.cpp's default, vLLM's pipeline parallel) starts on three GPUs as well as on four."""
    limit = 1024
    # a pipeline stage holds a layer at least (a borrowed layout's layer count is not the model's)
    layers = spec.architecture.num_layers if spec.architecture and not spec.architecture_is_proxy else limit
    engine_spec = catalog.engine(d.engine)
    floor = weights_floor_bytes(catalog, d, spec, hw)
    total, _ = device_total_bytes(catalog, hw.accel, engine_spec)
    flags = flags_for(catalog, engine_spec.id)  # None: no launch record, every split stands
    quant = planned_weight_format(catalog, d, spec)

    def splits(gpus: int) -> list[tuple[int, int]]:
        """(TP, PP) of one instance on ``gpus`` GPUs that the launcher starts, in the order the engine
        prefers: pipeline first for an engine whose own split is by layers, else tensor parallel first."""
        found = [(tp, gpus // tp) for tp in range(1, min(gpus, hw.domain_gpus) + 1)
                 if gpus % tp == 0 and gpus // tp <= layers
                 and tp_splits(spec, engine_spec, tp, expert_parallel=d.enable_expert_parallel, quant=quant)
                 and (flags is None or flags.launches_split(tp, gpus // tp, stated_release(d)))]
        return found if engine_spec.multi_gpu_split == "layer" else sorted(found, key=lambda s: s[1])

    def holds(gpus: int) -> ParallelPlan | None:
        if floor / gpus > total:
            return None  # the weights alone overfill every GPU of this count
        most = engine_spec.max_instance_gpus(hw.accel.software)
        if most is not None and gpus > most:
            return None  # the engine's Metal back end runs one Apple GPU an instance
        for tp, pp in splits(gpus):
            if (d.mtp_draft or d.eagle3_draft) and not drafts_at_pipeline(catalog, engine_spec.id, pp):
                continue  # the engine does not start its draft under this pipeline
            plan = ParallelPlan(tensor_parallel_size=tp, pipeline_parallel_size=pp, data_parallel_size=1,
                                expert_parallel=d.enable_expert_parallel, gpus=gpus)
            trial = d.model_copy(update={"tensor_parallel_size": tp, "pipeline_parallel_size": pp, "gpus": gpus,
                                         "data_parallel_size": 1, **probe_pool_settings(pp)})
            if fit_at(catalog, trial, spec, hw, plan).result.fits:
                return plan
        return None

    gpus = 1
    while gpus <= limit:
        found = holds(gpus)
        if found is not None:
            fewer = (holds(n) for n in range(gpus // 2 + 1, gpus) if between)
            return found, next((p for p in fewer if p is not None), found)
        gpus *= 2
    return None, None
