"""Device arrays vLLM's Model Runner V2 keeps for every request slot × the vocabulary, as data.

Model Runner V2's sampler holds penalty statistics for every one of ``max_num_seqs`` request slots over the
whole vocabulary, allocated when the runner is built, whether or not a request asks for a penalty
(``v1/worker/gpu/sample/penalties.py``, ``PenaltiesState``): an int32 count per (slot, token) and a bit per
(slot, token) of the prompt. Every tensor-parallel rank that samples keeps them in full. Whether they count
against the memory fraction follows the release's profile: from the release that takes the non-KV memory
as everything consumed since start-up (``utils/mem_utils.py`` ``total_consumed``) they do, and the KV cache
is smaller by them; before it they were allocated before the profile's baseline and outside the weights'
measurement, so they come out of the headroom the fraction leaves, like the CUDA graphs captured after the
KV cache. A ``RunnerBuffers`` block of a rule's ``model_runners`` states them; ``memory/engine_budget.py``
and ``memory/startup.py`` apply them.
"""

from __future__ import annotations

import datetime as dt
from typing import Literal

from pydantic import Field

from inferplan.catalog.provenance import release_key
from inferplan.catalog.runtime_buffers import SlotVocabArrays


class RunnerBuffers(SlotVocabArrays):
    """Model Runner V2's arrays of ``max_num_seqs × vocab`` entries, and the first release whose profile counts
    them against the memory fraction (before it: outside the fraction, held by the start-up headroom)."""

    counted_from: str  # the first release whose profile counts them (total_consumed)
    sources: tuple[str, ...] = Field(min_length=1)
    checked: dt.date
    kind: Literal["spec", "measured", "derived", "assumed"]
    note: str = ""

    def counted_at(self, release: str) -> bool:
        """Whether the profile at ``release`` counts them against the fraction."""
        return release_key(release) >= release_key(self.counted_from)

    def source_ids(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys((*self.sources, *(a.source for a in self.slot_vocab_arrays))))
