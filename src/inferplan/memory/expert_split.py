"""How an engine spreads a mixture-of-experts model's routed experts over its expert-parallel ranks.

vLLM gives the remainder of experts ÷ ranks to some of the ranks. SGLang gives every rank the same
whole number of expert slots and asserts at start-up that the slots divide by the ranks, the slots
being the routed experts plus ``--ep-num-redundant-experts`` copies (``engines.yaml``
``expert_parallel_redundant``, with its source). The plan adds the fewest copies that divide, as the
launch command states them; each copy takes an expert's weights on its rank. Without an expert
dispatch algorithm (EPLB) no token is routed to a copy, so the weights read per token are those of
the experts alone.
"""

from __future__ import annotations

from inferplan.catalog.loader import Catalog
from inferplan.catalog.models import ModelSpec
from inferplan.catalog.engine_schema import EngineDefaults
from inferplan.inputs.deployment import Deployment
from inferplan.memory.resolve import resolve_model


def expert_data_parallel(engine: EngineDefaults, *, data_parallel: int, expert_parallel: bool, launched: bool) -> int:
    """The data-parallel ranks whose GPUs split the routed experts between them, beside tensor parallelism,
    and whose tokens meet on every GPU's share of them: all ``data_parallel`` ranks under expert
    parallelism, or those one launch states (``launched``) on an engine whose MoE tensor-parallel group
    spans them (engines.yaml ``moe_tp_spans_data_parallel``); else 1, each rank a copy with its own TP split."""
    return data_parallel if expert_parallel or engine.moe_tp_spans_data_parallel and launched else 1


def redundant_experts(spec: ModelSpec, engine: EngineDefaults, *, ranks: int) -> int:
    """The fewest redundant expert copies that make ``spec``'s routed experts plus the copies divide by
    ``ranks`` expert-parallel ranks, where ``engine`` needs the slots to divide; 0 where the experts
    divide already, where the engine spreads a remainder itself, or where the expert count is unknown."""
    arch = spec.architecture
    if not engine.expert_parallel_redundant or ranks < 2 or arch is None or spec.architecture_is_proxy or arch.moe is None:
        return 0
    return -arch.moe.num_experts % ranks


def expert_slot_share(spec: ModelSpec, redundant: int) -> float:
    """The expert slots a rank holds relative to the routed experts alone ((experts + copies) / experts)."""
    moe = spec.architecture.moe if spec.architecture else None
    return (moe.num_experts + redundant) / moe.num_experts if redundant and moe else 1.0


def redundant_note(engine: str, experts: int, *, ranks: int, redundant: int) -> str:
    return (f"{engine} holds the same number of experts on every expert-parallel rank: {experts} routed experts do not "
            f"divide by {ranks} ranks, so the launch adds {redundant} redundant expert copies, "
            f"{(experts + redundant) // ranks} experts per MoE layer on each GPU (no token is routed to a copy)")


def planned_redundant_experts(d: Deployment, catalog: Catalog) -> int:
    """The redundant expert copies a planned deployment ``d`` (parallel sizes set) starts with: 0 without
    expert parallelism or on an engine that spreads a remainder itself."""
    if not d.enable_expert_parallel or not catalog.engine(d.engine).expert_parallel_redundant:
        return 0
    ranks = (d.tensor_parallel_size or 1) * (d.data_parallel_size or 1)
    return redundant_experts(resolve_model(catalog, d.model), catalog.engine(d.engine), ranks=ranks)
