"""A hybrid model's cache memory split into recurrent-state slots and an attention KV pool, where the
engine release splits it (SGLang: ``catalog/hybrid_split.py``, the rule's ``hybrid_state_split``).

The room left for the cache on each GPU is split: the state pool takes ``ratio / (1 + ratio)`` of it in
whole slots of one sequence's state (one slot more where the release pads the pool), the attention KV pool
the rest. The KV tokens are what the attention layers' bytes per token make of the KV pool, and the
running sequences are capped at the slots over the slots each request holds. Without the split the plan
charges each sequence its state inside the one pool (``fit_held.kv_held``).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from inferplan.catalog.hybrid_split import HybridStateSplit, hybrid_split_at
from inferplan.catalog.memory_rules import MemoryRule
from inferplan.memory.fit_held import Held
from inferplan.memory.kv_cache import KvLayout
from inferplan.units import GiB


@dataclass(frozen=True)
class StatePool:
    """One GPU's split of the cache room: the state slots, the bytes they take and the KV pool left."""

    slots: int
    slots_per_request: int
    state_bytes_per_gpu: float
    kv_pool_bytes_per_gpu: float

    @property
    def running_cap(self) -> int:
        """The most requests that run at once: the slots over the slots each holds."""
        return self.slots // self.slots_per_request


def state_pool(split: HybridStateSplit, room_bytes_per_gpu: float, state_bytes_per_seq_per_gpu: float,
               hf_architecture: str | None) -> StatePool:
    """The split of ``room_bytes_per_gpu`` at the release's default ratio, as the engine solves it."""
    budget = max(room_bytes_per_gpu, 0.0) * split.state_to_kv_ratio / (1 + split.state_to_kv_ratio)
    pad = 1 if split.padding_slot else 0
    slots = max(int((budget - pad * state_bytes_per_seq_per_gpu) // state_bytes_per_seq_per_gpu), 0)
    state = (slots + pad) * state_bytes_per_seq_per_gpu
    return StatePool(slots, split.slots_per_request(hf_architecture), state, room_bytes_per_gpu - state)


def release_split(rule: MemoryRule, engine_version: str | None, layout: KvLayout) -> HybridStateSplit | None:
    """The release's split where it applies: a model with recurrent state on one pipeline stage (None otherwise)."""
    if not rule.hybrid_state_split or layout.state_bytes_per_seq_per_gpu <= 0 or layout.stages:
        return None
    return hybrid_split_at(rule.hybrid_state_split, rule.planned_release(engine_version))


def with_state_pool(held: Held, split: HybridStateSplit | None, layout: KvLayout, block: int,
                    hf_architecture: str | None, instances: int, sequences: int | None) -> tuple[Held, list[str]]:
    """``held`` with the KV tokens of the attention pool and the sequences capped by the state slots;
    ``sequences``: the concurrent sequences stated, across the ``instances``."""
    if split is None:
        return held, []
    pool = state_pool(split, held.kv_gpu, layout.state_bytes_per_seq_per_gpu, hf_architecture)
    per_tok = layout.bytes_per_token_per_gpu
    kv_room = max(pool.kv_pool_bytes_per_gpu, 0.0)
    tokens = int(kv_room // (block * per_tok)) * block if per_tok else 0
    seq = math.ceil(held.max_len / block) * block * per_tok
    by_kv = kv_room / seq if seq else float(pool.running_cap)
    concurrency = min(by_kv, float(pool.running_cap))
    fits = held.fits and kv_room >= seq and pool.running_cap >= 1
    largest = held.largest
    if sequences and per_tok:  # each of the stated sequences' share of the attention pool
        largest = int(kv_room / math.ceil(sequences / instances) // per_tok)
    note = (f"the cache room is split as the engine release does for a hybrid model: {pool.slots:,} recurrent-state "
            f"slots ({pool.state_bytes_per_gpu / GiB:.2f} GiB per GPU, {split.state_to_kv_ratio:g} of the KV pool's "
            f"memory) and {tokens:,} tokens of attention KV cache; the state pool caps the running sequences at "
            f"{pool.running_cap:,} per instance ({pool.slots_per_request} slots each)"
            + (f", {pool.running_cap * instances:,} across {instances} instances" if instances > 1 else ""))
    return dataclasses.replace(held, tokens=tokens, concurrency=concurrency, fits=fits, largest=largest), [note]
