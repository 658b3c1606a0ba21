"""What an engine release charges each request in KV-cache blocks before admitting it, as data
(``data/engine_admission_rules.yaml``).

vLLM V1 keeps a model's cache in groups, one block table each, all drawing block ids from one
pool. A group whose old blocks it recycles as the context moves on (a sliding window; DeepSeek-V4's
compressor state, kept as a short sliding window) still reserves, for every request, the blocks of
the window plus every token that may be scheduled but not yet settled: ``cdiv(window - 1 +
in-flight tokens, block) + 1`` blocks (``SlidingWindowSpec.max_admission_blocks_per_request``), the
in-flight tokens being ``max_num_batched_tokens`` times the batches in flight. The start-up check
("KV cache is needed") and the printed maximum concurrency add up those blocks over the groups, so
with small blocks it is a large fixed amount per request, whatever its length. An
``AdmissionRule`` states, for one engine release line and cache layout, the groups' block sizes,
how pages are padded, how many bytes of pool one block id takes, and how the start-up check and the
printed concurrency price a request's blocks; the arithmetic is ``memory/admission.py``.
"""

from __future__ import annotations

import datetime as dt
from typing import Literal

from pydantic import Field, model_validator

from inferplan.catalog.memory_rules import check_release_range, in_release_range, release_key
from inferplan.catalog.provenance import Kind
from inferplan.catalog.schema import SLUG, Frozen, check_engine_and_sources
from inferplan.errors import CatalogError

# the cache layouts a rule can describe: DeepSeek-V4's compressed attention (catalog.architecture
# CompressedAttnDims: window-only, CSA and HCA layers)
Layout = Literal["compressed_attention"]
# bytes of pool one block id takes: the tuple count times one page of each pooled-entry page size
# (layer_tuples), one page per slot of each page size, slots the most any group has (page_slots), or the
# bytes of the group with the most (widest_group)
BlockStride = Literal["layer_tuples", "page_slots", "widest_group"]
# what the start-up check charges each page a request needs: the layer-tuple stride, or the pool's stride
StartupStride = Literal["layer_tuples", "block"]
# the printed concurrency's blocks per request: the groups' page bytes in whole pooled-entry group pages
# (full_group_pages), or each group's pages counted as blocks (group_pages)
ConcurrencyBlocks = Literal["full_group_pages", "group_pages"]
# the least layer tuples per group: the pooled-entry group's count (pooled_entries), or the CSA compressor
# state's pattern, the pooled-entry group taking part only where its page sizes have equal counts (state_pattern)
TupleFloor = Literal["pooled_entries", "state_pattern"]


class AdmissionRule(Frozen):
    """One engine release line's per-request block charge for one cache layout."""

    id: str = Field(pattern=SLUG)
    engine: str  # engines.yaml id
    layout: Layout
    first_release: str  # inclusive: the release that added the layout, or changed the charge
    last_release: str | None = None  # inclusive; None: every later release
    # batches of max_num_batched_tokens a request's recycled groups reserve for: 1, or the batches
    # the scheduler keeps in flight under asynchronous scheduling (the engine's default)
    in_flight_batches: int = Field(ge=1)
    full_block_tokens: int = Field(ge=1)  # tokens per block of the groups that hold every pooled entry
    window_block_tokens: int = Field(ge=1)  # the sliding-window group
    csa_state_block_tokens: int = Field(ge=1)  # the compressor state of the CSA layers (and their indexer)
    hca_state_block_tokens: int = Field(ge=1)  # the compressor state of the HCA layers
    page_alignment_bytes: int = Field(ge=1)  # every page rounded up to a multiple (FlashMLA's FP8 layout)
    # each compressor-state page further padded up to the nearest page size of the pooled-entry group
    pad_state_pages: bool
    tuple_floor: TupleFloor
    block_stride: BlockStride
    startup_stride: StartupStride
    concurrency_blocks: ConcurrencyBlocks
    sources: tuple[str, ...] = Field(min_length=1)
    checked: dt.date
    kind: Kind
    note: str

    @model_validator(mode="after")
    def _releases(self) -> "AdmissionRule":
        check_release_range(self.first_release, self.last_release)
        return self

    def covers(self, release: str) -> bool:
        return in_release_range(release, self.first_release, self.last_release)


def admission_rule(catalog, engine: str, layout: str, release: str | None) -> AdmissionRule | None:
    """The rule of ``engine`` for ``layout`` at ``release`` (a release number; None: the newest rule,
    since a layout added after the engine's default release runs only on a release that has it);
    None where no rule covers it."""
    rules = sorted((r for r in catalog.admission_rules if r.engine == engine and r.layout == layout),
                   key=lambda r: release_key(r.first_release))
    if release is None:
        return rules[-1] if rules else None
    return next((r for r in rules if r.covers(release)), None)


def check_admission_rules(catalog) -> None:
    """Every rule names a known engine and sources; an engine's rules for one layout do not overlap."""
    for rule in catalog.admission_rules:
        check_engine_and_sources(catalog, f"admission_rules:{rule.id}", rule.id, rule.engine, rule.sources)
    groups: dict[tuple[str, str], list[AdmissionRule]] = {}
    for rule in catalog.admission_rules:
        groups.setdefault((rule.engine, rule.layout), []).append(rule)
    for rules in groups.values():
        rules.sort(key=lambda r: release_key(r.first_release))
        for a, b in zip(rules, rules[1:]):
            if a.last_release is None or release_key(a.last_release) >= release_key(b.first_release):
                raise CatalogError(f"admission_rules: {a.id} and {b.id} overlap", field=b.id)
