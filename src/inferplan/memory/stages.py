"""Pipeline stages: which layers, and which weights, each stage of a ``pp``-stage instance holds.

Layers are split as evenly as they go; when they do not divide, the extra layers go to the stages
before the last, counting back from the second-to-last (vLLM's ``get_pp_indices``: the last stage
also holds the final norm and the output projection, and the first the token embeddings). The
first stage holds the embedding table, the last the output projection (lm_head) — with tied
embeddings the table itself, a second copy once the two ends are different stages — unless the
engine keeps the input table in host memory (llama.cpp). So the stages are not equal: the last
reads the lm_head every step, and each stage's room for the KV cache depends on its weights (how an
engine sizes the stages' caches from those rooms is ``engines.yaml`` ``pp_kv_room``)."""

from __future__ import annotations

from dataclasses import dataclass

from inferplan.memory.weights import WeightEstimate


def stage_layer_counts(num_layers: int, pp: int) -> tuple[int, ...]:
    """Layers in each of ``pp`` stages."""
    base, extra = divmod(num_layers, pp)
    counts = [base] * pp
    for i in range(extra):
        counts[pp - 2 - i] += 1  # from the second-to-last stage backwards (pp > extra, so never the last)
    return tuple(counts)


def stage_bounds(num_layers: int, pp: int) -> tuple[tuple[int, int], ...]:
    """[start, end) of each stage's layers."""
    bounds, start = [], 0
    for n in stage_layer_counts(num_layers, pp):
        bounds.append((start, start + n))
        start += n
    return tuple(bounds)


@dataclass(frozen=True)
class StageWeights:
    """Weights one GPU of a stage holds."""

    bytes_per_gpu: float  # everything it holds
    expert_bytes_per_gpu: float  # of which routed experts
    lookup_bytes_per_gpu: float = 0.0  # of which the token-embedding table, which a step does not read whole
    output_bytes_per_gpu: float = 0.0  # of which the output projection (lm_head, or the tied table read as it)


def stage_weights(w: WeightEstimate, *, tp: int, pp: int, expert_shards: int, moe_layers: tuple[bool, ...] = (),
                  num_layers: int = 0, embeddings_on_host: bool = False, expert_slot_share: float = 1.0) -> tuple[StageWeights, ...]:
    """Per-GPU weights of each pipeline stage. Experts are shared out by the MoE layers a stage
    holds, the rest of the layers by their count (``num_layers`` 0: no layer list, an even split);
    ``expert_slot_share``: the expert slots held over the routed experts (redundant copies, memory/expert_split.py).
    ``embeddings_on_host``: the engine keeps the input table in host memory (llama.cpp), so only the
    output layer — for tied embeddings the table itself — is on a GPU."""
    body = max(w.total_bytes - w.expert_bytes - w.embedding_bytes - (0.0 if w.head_is_embedding else w.head_bytes), 0.0)
    replicated_extra = w.replicated_bytes * (1 - 1 / tp)  # kept whole on every tensor-parallel rank
    bounds = stage_bounds(num_layers, pp) if num_layers >= pp else tuple((i, i + 1) for i in range(pp))
    layers = num_layers if num_layers >= pp else pp
    moe_total = sum(moe_layers)
    stages = []
    for i, (start, end) in enumerate(bounds):
        share = (end - start) / layers
        moe_share = sum(moe_layers[start:end]) / moe_total if moe_total and num_layers >= pp else share
        experts = w.expert_bytes * expert_slot_share * moe_share / expert_shards
        lookup = w.embedding_bytes if i == 0 and not embeddings_on_host else 0.0
        output = w.head_bytes if i == pp - 1 else 0.0
        if w.head_is_embedding and lookup and output:  # one stage at both ends: the table once, read as the lm_head
            lookup = 0.0
        held = body * share / tp + experts + replicated_extra * share + (lookup + output) / tp
        stages.append(StageWeights(held, experts, lookup / tp, output / tp))
    return tuple(stages)
