"""Weight memory an engine's MoE kernel adds on top of the checkpoint for an expert format it emulates.

vLLM runs MXFP4 experts on GPUs without native MXFP4 with the kernel its release picks for the model,
the GPU generation and the install (``catalog/data/engine_moe_kernels.yaml``): Marlin allocates every
expert matrix padded to its tile multiples (gpt-oss: hidden 2880 -> 3072, intermediate 2880 -> 2944 at
TP 1), the Triton path keeps the checkpoint's shapes and holds the block scales twice. gpt-oss's
experts (GptOssMxfp4MoEMethod) take the Triton path on Hopper where the install has triton_kernels;
DeepSeek-V4's (Mxfp4MoEMethod) have their own backend list, which on Hopper ends at Marlin.
"""

from __future__ import annotations

import math

from inferplan.catalog.architecture import Architecture
from inferplan.catalog.loader import Catalog
from inferplan.catalog.moe_kernels import moe_kernel
from inferplan.catalog.schema import Accelerator
from inferplan.units import GiB


def padding_factor(hidden: int, intermediate_share: int, hidden_multiple: int, intermediate_multiple: int) -> float:
    """Padded over checkpoint elements of an expert's matrices: gate_up (2 x intermediate x hidden) and
    down (hidden x intermediate) are both rounded up in the same two dimensions."""
    h = math.ceil(hidden / hidden_multiple) * hidden_multiple
    i = math.ceil(intermediate_share / intermediate_multiple) * intermediate_multiple
    return h * i / (hidden * intermediate_share)


def extra_weight_bytes(catalog: Catalog, engine: str, quant_id: str, accel: Accelerator, expert_bytes_per_gpu: float,
                       *, arch: Architecture | None = None, tp: int = 1, expert_parallel: bool = False,
                       release: str | None = None, kernel: str | None = None) -> tuple[float, str | None]:
    """Bytes per GPU the MoE kernel of ``engine`` at ``release`` allocates beyond ``expert_bytes_per_gpu``
    of checkpoint experts on ``accel`` (``kernel``: the one the install ran, else the release's rule),
    and a note naming the kernel; 0 where the GPU runs the format natively or no kernel is described."""
    fmt = catalog.quantization(quant_id).native_format
    if not expert_bytes_per_gpu or fmt is None or fmt in accel.native_formats:
        return 0.0, None
    picked = moe_kernel(catalog, engine, fmt, accel.architecture, release, kernel,
                        model_type=arch.model_type if arch is not None else None)
    if picked is None:
        return 0.0, None
    k, rule = picked
    factor = 1.0
    if arch is not None and arch.moe is not None and arch.moe.expert_intermediate_size:
        share = arch.moe.expert_intermediate_size // (1 if expert_parallel else tp)
        factor = padding_factor(arch.hidden_size, max(share, 1), k.hidden_multiple, k.intermediate_multiple)
    copies = catalog.constant(k.extra_scale_copies_constant) if k.extra_scale_copies_constant else 0.0
    bits = catalog.quantization(fmt).bits_per_weight.value  # the native format's block: 4-bit values + a scale
    scale_share = (bits - 4) / bits  # the scale's share of each block
    extra = expert_bytes_per_gpu * (factor - 1.0) + copies * expert_bytes_per_gpu * factor * scale_share
    if not extra:
        return 0.0, None
    why = f"the {rule.id} rule: {rule.install}" if rule else "as the deployment names it"
    parts = [f"experts padded x{factor:.4f}"] if factor != 1.0 else []
    if copies:
        parts.append(f"{copies:g} extra copy of the expert block scales")
    return extra, (f"{engine} runs the {fmt} experts on {accel.name} with {k.name} ({why}): "
                   f"{', '.join(parts)}: +{extra / GiB:.2f} GiB per GPU")


def workspace_bytes(catalog: Catalog, engine: str, quant_id: str, accel: Accelerator, tokens: int, *,
                    arch: Architecture | None, tp: int = 1, expert_parallel: bool = False, release: str | None = None,
                    kernel: str | None = None) -> tuple[float, str | None]:
    """Bytes per GPU of the workspace the release's MoE kernel keeps after a forward pass of ``tokens``
    tokens (its start-up profile: max_num_batched_tokens), where its rule describes one, and a note; 0
    where the format runs natively, its rule states no workspace or ``kernel`` names another kernel."""
    fmt = catalog.quantization(quant_id).native_format
    if fmt is None or fmt in accel.native_formats or arch is None or arch.moe is None:
        return 0.0, None
    picked = moe_kernel(catalog, engine, fmt, accel.architecture, release, model_type=arch.model_type)
    if picked is None or picked[1] is None or picked[1].workspace is None or kernel not in (None, picked[0].id):
        return 0.0, None
    k, rule = picked
    ws = rule.workspace
    share = max(arch.moe.expert_intermediate_size // (1 if expert_parallel else tp), 1)
    inter = math.ceil(share / k.intermediate_multiple) * k.intermediate_multiple
    hidden = math.ceil(arch.hidden_size / k.hidden_multiple) * k.hidden_multiple
    topk = arch.moe.experts_per_token
    elements = tokens * topk * (max(inter, hidden) + max(2 * inter, hidden))
    total = elements * ws.element_bytes
    return total, (f"{engine}'s {k.name} MoE kernel keeps its workspace after the start-up profile ({rule.id}: "
                   f"{tokens} tokens × top-{topk} × (max({inter}, {hidden}) + max(2 × {inter}, {hidden})) × "
                   f"{ws.element_bytes:g} B, {', '.join(ws.sources)}): +{total / GiB:.2f} GiB in the activation peak")
