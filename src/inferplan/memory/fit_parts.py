"""Parts of the memory fit (``memory/fit.py``) that read the deployment and its hardware alone: the notes on a
tensor-parallel reach past the hardware's link and on a lowered memory fraction, and the weight bytes no layout
of the model can keep off its GPUs.
"""

from __future__ import annotations

import dataclasses

from inferplan.catalog.loader import Catalog
from inferplan.catalog.models import ModelSpec
from inferplan.inputs.deployment import Deployment
from inferplan.memory.hardware import Hardware
from inferplan.memory.kt_offload import FIELD as KT_FIELD
from inferplan.memory.draft_model import DraftModelMemory, draft_model_notes
from inferplan.memory.eagle3 import Eagle3Memory, eagle3_notes
from inferplan.memory.fit_weights import GpuWeights
from inferplan.memory.layout import ParallelPlan, host_gpus, tp_reach
from inferplan.memory.offload import all_layers_on_gpu
from inferplan.memory.precision import weight_quantization
from inferplan.memory.weights import weight_bytes


def network_note(hw: Hardware, plan: ParallelPlan) -> list[str]:
    """A note when tensor parallelism reaches past the GPUs the hardware joins and no network between
    them is known: a memory answer for a layout `perf` refuses."""
    reach = tp_reach(hw)
    if hw.scale_out is not None or plan.tensor_parallel_size <= reach:
        return []
    return [f"tensor parallelism over {plan.tensor_parallel_size} GPUs goes past the {reach} that "
            f"{hw.system.name if hw.system else hw.accel.name} joins, and the catalogue knows no network between "
            "them: this is the memory answer only; `inferplan perf` refuses the layout"]


def scale_note(engine, scale, settings) -> str:
    """A note that the engine lowers its memory fraction above a context length, with the fraction planned."""
    return (f"{engine.name} runs the {scale.attention_backend} attention backend by default on {scale.software} and "
            f"lowers its memory fraction (its own, or the one it is given) x {scale.scale.value:g} above "
            f"{scale.above_context_tokens.value:,.0f} tokens of context: {settings.memory_fraction:.3f} planned")


def weights_floor_bytes(catalog: Catalog, d: Deployment, spec: ModelSpec, hw: Hardware) -> float:
    """Weight bytes that some GPU of any layout holds at least ``1/gpus`` of: every weight but the
    embedding table (an engine may keep it on the host); 0 when weights may be offloaded to host RAM."""
    engine = catalog.engine(d.engine)
    arch = None if spec.architecture_is_proxy else spec.architecture
    ngl_offloads = d.n_gpu_layers is not None and (arch is None or not all_layers_on_gpu(d.n_gpu_layers, arch.num_layers))
    if ngl_offloads or d.n_cpu_moe or d.cpu_offload_gb or KT_FIELD in engine.offload_settings:
        return 0.0
    quant, _ = weight_quantization(catalog, d, spec, hw.accel, engine.id)
    w = weight_bytes(spec, quant)
    return w.total_bytes - w.embedding_bytes


def copies_gpus(hw: Hardware, size: int) -> int:
    """GPUs that copies of a ``size``-GPU instance take on ``hw``: each within one host where one holds it."""
    host = host_gpus(hw)
    copies = hw.gpus // size if size > host else hw.gpus // host * (host // size) + hw.gpus % host // size
    return copies * size


def with_draft_weights(w: GpuWeights, eagle: Eagle3Memory | None, small: DraftModelMemory | None, tp: int) -> GpuWeights:
    """``w`` with a draft head's (EAGLE-3) and a separate draft model's weights per GPU of ``tp``, and their notes."""
    if eagle is not None:
        w = dataclasses.replace(w, per_gpu=w.per_gpu + eagle.weight_bytes_per_gpu(tp), notes=[*w.notes, *eagle3_notes(eagle, tp)])
    if small is not None:
        w = dataclasses.replace(w, per_gpu=w.per_gpu + small.weight_bytes_per_gpu(tp),
                                notes=[*w.notes, *draft_model_notes(small, tp)])
    return w
