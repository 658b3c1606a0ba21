"""The fused-MoE kernels' intermediate caches in vLLM's start-up profile, by the memory rule's data
(``ActivationProfile.moe_buffers``, schema in ``catalog/moe_profile.py``).

One MoE layer's call holds tokens x top-k x (max(2I, H) + I) elements of the activations' dtype (I the
GPU's share of an expert's intermediate size, whole experts under expert parallelism; H the hidden size),
for at most the kernel's chunk of tokens, plus a tokens x H output where the kernel does not write in
place. They are freed when the layer returns, so they meet the sampler pass only in the larger of the two.
"""

from __future__ import annotations

from inferplan.catalog.accelerator_schema import Accelerator
from inferplan.catalog.architecture import Architecture
from inferplan.catalog.memory_rules import MemoryRule, parse_engine_version, release_key
from inferplan.catalog.moe_profile import MoeKernelBuffers, MoeProfileBuffers
from inferplan.units import GiB


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


def _kernel(entry: MoeProfileBuffers, quant_id: str | None, accel: Accelerator) -> MoeKernelBuffers | None:
    return next((k for k in entry.kernels
                 if quant_id in k.quantizations and k.runs_on(accel.architecture, accel.software)), None)


def moe_profile_bytes(rule: MemoryRule, arch: Architecture | None, *, accel: Accelerator, tokens: int, tp: int,
                      release: str | None, quant_id: str | None, expert_parallel: bool = False) -> tuple[float, str | None]:
    """Bytes per GPU of one MoE layer's intermediate caches in the profile's dummy forward of ``tokens``
    tokens, and a note; 0 and None where the model has no experts, the release is not covered or the
    experts' quantization runs a kernel the rule does not describe on ``accel``."""
    if arch is None or arch.moe is None or not arch.moe.expert_intermediate_size:
        return 0.0, None
    entry = _covering(rule, release)
    kernel = _kernel(entry, quant_id, accel) if entry is not None else None
    if kernel is None:
        return 0.0, None
    share = max(arch.moe.expert_intermediate_size // (1 if expert_parallel else tp), 1)
    hidden, topk = arch.hidden_size, arch.moe.experts_per_token
    batch = min(tokens, kernel.chunk_tokens) if kernel.chunk_tokens else tokens
    caches = batch * topk * (max(2 * share, hidden) + share)
    output = tokens * hidden if kernel.output_copy else 0
    total = entry.element_bytes * (caches + output)
    chunk = f"a chunk of {batch:,} of {tokens:,} tokens" if batch < tokens else f"{tokens:,} tokens at once"
    shown = f" + {tokens:,} × {hidden} output" if output else ""
    return total, (f"{kernel.kernel} MoE caches for {chunk}: ({batch:,} × top-{topk} × (max(2 × {share}, {hidden}) + "
                   f"{share}){shown}) × {entry.element_bytes:g} B = {total / GiB:.2f} GiB")
