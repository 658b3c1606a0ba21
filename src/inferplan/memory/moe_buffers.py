"""The fused-MoE kernels' intermediate caches in vLLM's start-up profile, by the memory rule's data
(``ActivationProfile.moe_buffers``, schema in ``catalog/moe_profile.py``).

One MoE layer's call holds tokens x top-k x (max(2I, H) + I) elements of the activations' dtype (I the
GPU's share of an expert's intermediate size, whole experts under expert parallelism; H the experts' input
width: the hidden size, or a LatentMoE model's latent width),
for at most the kernel's chunk of tokens, plus a tokens x H output where the kernel does not write in
place. They are freed when the layer returns, so they meet the sampler pass only in the larger of the two.
The modular kernel's workspaces (vLLM 0.17 on) hold tokens x top-k x (max(I, H) + max(2I, H)) elements for
Marlin's and gated Triton experts (max(I, H) twice for Triton's plain activations; moe_layout.modular_workspace),
the output inside workspace13, in the workspace manager's buffer, which is kept: they add to the peak.
Emulated experts dequantize the GPU's experts of the layer, w13 then w2, and free the copies when it returns:
the peak is the larger of w13's dequantization and the dequantized w13 beside w2's, whatever the tokens.
"""

from __future__ import annotations

from typing import NamedTuple

from inferplan.catalog.accelerator_schema import Accelerator
from inferplan.catalog.architecture import Architecture
from inferplan.catalog.memory_rules import MemoryRule, parse_engine_version, release_key
from inferplan.catalog.moe_profile import MoeKernelBuffers, MoeProfileBuffers
from inferplan.memory.moe_layout import expert_batch, expert_input_width, modular_workspace
from inferplan.units import GiB


class MoeCaches(NamedTuple):
    """One MoE layer's buffers in the profile's dummy forward: bytes per GPU, a note (None: none described),
    and whether they stay allocated after the layer's call (the workspace manager's) or are freed."""

    bytes_per_gpu: float = 0.0
    note: str | None = None
    kept: bool = False


def _covering(rule: MemoryRule, release: str | None) -> MoeProfileBuffers | None:
    """The rule's MoE buffers entry at ``release`` (None: none; the entries name the releases read)."""
    if release is None or not rule.activation.moe_buffers:
        return None
    try:
        key = release_key(parse_engine_version(release)[0])
    except ValueError:
        return None
    for entry in rule.activation.moe_buffers:
        if release_key(entry.first_release) <= key <= release_key(entry.last_release):
            return entry
    return None


def _kernel(entry: MoeProfileBuffers, quant_id: str | None, accel: Accelerator,
            expert_parallel: bool) -> MoeKernelBuffers | None:
    return next((k for k in entry.kernels if quant_id in k.quantizations
                 and k.runs_on(accel.architecture, accel.software, expert_parallel=expert_parallel)), None)


def moe_profile_bytes(rule: MemoryRule, arch: Architecture | None, *, accel: Accelerator, tokens: int, tp: int,
                      release: str | None, quant_id: str | None, expert_parallel: bool = False,
                      data_parallel: int = 1) -> MoeCaches:
    """Bytes per GPU of one MoE layer's buffers in the profile's dummy forward of ``tokens`` tokens per
    data-parallel rank (``data_parallel``: the ranks whose tokens meet on the experts, memory/expert_split.py;
    gathered where the release's entry says its dispatch all-gathers them), a note, and whether they are kept;
    0 and None where the model has no experts, the release is not covered or the experts' quantization runs a
    kernel the rule does not describe on ``accel``."""
    if arch is None or arch.moe is None or not arch.moe.expert_intermediate_size:
        return MoeCaches()
    entry = _covering(rule, release)
    kernel = _kernel(entry, quant_id, accel, expert_parallel) if entry is not None else None
    if kernel is None:
        return MoeCaches()
    gathered, share, said = expert_batch(arch, tokens=tokens, tp=tp, expert_parallel=expert_parallel,
                                         data_parallel=data_parallel if entry.data_parallel_gather else 1)
    width, topk = expert_input_width(arch), arch.moe.experts_per_token
    batch = min(gathered, kernel.chunk_tokens) if kernel.chunk_tokens else gathered
    chunk = f"a chunk of {batch:,} of {said}" if batch < gathered else f"{said} at once"
    if kernel.shapes == "dequantized_experts":
        return _dequantized(arch, kernel, entry.element_bytes, share=share, width=width,
                            ranks=tp * (data_parallel if entry.data_parallel_gather else 1),
                            expert_parallel=expert_parallel)
    if kernel.kept:
        total, shown = modular_workspace(kernel.workspace_shapes, tokens=batch, topk=topk, inter=share, width=width,
                                         element_bytes=entry.element_bytes, gate_rows=arch.mlp_projections - 1,
                                         grouped=topk if expert_parallel else 1)
        return MoeCaches(total, f"{kernel.kernel} MoE workspaces kept after the profile, for {chunk}: {batch:,} × "
                                f"{shown} = {total / GiB:.2f} GiB", True)
    caches = batch * topk * (max(2 * share, width) + share)
    output = gathered * width if kernel.output_copy else 0
    total = entry.element_bytes * (caches + output)
    shown = f" + {gathered:,} × {width} output" if output else ""
    return MoeCaches(total, f"{kernel.kernel} MoE caches for {chunk}: ({batch:,} × top-{topk} × (max(2 × {share}, "
                            f"{width}) + {share}){shown}) × {entry.element_bytes:g} B = {total / GiB:.2f} GiB")


def _dequantized(arch: Architecture, kernel: MoeKernelBuffers, element_bytes: float, *, share: int, width: int,
                 ranks: int, expert_parallel: bool) -> MoeCaches:
    """One layer's experts dequantized in the call: w13's dequantization, or its copy beside w2's, the larger."""
    experts = -(-arch.moe.num_experts // ranks) if expert_parallel else arch.moe.num_experts
    gate_rows = arch.mlp_projections - 1
    w13, w2 = experts * gate_rows * share * width, experts * share * width
    peak = kernel.dequant_peak_bytes_per_weight
    total = max(peak * w13, element_bytes * w13 + peak * w2)
    return MoeCaches(total, f"{kernel.kernel}: {experts} experts' weights dequantized per forward, max({peak:g} B × "
                            f"{w13:,} w13, {element_bytes:g} B × {w13:,} + {peak:g} B × {w2:,} w2) = "
                            f"{total / GiB:.2f} GiB")
