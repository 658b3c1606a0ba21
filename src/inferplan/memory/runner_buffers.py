"""The per-slot vocabulary arrays vLLM's Model Runner V2 keeps on each GPU, and where they count.

Model Runner V2 allocates its penalty statistics for ``max_num_seqs`` slots × the whole vocabulary when it is
built (``catalog/runner_buffers.py``). Where the release's profile counts them (the memory consumed since
start-up) they are part of what the engine holds beside the KV cache, so ``engine_budget`` counts them with
the runtime memory; before that release they are outside the fraction and ``startup_check`` adds them to what
the headroom must hold.
"""

from __future__ import annotations

from dataclasses import dataclass

from inferplan.catalog.memory_rules import MemoryRule
from inferplan.units import GiB


@dataclass(frozen=True)
class RunnerArrays:
    bytes_per_gpu: float
    counted: bool  # against the memory fraction (else: outside it, in the start-up headroom)
    note: str


def runner_arrays(rule: MemoryRule, vocab: int, max_num_seqs: int, release: str | None,
                  runner: str | None) -> RunnerArrays | None:
    """Model Runner V2's per-slot vocabulary arrays per GPU for a ``vocab``-token model at ``release`` (None: the
    model runs on another runner, or the rule states none)."""
    runners = rule.model_runners
    buffers = runners.v2_buffers if runners is not None else None
    if buffers is None or runner != "V2" or release is None:
        return None
    size = buffers.slot_vocab_bytes(max_num_seqs, vocab)  # on each GPU that samples
    counted = buffers.counted_at(release)
    where = "counted against the fraction, as the profile takes everything consumed since start-up" if counted else \
        f"outside the fraction (the profile counts them only from {buffers.counted_from}): the start-up headroom holds them"
    names = " and ".join(a.name.split(" (")[0] for a in buffers.slot_vocab_arrays)
    return RunnerArrays(size, counted, (
        f"{rule.label}: Model Runner V2 keeps {names} for max_num_seqs {max_num_seqs:,} × vocab {vocab:,} "
        f"({buffers.bytes_per_slot_vocab_entry:g} B per entry: {size / GiB:.2f} GiB per GPU) whatever the requests "
        f"ask, {where} ({', '.join(buffers.sources)})"))
