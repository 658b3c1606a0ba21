"""What a memory fit's KV cache holds at the planned context length, what the worst-off pipeline stage
lacks for one sequence when it does not fit, and the host RAM that offloaded weights and KV cache take."""

from __future__ import annotations

import math
from dataclasses import dataclass

from inferplan.catalog.models import ModelSpec
from inferplan.catalog.schema import EngineDefaults
from inferplan.errors import InvalidScenarioError
from inferplan.inputs.deployment import Deployment
from inferplan.memory.kv_cache import KvLayout
from inferplan.memory.layout import ParallelPlan
from inferplan.memory.offload import GIB, OffloadSplit
from inferplan.memory.weights import WeightEstimate


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
            capped: int | None) -> Held:
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
    if d.concurrency:  # sequences across the deployment, as perf counts them: each instance holds its share
        per_instance = math.ceil(d.concurrency / plan.data_parallel_size)
        largest = layout.max_tokens_per_sequence(kv_gpu, per_instance, block)
        if fits and largest < 1:
            raise InvalidScenarioError(
                f"{d.concurrency:,} sequences leave no room for even one token of context each: the KV cache holds "
                f"{tokens:,} tokens per instance ({plan.data_parallel_size} instance(s))", field="concurrency",
                allowed=f"fewer sequences, at most {plan.data_parallel_size * (tokens // block):,} (one {block}-token block each)")
    return Held(max_len, kv_gpu, seq_gpu, tokens, kv_gpu / seq_room if seq_room else 0.0, fits, largest)


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


def host_memory(d: Deployment, split: OffloadSplit | None, layout: KvLayout, max_len: int, w: WeightEstimate,
                engine: EngineDefaults, kv_tier: float) -> tuple[float, float | None, list[str]]:
    """Host RAM the offloaded weights, the CPU layers' KV cache and a host KV tier take, the budget, and a
    note when it is short."""
    if split is None and not kv_tier:
        return 0.0, None, []
    if d.host_memory_gb is None:
        raise InvalidScenarioError("weights or KV cache offloaded to host RAM: state how much host memory there is",
                                   field="host_memory_gb", allowed="host RAM in GiB, e.g. 64")
    lookup = w.embedding_bytes if engine.embeddings_on_host else 0.0
    kv = split.host_kv_fraction * layout.sequence_bytes_per_gpu(max_len, 1) * layout_gpus(layout) if split else 0.0
    weights = split.host_weight_bytes if split else 0.0
    used = weights + kv + kv_tier + (lookup if split else 0.0)
    budget = d.host_memory_gb * GIB
    parts = [f"{weights / GIB:.2f} GiB of offloaded weights" if split else "",
             f"{kv / GIB:.2f} GiB of the CPU layers' KV cache" if kv else "",
             f"{kv_tier / GIB:.2f} GiB of host KV tier" if kv_tier else ""]
    notes = [f"host memory: {used / GIB:.2f} GiB of {budget / GIB:.2f} GiB used: " + ", ".join(p for p in parts if p)]
    if split and split.host_kv_fraction >= 1:
        notes.append(f"no layer on the GPU: the whole KV cache ({max_len:,} tokens, llama.cpp's -c) is in host RAM")
    if used > budget:
        notes.append(f"host memory (host_memory_gb) short by {(used - budget) / GIB:.2f} GiB: it does not fit")
    return used, budget, notes


def layout_gpus(layout: KvLayout) -> float:
    """GPUs a layout's per-GPU figures are spread over (its whole-instance bytes over one GPU's)."""
    per_gpu = layout.growing_bytes_per_token_per_gpu + layout.window_bytes_per_token_per_gpu
    return (layout.growing_bytes_per_token + layout.window_bytes_per_token) / per_gpu if per_gpu else 1.0
