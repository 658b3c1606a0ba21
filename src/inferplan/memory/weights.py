"""Weight bytes: from the real checkpoint size when known, else parameters × bits.

Quantized GPU formats (FP8, NVFP4, MXFP4, INT4 …) quantize the linear layers (attention, MLP,
experts); token embeddings, lm_head, norms and routers stay at 16 bits. GGUF k-quants also
quantize the embeddings. A format's ``bits_per_weight`` includes its block scales.
"""

from __future__ import annotations

from dataclasses import dataclass

from inferplan.catalog.models import ModelSpec
from inferplan.catalog.schema import Quantization
from inferplan.errors import InvalidScenarioError
from inferplan.memory.params import ParamBreakdown, count_params

UNQUANTIZED_BITS = 16  # embeddings, lm_head, norms and routers in GPU quantized checkpoints


@dataclass(frozen=True)
class WeightEstimate:
    total_bytes: float  # one full copy of the model
    expert_bytes: float  # part of it in routed experts (what expert parallelism shards)
    replicated_bytes: float  # part every tensor-parallel rank keeps whole (norms, small projections)
    quantization: str
    method: str  # "checkpoint size" or "parameters × bits"
    assumptions: tuple[str, ...] = ()


def _parts_bytes(params: ParamBreakdown, quant: Quantization) -> tuple[float, float]:
    """(total, expert) bytes computed from the parameter breakdown."""
    bits = quant.bits_per_weight.value
    edge_bits = bits if quant.quantizes_embeddings else UNQUANTIZED_BITS
    edge = (params.embedding + params.lm_head) * edge_bits / 8
    small = (params.norms + params.router) * UNQUANTIZED_BITS / 8
    linear = params.linear * bits / 8
    return edge + small + linear, params.experts * bits / 8


def weight_bytes(spec: ModelSpec, quant: Quantization) -> WeightEstimate:
    """Bytes of weights for one copy of ``spec`` at ``quant``."""
    arch = None if spec.architecture_is_proxy else spec.architecture
    params = count_params(arch) if arch else None
    ckpt = spec.checkpoint(quant.id)
    if ckpt is not None:
        assumptions = [f"weights = published {ckpt.name} checkpoint size ({ckpt.source})"]
        total = ckpt.size_bytes
        expert = 0.0
        if params is not None:
            computed_total, computed_expert = _parts_bytes(params, quant)
            if params.mtp:
                mtp_bytes = params.mtp * total / (params.total + params.mtp)
                total -= mtp_bytes
                assumptions.append(
                    f"multi-token-prediction layers ({params.mtp / 1e9:.1f}B parameters) are in the "
                    "checkpoint but not loaded without speculative decoding"
                )
            expert = total * computed_expert / computed_total if computed_total else 0.0
        if spec.architecture and spec.architecture.has_vision_tower:
            assumptions.append("checkpoint size includes the vision encoder, which the engine also loads")
        return WeightEstimate(total, expert, params.norms * 2 if params else 0.0, quant.id, "checkpoint size", tuple(assumptions))
    if params is not None:
        total, expert = _parts_bytes(params, quant)
        note = (
            f"weights = {params.total / 1e9:.2f}B parameters: linear layers at "
            f"{quant.bits_per_weight.value:g} bits ({quant.id}), "
            + ("embeddings too" if quant.quantizes_embeddings else "embeddings, lm_head, norms and routers at 16 bits")
        )
        assumptions = [note]
        if spec.architecture and spec.architecture.has_vision_tower:
            assumptions.append("vision encoder not counted: config.json does not size it")
        return WeightEstimate(total, expert, params.norms * 2, quant.id, "parameters × bits", tuple(assumptions))
    if spec.total_params is None:
        raise InvalidScenarioError(
            f"{spec.name} has no architecture, no parameter count and no {quant.id} checkpoint size",
            field="--quantization",
            allowed=", ".join(c.quantization for c in spec.checkpoints) or "none known",
        )
    total = spec.total_params * quant.bits_per_weight.value / 8
    expert_share = 0.0
    return WeightEstimate(
        total,
        expert_share,
        0.0,
        quant.id,
        "parameters × bits",
        (
            f"weights = {spec.total_params / 1e9:.0f}B published parameters × "
            f"{quant.bits_per_weight.value:g} bits: no {quant.id} checkpoint size and no config.json; "
            "real mixed-precision checkpoints are larger",
        ),
    )
