"""How a deployment's GPUs are laid out: tensor × pipeline × data parallel.

A stated layout is checked and completed: data-parallel copies fill the GPUs the instance leaves.
A deployment that states a GPU count but no parallel sizes is laid out as its engine is launched on
those GPUs: one instance across all of them (``engines.yaml`` ``multi_gpu_split``). vLLM, SGLang
and TensorRT-LLM split tensors: tensor parallel over every GPU where that count splits the widths
the engine divides over its ranks (memory/tp_split.py) and the GPUs reach each other over their
link, else tensor parallel over the largest count that does, with pipeline stages for the rest (the vLLM guide's "TP = GPUs per node, PP = nodes").
llama.cpp's default layer split gives each GPU a slice of the layers: pipeline parallel. That
holds within one host (``host_gpus``); a count beyond one host runs copies of the smallest
instance that holds the model instead (``memory.fit``), as one instance split over every host
would pipeline a model one GPU holds across the network.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from inferplan.catalog.flag_scope import stated_release
from inferplan.catalog.flags_schema import EngineFlags, flags_for
from inferplan.catalog.loader import Catalog
from inferplan.catalog.models import ModelSpec
from inferplan.catalog.engine_schema import EngineDefaults
from inferplan.catalog.quantization_schema import Quantization
from inferplan.catalog.schema import System
from inferplan.errors import InvalidScenarioError
from inferplan.inputs.deployment import Deployment
from inferplan.memory.hardware import Hardware, resolve_hardware
from inferplan.memory.precision import planned_weight_format
from inferplan.memory.resolve import resolve_model
from inferplan.memory.tp_split import tp_splits

LAYOUT_FIELDS = ("tensor_parallel_size", "pipeline_parallel_size", "data_parallel_size")


class ParallelPlan(BaseModel):
    model_config = ConfigDict(frozen=True, defer_build=True)

    tensor_parallel_size: int
    pipeline_parallel_size: int
    data_parallel_size: int
    expert_parallel: bool
    gpus: int


def instance_gpus(d: Deployment) -> int:
    """GPUs of one instance (one launch command, one replica cell): TP × PP, times DP when the engine runs
    the data-parallel ranks (those that share its experts)."""
    return d.tensor_parallel_size * d.pipeline_parallel_size * (d.data_parallel_size or 1)


def tp_reach(hw: Hardware) -> int:
    """GPUs tensor parallelism spans without a network: the fast-link domain, or a PCIe server's
    cards where they have no network between servers."""
    return hw.domain_gpus if hw.scale_out is not None or not hw.pcie_server_gpus else hw.pcie_server_gpus


def host_gpus(hw: Hardware) -> int:
    """GPUs one host holds, the most one instance is laid out over before it spans the network: a
    system's accelerators (a rack system's: its scale-up domain), else the accelerator's scale-up
    domain or the PCIe server its cards sit in."""
    if hw.system is not None:
        return hw.system.accelerator_count
    return max(hw.domain_gpus, hw.pcie_server_gpus, 1)


def rack_of(catalog: Catalog, hw: Hardware) -> System | None:
    """The rack a bare GPU's scale-up domain is, where that rack records its OS hosts (a GB200 with the 72-GPU
    domain sits in an NVL72, whose OS hosts are its compute trays); None: its domain is one host's."""
    return next((s for s in catalog.systems if s.os_host_gpus is not None
                 and s.accelerator == hw.accel.id and s.scale_up_domain_gpus == hw.domain_gpus), None)


def os_host_gpus(catalog: Catalog, hw: Hardware) -> int:
    """GPUs one operating-system host sees, the most one process (an ``ollama serve``) runs on: a rack's compute
    tray where the catalogue records it (``os_host_gpus``), else ``host_gpus``."""
    rack = hw.system if hw.system is not None else rack_of(catalog, hw)
    tray = rack.os_host_gpus if rack is not None else None
    return int(tray.value) if tray is not None else host_gpus(hw)


def layout_stated(d: Deployment) -> bool:
    """Whether the deployment names its layout (any parallel size, or expert parallelism)."""
    return bool(d.model_fields_set & set(LAYOUT_FIELDS)) or d.enable_expert_parallel or (
        d.tensor_parallel_size * d.pipeline_parallel_size > 1 or d.data_parallel_size is not None)


def parallel_plan(d: Deployment, spec: ModelSpec, engine: EngineDefaults, hw: Hardware,
                  flags: EngineFlags | None = None, quant: Quantization | None = None) -> tuple[ParallelPlan, str | None]:
    """The layout of ``d`` on ``hw``, and a sentence saying how it was chosen when ``d`` states GPUs
    but no parallel sizes (None otherwise); ``flags``, the engine's launch record, rules out splits
    its launcher cannot start, and ``quant``, the weights' format, tensor-parallel sizes its blocks
    do not split into."""
    if d.gpus is None or hw.gpus == 1 or layout_stated(d):
        return stated_plan(d, hw.gpus), None
    split = launch_split(spec, engine, hw, flags, quant, stated_release(d))
    if split is None:
        return stated_plan(d, hw.gpus), (f"{hw.gpus} GPUs: {hw.gpus} data-parallel copies, as no tensor × pipeline "
                                         "layout of one instance that the engine launches spans them (no parallel "
                                         "sizes given)")
    tp, pp = split
    plan = ParallelPlan(tensor_parallel_size=tp, pipeline_parallel_size=pp, data_parallel_size=1,
                        expert_parallel=False, gpus=hw.gpus)
    return plan, f"{hw.gpus} GPUs: one instance, {describe_split(tp, pp)} (no parallel sizes given)"


def as_launched(d: Deployment, catalog: Catalog) -> Deployment:
    """``d`` with the layout ``parallel_plan`` chooses written into its parallel sizes, for a reader
    of the sizes themselves (a launch command): unchanged when it states them or no GPU count. An
    engine whose launcher has no data-parallel flag gets no data-parallel size: one launch runs one
    copy, and the copies are launched side by side."""
    if d.gpus is None or layout_stated(d):
        return d
    flags = flags_for(catalog, d.engine)
    spec = resolve_model(catalog, d.model)
    plan, _ = parallel_plan(d, spec, catalog.engine(d.engine), resolve_hardware(catalog, d), flags,
                            planned_weight_format(catalog, d, spec))
    ranks = flags is None or "data_parallel_size" in flags.settings  # else each copy is launched on its own
    return d.model_copy(update={"tensor_parallel_size": plan.tensor_parallel_size,
                                "pipeline_parallel_size": plan.pipeline_parallel_size,
                                "data_parallel_size": plan.data_parallel_size if ranks else None})


def cell_widths(narrowest: int, most: int, *, fills: tuple[int, ...] = (), doubled_up_to: int | None = None) -> list[int]:
    """The widths of one parallel dimension to try for a replica cell, narrowest first: ``narrowest``
    doubled while it stays within ``most`` (and ``doubled_up_to``, where a caller bounds the
    doubling), and each width of ``fills`` between ``narrowest`` and ``most`` — the fast-link domain,
    a whole system — which the doubling misses when it is no power of two (a 72-GPU rack: doubling
    stops at 64 and leaves 8 GPUs idle). ``economics.capacity`` (plan) and ``search.space`` both
    take their widths from here."""
    top = most if doubled_up_to is None else min(most, doubled_up_to)
    out, width = set(), narrowest
    while 0 < width <= top:
        out.add(width)
        width *= 2
    return sorted(out | {f for f in fills if narrowest <= f <= most})


def describe_split(tp: int, pp: int) -> str:
    if pp == 1:
        return f"tensor parallel {tp}"
    return f"pipeline parallel {pp}" if tp == 1 else f"tensor parallel {tp} × pipeline parallel {pp}"


def launch_split(spec: ModelSpec, engine: EngineDefaults, hw: Hardware, flags: EngineFlags | None = None,
                 quant: Quantization | None = None, release: str | None = None) -> tuple[int, int] | None:
    """(TP, PP) of one instance over all of ``hw``'s GPUs as the engine splits a model by default;
    None when no split spans them (more pipeline stages than the model has layers, or none that the
    launcher of ``flags`` starts at ``release``)."""
    n = hw.gpus
    layers = spec.architecture.num_layers if spec.architecture and not spec.architecture_is_proxy else n
    launches = (lambda tp, pp: True) if flags is None else (  # noqa: E731
        lambda tp, pp: flags.launches_split(tp, pp, release))
    if engine.multi_gpu_split == "layer":
        return (1, n) if n <= layers and launches(1, n) else None
    reach = tp_reach(hw)
    for tp in range(min(n, reach), 0, -1):
        if n % tp == 0 and tp_splits(spec, engine, tp, quant=quant) and n // tp <= layers and launches(tp, n // tp):
            return tp, n // tp
    return None


def stated_plan(d: Deployment, gpus: int) -> ParallelPlan:
    """The stated TP × PP instance, copied data-parallel over the GPUs it leaves."""
    instance = d.tensor_parallel_size * d.pipeline_parallel_size
    if gpus < instance:
        raise InvalidScenarioError(
            f"TP {d.tensor_parallel_size} × PP {d.pipeline_parallel_size} needs {instance} GPUs, "
            f"only {gpus} given",
            field="gpus",
            allowed=f">= {instance}",
        )
    dp = d.data_parallel_size or gpus // instance
    if instance * dp != gpus:
        raise InvalidScenarioError(
            f"TP × PP × DP = {instance * dp} must equal the deployment's {gpus} GPUs",
            field="data_parallel_size",
            allowed=f"{gpus // instance}" if gpus % instance == 0 else "a divisor",
        )
    return ParallelPlan(
        tensor_parallel_size=d.tensor_parallel_size,
        pipeline_parallel_size=d.pipeline_parallel_size,
        data_parallel_size=dp,
        expert_parallel=d.enable_expert_parallel,
        gpus=gpus,
    )
