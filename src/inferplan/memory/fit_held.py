"""What a memory fit's KV cache holds at the planned context length, and what the worst-off pipeline
stage lacks for one sequence when it does not fit (the host RAM offloads take: ``host_budget.py``)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from inferplan.catalog.models import ModelSpec
from inferplan.errors import InvalidScenarioError
from inferplan.inputs.deployment import Deployment
from inferplan.memory.kv_cache import KvLayout
from inferplan.memory.layout import ParallelPlan


@dataclass(frozen=True)
class Held:
    """What the KV cache holds at the planned context length."""

    max_len: int
    kv_gpu: float
    seq_gpu: float
    tokens: int
    concurrency: float
    fits: bool
    largest: int | None


def kv_held(d: Deployment, spec: ModelSpec, plan: ParallelPlan, layout: KvLayout, room: float, block: int,
            capped: int | None, running_cap: int, cap_launch: Callable[[int], str]) -> Held:
    """What ``room`` bytes per GPU hold at the planned length, and the largest context at ``d``'s concurrency: each
    running sequence's share, at most ``running_cap`` running per instance (the rest queue, holding none). Where
    none gets a block, the refusal names the running cap at which each does, as ``cap_launch`` writes its flag
    for a per-instance value."""
    max_len = planned_length(d, spec, capped)
    kv_gpu = max(room, 0.0)
    seq_gpu = layout.sequence_bytes_per_gpu(max_len, block)
    seq_room = layout.room_bytes_per_sequence(max_len, block)  # of the smallest stage's room (seq_gpu on one stage)
    # tokens of context the cache holds in sequences of max_len: a window layer or a recurrent state
    # costs a sequence the same at any length, so a token's share is its sequence's bytes / max_len
    held = math.ceil(max_len / block) * block  # its last block is held whole
    per_tok_gpu = seq_room / held if held else layout.bytes_per_token_per_gpu
    tokens = int(kv_gpu // (block * per_tok_gpu)) * block if per_tok_gpu else 0
    fits = room > 0 and kv_gpu >= layout.needed_bytes_per_sequence(max_len, block)
    largest = None
    if d.concurrency:  # sequences across the deployment, as perf counts them: each instance runs its share
        per_instance = min(math.ceil(d.concurrency / plan.data_parallel_size), running_cap)
        largest = layout.max_tokens_per_sequence(kv_gpu, per_instance, block)
        if fits and largest < 1:
            most = most_running(layout, kv_gpu, block, tokens // block)
            raise InvalidScenarioError(
                f"{d.concurrency:,} sequences ({per_instance:,} running at once per instance) leave no room for even one token of context each: the KV cache holds "
                f"{tokens:,} tokens per instance ({plan.data_parallel_size} instance(s))", field="concurrency",
                allowed=f"fewer sequences, at most {plan.data_parallel_size * most:,} (a {block}-token block each), "
                        f"or {cap_launch(most)} (the rest queue)")
    return Held(max_len, kv_gpu, seq_gpu, tokens, kv_gpu / seq_room if seq_room else 0.0, fits, largest)


def most_running(layout: KvLayout, kv_gpu: float, block: int, upper: int) -> int:
    """The most sequences running at once per instance that each still get a block of ``kv_gpu`` bytes per GPU, what
    each also holds apart from its tokens (a recurrent state, a window) counted: at most ``upper``."""
    low, high = 0, max(upper, 0)
    while low < high:
        mid = (low + high + 1) // 2
        low, high = (mid, high) if layout.max_tokens_per_sequence(kv_gpu, mid, block) >= 1 else (low, mid - 1)
    return low


def planned_length(d: Deployment, spec: ModelSpec, capped: int | None) -> int:
    """The context length planned: the engine's cap, else the one stated, else the model's own."""
    arch = spec.architecture
    length = capped or d.max_model_len or spec.context_tokens or (arch.max_position_embeddings if arch else 0)
    if not length:
        raise InvalidScenarioError(f"{spec.name} states no context length (no context_tokens in the catalogue, no "
                                   "max_position_embeddings in its config): state the length to plan at",
                                   field="max_model_len", allowed="a context length in tokens")
    return length


def stage_shortfall(layout: KvLayout, rooms: list, tokens: int, block: int, otherwise: float) -> float:
    """Bytes per GPU the worst-off stage lacks for one sequence of ``tokens`` (each stage against its
    own room where the engine sizes them so; else the fullest GPU's room against the largest need)."""
    if not rooms or len(rooms) != len(layout.stages):
        return otherwise
    return max(st.sequence_bytes_per_gpu(tokens, block) - r.kv_bytes_per_gpu for st, r in zip(layout.stages, rooms))
