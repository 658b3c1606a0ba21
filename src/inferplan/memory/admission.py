"""The KV-cache blocks an engine charges each request, by its release's ``AdmissionRule``
(``catalog/data/engine_admission_rules.yaml``), for DeepSeek-V4's compressed attention on vLLM.

vLLM keeps the cache in groups with their own block tables, all drawing block ids from one pool:

- the pooled-entry group: each CSA layer's entries (one per ``csa_ratio`` tokens) and indexer
  keys, each HCA layer's entries (one per ``hca_ratio`` tokens), in ``full_block_tokens`` blocks;
- the window groups: every layer's last ``sliding_window`` entries, in ``window_block_tokens`` blocks;
- the compressor-state groups of the CSA layers (with their indexers') and of the HCA layers, kept as
  sliding windows of ``2 x csa_ratio`` and ``hca_ratio`` pending tokens in tiny blocks.

A bucket of recycled layers is split into ``cdiv(layers, tuples)`` groups, ``tuples`` being the
count of layer tuples (one layer of each page size) per group that pads the buckets' counts least
(vLLM's ``_approximate_gcd``: at least the rule's floor, the larger on a tie). A recycled group frees
blocks behind its window, but reserves for every request ``cdiv(min(window - 1 + in-flight tokens,
max_model_len), block) + 1`` blocks, the in-flight tokens being ``max_num_batched_tokens x
in_flight_batches``. Every page is rounded up to ``page_alignment_bytes``; on some lines a state page
is further padded to the nearest pooled-entry page size.

A block id takes ``block_bytes`` of pool whichever group holds it. ``needed_bytes`` is what the
start-up check ("KV cache is needed") compares with the pool: the blocks a ``max_model_len`` request
needs in every group at the rule's start-up stride. ``startup_bytes`` is the pool a request takes in
the printed maximum concurrency; ``running_sequences`` how many requests the pool holds while they
decode, with the in-flight tokens of the whole batch reserved once (what the blocks hold at run time).
"""

from __future__ import annotations

import dataclasses
import math
from collections import Counter
from dataclasses import dataclass

from inferplan.catalog.admission_rules import AdmissionRule, admission_rule
from inferplan.catalog.architecture import Architecture, LayerKind
from inferplan.catalog.memory_rules import current_release, memory_rule, parse_engine_version, release_key
from inferplan.inputs.deployment import Deployment
from inferplan.memory import compressed
from inferplan.memory.kv_cache import KvLayout
from inferplan.units import GiB


@dataclass(frozen=True)
class CacheGroup:
    """One block table: its window (None: the pooled-entry group, which keeps every block), its block,
    and one block's pages across its layers on one GPU."""

    name: str
    window_tokens: int | None
    block_tokens: int
    page_bytes: int

    def blocks(self, tokens: int) -> int:
        """Blocks the group holds for a request of ``tokens`` (a recycled group: the last ``tokens``,
        min'd with the request's length as the engine caps it at max_model_len)."""
        return math.ceil(tokens / self.block_tokens) + (0 if self.window_tokens is None else 1)

    def admitted(self, tokens: int, max_len: int, in_flight: int) -> int:
        """Blocks the engine reserves for a request of ``tokens`` with ``in_flight`` tokens in flight."""
        if self.window_tokens is None:
            return self.blocks(tokens)
        return self.blocks(min(self.window_tokens - 1 + in_flight, max_len))


@dataclass(frozen=True)
class AdmissionReserve:
    """One instance's per-request block charge (one GPU: DeepSeek-V4's single KV head is replicated)."""

    groups: tuple[CacheGroup, ...]  # the pooled-entry group first
    block_bytes: int  # pool bytes one block id takes
    startup_block_bytes: int  # what the start-up check charges each block a request needs
    whole_full_pages: bool  # the printed concurrency rounds the groups' bytes to pooled-entry group pages
    in_flight_tokens: int  # max_num_batched_tokens x in_flight_batches
    in_flight_batches: int

    @property
    def recycled(self) -> tuple[CacheGroup, ...]:
        return tuple(g for g in self.groups if g.window_tokens is not None)

    def _admitted(self, tokens: int, max_len: int) -> list[int]:
        return [g.admitted(tokens, max_len, self.in_flight_tokens) for g in self.groups]

    def needed_bytes(self, tokens: int, max_len: int) -> float:
        """The bytes the engine's start-up check needs for one request of ``tokens`` (max_model_len
        ``max_len``): every group's admission blocks at the start-up stride."""
        return float(self.startup_block_bytes * sum(self._admitted(tokens, max_len)))

    def startup_bytes(self, tokens: int, max_len: int) -> float:
        """Pool bytes one request of ``tokens`` takes in the engine's maximum-concurrency figure."""
        blocks = self._admitted(tokens, max_len)
        if self.whole_full_pages:  # the groups' page bytes in whole pages of the pooled-entry group
            held = sum(n * g.page_bytes for n, g in zip(blocks, self.groups))
            return float(self.block_bytes * -(-held // self.groups[0].page_bytes))
        return float(self.block_bytes * sum(blocks))

    def steady_bytes(self, tokens: int) -> float:
        """Pool bytes one decoding request of ``tokens`` holds: its pooled entries and each recycled
        group's window with the tokens of the batches in flight."""
        return float(self.block_bytes * sum(
            g.blocks(tokens) if g.window_tokens is None else g.blocks(min(g.window_tokens - 1 + self.in_flight_batches, tokens))
            for g in self.groups))

    def transient_bytes(self, in_flight: int | None = None) -> float:
        """Pool bytes the tokens in flight across the whole batch (at most ``in_flight_tokens``) hold in
        the recycled groups."""
        flying = self.in_flight_tokens if in_flight is None else min(in_flight, self.in_flight_tokens)
        return float(self.block_bytes * sum(math.ceil(flying / g.block_tokens) for g in self.recycled))

    def running_sequences(self, pool_bytes: float, tokens: int) -> int:
        """Requests of ``tokens`` the pool holds while they decode: each its steady blocks, and the
        tokens in flight across the batch (no more than the requests' own) reserved once."""
        steady = self.steady_bytes(tokens)
        lo, hi = 0, int(pool_bytes // steady)
        while lo < hi:  # the most n with n steady requests and their in-flight tokens in the pool
            mid = (lo + hi + 1) // 2
            if mid * steady + self.transient_bytes(mid * tokens) <= pool_bytes:
                lo = mid
            else:
                hi = mid - 1
        return lo


@dataclass(frozen=True)
class _Bucket:
    """Layers of one spec type before the split: a name, window, block and each layer tuple's pages."""

    name: str
    window_tokens: int | None
    block_tokens: int
    pages: tuple[int, ...]  # a tuple's pages: one per layer (a CSA state: its own and its indexer's)
    layers: int  # tuples in the bucket


def admission_reserve(arch: Architecture, rule: AdmissionRule, kv_bits: float,
                      max_num_batched_tokens: int) -> AdmissionReserve:
    """The per-request charge of ``rule`` for a compressed-attention architecture at a KV width."""
    c = arch.compressed
    assert c is not None, "an admission reserve is for DeepSeek-V4's compressed attention"
    kinds = Counter(arch.layer_kinds)
    entry = compressed.entry_bytes(arch, kv_bits)

    def aligned(page: float) -> int:
        return math.ceil(page / rule.page_alignment_bytes) * rule.page_alignment_bytes

    b = rule.full_block_tokens
    full = Counter({aligned(b // c.csa_ratio * entry): kinds[LayerKind.CSA]})
    full[aligned(b // c.csa_ratio * compressed.indexer_key_bytes(arch))] += kinds[LayerKind.CSA]
    full[aligned(b // c.hca_ratio * entry)] += kinds[LayerKind.HCA]
    full = +full
    full_sizes = sorted(full)

    def state(page: int) -> int:  # a state page, padded to the nearest pooled-entry page size where the rule pads
        return min((s for s in full_sizes if s >= page), default=page) if rule.pad_state_pages else page

    def states(kind: LayerKind, block: int) -> tuple[int, ...]:
        return tuple(state(aligned(block * t)) for t in compressed.state_bytes_per_token(arch, kind))

    full_page = sum(size * n for size, n in full.items())
    recycled = [k for k in (
        _Bucket("window", arch.sliding_window or 0, rule.window_block_tokens, (aligned(rule.window_block_tokens * entry),),
                sum(kinds.values())),
        _Bucket("csa compressor state", compressed.state_window_tokens(arch, LayerKind.CSA), rule.csa_state_block_tokens,
                states(LayerKind.CSA, rule.csa_state_block_tokens), kinds[LayerKind.CSA]),
        _Bucket("hca compressor state", compressed.state_window_tokens(arch, LayerKind.HCA), rule.hca_state_block_tokens,
                states(LayerKind.HCA, rule.hca_state_block_tokens), kinds[LayerKind.HCA]),
    ) if k.layers and k.window_tokens]
    tuples = _tuples_per_group(rule, tuple(full.values()), recycled)
    groups = [CacheGroup("pooled entries", None, b, full_page)]
    counts: list[Counter] = [full]  # layers of each page size, per group
    for bucket in recycled:
        n = math.ceil(bucket.layers / tuples) if tuples else 1
        for i in range(n):
            layers = len(range(i, bucket.layers, n))  # vLLM gives the i-th group tuples[i::n]
            name = bucket.name if n == 1 else f"{bucket.name} {i + 1}/{n}"
            groups.append(CacheGroup(name, bucket.window_tokens, bucket.block_tokens, layers * sum(bucket.pages)))
            counts.append(Counter({p: layers * bucket.pages.count(p) for p in bucket.pages}))
    tuple_bytes = max(max(n.values()) for n in counts) * sum(full_sizes)
    block_bytes = {"layer_tuples": tuple_bytes,
                   "page_slots": sum(p * max(n[p] for n in counts) for p in set().union(*counts)),
                   "widest_group": max(g.page_bytes for g in groups)}[rule.block_stride]
    startup = tuple_bytes if rule.startup_stride == "layer_tuples" else block_bytes
    return AdmissionReserve(tuple(groups), block_bytes, startup, rule.concurrency_blocks == "full_group_pages",
                            max_num_batched_tokens * rule.in_flight_batches, rule.in_flight_batches)


def _tuples_per_group(rule: AdmissionRule, full_counts: tuple[int, ...], recycled: list[_Bucket]) -> int | None:
    """Layer tuples per group: the count, at least the rule's floor, that pads the buckets least (None: no
    floor, each bucket one group). ``pooled_entries``: the floor and first count are the pooled-entry group's
    most common page size's layers; ``state_pattern``: the floor is the most layers of a bucket with several
    page sizes and equal counts (the CSA compressor state, the pooled entries where CSA and HCA layers
    are as many), the counts those of buckets with equal counts."""
    if rule.tuple_floor == "pooled_entries":
        floor = max(full_counts)
        return approximate_gcd([floor, *(b.layers for b in recycled)], floor)
    full = [full_counts[0]] if len(set(full_counts)) == 1 else []  # the pooled entries, where balanced
    floor = max([b.layers for b in recycled if len(b.pages) > 1] + (full if len(full_counts) > 1 else []), default=0)
    values = [b.layers for b in recycled] + full
    return approximate_gcd(values, floor) if floor else None


def approximate_gcd(values: list[int], floor: int) -> int:
    """vLLM's ``_approximate_gcd``: the count from ``floor`` to the largest value that pads the values
    (each rounded up to a multiple of it) least; the larger on a tie."""
    return min(range(floor, max(values) + 1), key=lambda x: (sum(-n % x for n in values), -x), default=floor)


def with_admission(catalog, engine: str, engine_version: str | None, arch: Architecture | None, layout: KvLayout,
                   kv_bits: float, max_num_batched_tokens: int, max_len: int) -> tuple[KvLayout, list[str]]:
    """``layout`` with the admission reserve of the engine release it runs on, where a rule covers the
    architecture's cache layout (one pipeline stage: a stage's groups are not split out); else as is."""
    if arch is None or arch.compressed is None or layout.stages:
        return layout, []
    release = parse_engine_version(engine_version)[0] if engine_version else None
    rule = admission_rule(catalog, engine, "compressed_attention", release)
    if rule is None:
        return layout, []
    reserve = admission_reserve(arch, rule, kv_bits, max_num_batched_tokens)
    note = (f"{rule.id}: {len(reserve.groups)} cache groups in blocks of {reserve.block_bytes:,} B; each request "
            f"reserves its window and compressor-state blocks for {reserve.in_flight_tokens:,} tokens in flight "
            f"({rule.in_flight_batches} x max_num_batched_tokens {max_num_batched_tokens:,}): "
            f"{reserve.startup_bytes(max_len, max_len) / GiB:.2f} GiB per {max_len:,}-token request, "
            f"{reserve.needed_bytes(max_len, max_len) / GiB:.2f} GiB for the start-up check")
    return dataclasses.replace(layout, admission=reserve, admission_max_len=max_len), [note]


DEFAULT_RELEASE = "the default: the current release"


def rule_label(rule, release_notes: list[str], engine_version: str | None, runner: str | None = None) -> str:
    """The memory rule as `fit` names it: its label, the release planned at where none was stated, and the
    model runner the release runs the model on where the rule names a choice (vLLM's V1 or V2)."""
    default = any(DEFAULT_RELEASE in n for n in release_notes)
    label = f"{rule.label}; planned at {engine_version}, {DEFAULT_RELEASE}" if default else rule.label
    return f"{label}; Model Runner {runner}" if runner else label


def planned_release(catalog, d: Deployment, arch: Architecture | None) -> tuple[Deployment, list[str]]:
    """``d`` with the engine release it is planned at: the one it states; else the engine's current
    release (engine_memory_rules.yaml ``current_release``), said so in a note; else, for a cache layout the
    engine's default release line predates (DeepSeek-V4 on vLLM), the newest release line with an
    admission rule for it, since only a release that has the layout runs it."""
    if d.engine_version:
        return d, []
    current = current_release(catalog, d.engine)
    if current is not None:
        return d.model_copy(update={"engine_version": current.release}), [
            f"planned at {d.engine} {current.release}, {DEFAULT_RELEASE} (checked "
            f"{current.checked.isoformat()}); state engine_version for another release"]
    if arch is None or arch.compressed is None:
        return d, []
    rules = sorted((r for r in catalog.admission_rules if r.engine == d.engine and r.layout == "compressed_attention"),
                   key=lambda r: release_key(r.first_release))
    default = memory_rule(catalog, d.engine)
    if not rules or default.last_release is None or \
            release_key(default.last_release) >= release_key(rules[0].first_release):
        return d, []
    release = rules[-1].first_release
    return d.model_copy(update={"engine_version": release}), [
        f"planned at {d.engine} {release}: the default release line ({default.releases}) predates this model's "
        f"cache layout, first served in {rules[0].first_release}; state engine_version for another release"]
