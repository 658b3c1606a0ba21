"""Which tensor-parallel sizes an engine starts a model at.

An engine that splits tensors divides some of a model's widths evenly over the tensor-parallel
ranks and asserts at start-up that each quotient is whole (``engines.yaml``
``tensor_parallel_splits``, with the engine's source): the query heads, the key/value heads (or,
when TP is a multiple of them, each KV head held whole by TP / heads ranks), the dense and
shared-expert MLP width, and the routed experts' width unless expert parallelism spreads whole
experts; for a block-quantized weight format (``quantizations.yaml`` ``weight_block``, FP8 128x128)
an engine whose rules include ``weight_block`` also needs each rank's share of those MLP widths to
be whole blocks (the block count divided evenly); ``expert_weight_block``, of the routed experts'
width only. The routed experts' widths split over the GPUs of the MoE layers' tensor-parallel group:
TP, or TP × DP where the engine's group spans the data-parallel ranks a launch states
(``moe_tp_spans_data_parallel``, memory/expert_split.py). A layout the engine would refuse is refused
here, naming the width and the sizes it takes.
"""

from __future__ import annotations

from dataclasses import dataclass

from inferplan.catalog.architecture import Architecture, LayerKind
from inferplan.catalog.models import ModelSpec
from inferplan.catalog.engine_schema import EngineDefaults
from inferplan.catalog.quantization_schema import Quantization

# layers whose attention projects key/value heads (MLA keeps one latent every rank holds whole;
# linear-attention and Mamba mixers shard heads of their own, not checked here)
KV_HEAD_LAYERS = (LayerKind.FULL, LayerKind.SLIDING, LayerKind.SPARSE)
MAX_LISTED_TP = 1024  # the largest size an error lists


@dataclass(frozen=True)
class SplitWidth:
    """A width tensor parallelism splits: ``count`` of ``what``; ``replicates``: a size that is a
    multiple of ``count`` also starts (each one held whole by several ranks); ``experts``: the routed
    experts' width, split over the MoE layers' tensor-parallel group."""

    what: str
    count: int
    replicates: bool = False
    experts: bool = False

    def takes(self, tp: int) -> bool:
        return self.count % tp == 0 or (self.replicates and tp % self.count == 0)


def _mlp_widths(arch: Architecture, expert_parallel: bool) -> list[tuple[str, int]]:
    """(name, width) of the MLP widths tensor parallelism splits: dense, shared-expert, and the
    routed experts' unless expert parallelism keeps them whole."""
    moe = arch.moe
    dense = arch.intermediate_size if moe is None or not all(moe.moe_layers) else 0
    shared = moe.shared_intermediate_size if moe is not None else 0
    routed = moe.expert_intermediate_size if moe is not None and not expert_parallel else 0
    return [(name, n) for name, n in (("dense", dense), ("shared-expert", shared), ("expert", routed)) if n]


def _block_widths(arch: Architecture, expert_parallel: bool, quant: Quantization | None,
                  only: str | None = None) -> list[SplitWidth]:
    """The MLP widths (``only``: that one of dense, shared-expert, expert) counted in ``quant``'s
    weight blocks (none for a format without blocks, or a width that is not whole blocks: such a
    checkpoint is not the block layout checked here)."""
    if quant is None or quant.weight_block is None:
        return []
    block = int(quant.weight_block.value)
    return [SplitWidth(f"{block}-wide {quant.id} weight blocks across its {name} MLP width", n // block,
                       experts=name == "expert")
            for name, n in _mlp_widths(arch, expert_parallel) if n % block == 0 and only in (None, name)]


def _widths(arch: Architecture, rule: str, expert_parallel: bool, quant: Quantization | None) -> list[SplitWidth]:
    moe = arch.moe
    if rule == "weight_block":
        return _block_widths(arch, expert_parallel, quant)
    if rule == "expert_weight_block":
        return _block_widths(arch, expert_parallel, quant, only="expert")
    if rule == "attention_heads":
        return [SplitWidth("attention heads", arch.num_attention_heads)]
    if rule == "kv_heads":
        heads = sorted({arch.layer_kv_heads(k) for k in arch.layer_kinds if k in KV_HEAD_LAYERS})
        return [SplitWidth("key/value heads", n, replicates=True) for n in heads if n]
    if rule == "mlp_intermediate":
        dense = arch.intermediate_size if moe is None or not all(moe.moe_layers) else 0
        shared = moe.shared_intermediate_size if moe is not None else 0
        return [SplitWidth(f"{name} MLP width", n) for name, n in (("dense", dense), ("shared-expert", shared)) if n]
    if rule == "expert_intermediate" and moe is not None and not expert_parallel and moe.expert_intermediate_size:
        return [SplitWidth("expert MLP width", moe.expert_intermediate_size, experts=True)]
    return []


def split_widths(spec: ModelSpec, engine: EngineDefaults, *, expert_parallel: bool = False,
                 quant: Quantization | None = None) -> tuple[SplitWidth, ...]:
    """The widths ``engine`` divides over its tensor-parallel ranks for ``spec`` with weights in
    ``quant`` (none for a model whose architecture is not its own)."""
    arch = spec.architecture
    if arch is None or spec.architecture_is_proxy:
        return ()
    return tuple(w for rule in engine.tensor_parallel_splits for w in _widths(arch, rule, expert_parallel, quant))


def tp_refusal(spec: ModelSpec, engine: EngineDefaults, tp: int, *, expert_parallel: bool = False,
               quant: Quantization | None = None, expert_tp: int | None = None) -> SplitWidth | None:
    """The first width ``engine`` cannot split over ``tp`` ranks for ``spec`` (the routed experts' over
    ``expert_tp``, the MoE layers' tensor-parallel group, where it is wider); None when it starts."""
    experts = expert_tp or tp
    if tp == 1 and experts == 1:
        return None
    return next((w for w in split_widths(spec, engine, expert_parallel=expert_parallel, quant=quant)
                 if not w.takes(experts if w.experts else tp)), None)


def tp_splits(spec: ModelSpec, engine: EngineDefaults, tp: int, *, expert_parallel: bool = False,
              quant: Quantization | None = None, expert_tp: int | None = None) -> bool:
    """Whether ``engine`` starts ``spec`` at tensor parallel ``tp`` (weights in ``quant``; the routed
    experts split over ``expert_tp`` GPUs where not ``tp``)."""
    return tp_refusal(spec, engine, tp, expert_parallel=expert_parallel, quant=quant, expert_tp=expert_tp) is None


def allowed_tp_sizes(spec: ModelSpec, engine: EngineDefaults, *, expert_parallel: bool = False,
                     quant: Quantization | None = None, experts_only: bool = False) -> list[int]:
    """The tensor-parallel sizes ``engine`` starts ``spec`` at, up to the largest width split (and
    MAX_LISTED_TP); ``experts_only``: the widths of the MoE layers' group the routed experts split over."""
    widths = [w for w in split_widths(spec, engine, expert_parallel=expert_parallel, quant=quant)
              if w.experts or not experts_only]
    top = min(MAX_LISTED_TP, max((w.count for w in widths), default=1))
    return [n for n in range(1, top + 1) if all(w.takes(n) for w in widths)]
