"""How an engine release splits its cache memory for a hybrid (Mamba / linear-attention) model, as data.

SGLang keeps a hybrid model's recurrent state apart from its attention KV cache: the memory left for the
cache is split into a state pool of a whole number of request slots and a KV pool for the full-attention
layers, the state pool taking ``state_to_kv_ratio / (1 + state_to_kv_ratio)`` of it
(``--mamba-full-memory-ratio``). A running request holds ``state_slots_per_request`` slots (its own and the
radix cache's copies), more under the extra-buffer strategy the release picks for the architectures it
lists, so the state pool caps the running requests. Each entry holds one release's rule, from its
``first_release`` to the next entry's. ``memory/state_pool.py`` applies it; the entries live on a memory
rule's ``hybrid_state_split``.

No postponed annotations here, as in ``schema.py``: pydantic builds the model from real types.
"""

import datetime as dt
from typing import Literal

from pydantic import ConfigDict, Field

from inferplan.catalog.provenance import release_key
from inferplan.inputs import Input


class DraftStateSolve(Input):
    """How a release sizes the state pool with a speculative draft: each running request keeps an intermediate
    state per verified token beside its slot. With D verified tokens, s bytes per slot and the slots per
    request as ``ratio``, the slots are ``(budget - pad x s x (1 + D)) // (s x (1 + D / ratio))`` and
    ``(min(running, slots // ratio) + pad) x D x s`` of intermediate state comes out of the KV pool's room
    (``pad``: the entry's ``padding_slot``)."""

    model_config = ConfigDict(defer_build=True)

    # --max-running-requests the release sets with any draft when none is stated (per engine, before DP division)
    running_requests: int = Field(ge=1)
    # the fewest running requests per DP attention rank it reserves intermediate state for (0: none, the
    # running requests over the ranks as they divide)
    running_requests_floor_per_rank: int = Field(0, ge=0)
    # D over the draft tokens (--speculative-num-draft-tokens = steps + 1 for a chain of drafts), by method
    verified_over_drafts: int = Field(ge=0)
    verified_over_drafts_by_method: dict[str, int] = Field(default_factory=dict)

    def verified_tokens(self, draft_tokens: int, method: str) -> int:
        """The verified tokens D the release solves with for ``draft_tokens`` drafted by ``method``."""
        return draft_tokens + self.verified_over_drafts_by_method.get(method, self.verified_over_drafts)


class HybridStateSplit(Input):
    """One release's split of the cache memory between the recurrent-state slots and the attention KV pool."""

    model_config = ConfigDict(defer_build=True)

    first_release: str  # inclusive, inside the rule's range; holds to the next entry's
    state_to_kv_ratio: float = Field(gt=0)  # state pool bytes : KV pool bytes, the default --mamba-full-memory-ratio
    # one slot more is allocated than the count the budget is solved for (the pool's padding slot)
    padding_slot: bool
    # HF architectures of the hybrid models the release runs (empty: every one); another is refused there
    architectures: tuple[str, ...] = ()
    state_slots_per_request: int = Field(ge=1)  # slots a running request holds with the radix cache on
    extra_buffer_slots: int = Field(0, ge=0)  # more per request under the extra-buffer strategy
    # HF architectures the release gives the extra-buffer strategy by default (overlap schedule on, CUDA)
    extra_buffer_architectures: tuple[str, ...] = ()
    # bytes per element the release keeps the recurrent (temporal) state in where the config names no
    # mamba_ssm_dtype (None: the model's own); ``config_state_dtype``: whether a named one is followed
    state_dtype_bytes: int | None = Field(None, ge=1)
    config_state_dtype: bool = True
    stated_slots_over_attention_dp: bool = False  # a stated --max-mamba-cache-size is divided over DP attention ranks
    # HF architectures whose slots solved from the ratio the release divides over the DP attention ranks again
    solved_slots_over_attention_dp_architectures: tuple[str, ...] = ()
    # HF architectures the release runs with the radix cache off: a running request holds one slot
    radix_off_architectures: tuple[str, ...] = ()
    # with the radix cache off, the slots when neither --max-mamba-cache-size nor --max-running-requests is
    # stated (None: the ratio split sizes them)
    radix_off_slots: int | None = Field(None, ge=1)
    # whether a stated --max-mamba-cache-size sets the slots with the radix cache on (else the ratio solve does)
    stated_slots_with_radix: bool = True
    # the solve with a speculative draft (None: the release's is not read, and a draft is refused)
    draft_state: DraftStateSolve | None = None
    sources: tuple[str, ...] = Field(min_length=1)
    checked: dt.date
    kind: Literal["spec", "measured", "derived", "assumed"]
    note: str = ""

    def slots_per_request(self, hf_architecture: str | None) -> int:
        """State slots one running request holds for a model of ``hf_architecture``."""
        if hf_architecture in self.radix_off_architectures:
            return 1
        extra = self.extra_buffer_slots if hf_architecture in self.extra_buffer_architectures else 0
        return self.state_slots_per_request + extra


def next_split_release(entries: tuple[HybridStateSplit, ...], split: HybridStateSplit,
                       hf_architecture: str | None = None) -> str | None:
    """The first release of an entry after ``split`` that runs ``hf_architecture`` (None: no later one does)."""
    later = [e.first_release for e in entries if release_key(e.first_release) > release_key(split.first_release)
             and (not e.architectures or hf_architecture is None or hf_architecture in e.architectures)]
    return min(later, key=release_key) if later else None


def hybrid_split_at(entries: tuple[HybridStateSplit, ...], release: str | None) -> HybridStateSplit | None:
    """The split at ``release`` (None: the newest entry), None before the first entry or with none stated."""
    reached = [e for e in entries if release is None or release_key(e.first_release) <= release_key(release)]
    return max(reached, key=lambda e: release_key(e.first_release)) if reached else None
