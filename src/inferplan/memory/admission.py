"""The KV-cache blocks an engine charges each request, by its release's ``AdmissionRule``
(``catalog/data/engine_admission_rules.yaml``), for DeepSeek-V4's compressed attention on vLLM.

vLLM keeps the cache in groups, each with its own block size, laid out in one pool:

- the pooled-entry group: each CSA layer's entries (one per ``csa_ratio`` tokens) and indexer
  keys, each HCA layer's entries (one per ``hca_ratio`` tokens), in ``full_block_tokens`` blocks;
- the window group: every layer's last ``sliding_window`` entries, in ``window_block_tokens`` blocks;
- the compressor state of the CSA layers (and their indexers) and of the HCA layers, kept as
  sliding windows of ``2 x csa_ratio`` and ``hca_ratio`` pending tokens in tiny blocks.

A recycled group (the last three) frees blocks behind its window, but reserves for every request
``cdiv(min(window - 1 + in-flight tokens, max_model_len), block) + 1`` blocks, the in-flight tokens
being ``max_num_batched_tokens x in_flight_batches``. Each recycled layer's page is padded up to
the nearest page size of the pooled-entry group, and the pool is cut into blocks of the layer
tuples the groups share, so it gives each byte a group uses ``packing`` bytes.

``startup_bytes`` is what vLLM divides the pool by for its printed maximum concurrency;
``needed_bytes`` what its start-up check ("KV cache is needed") compares with the pool;
``running_sequences`` how many requests the pool holds while they decode, with the in-flight
tokens of the whole batch reserved once (what the engine's blocks hold at run time).
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
class RecycledGroup:
    """A group whose blocks behind its window are freed: its window, block and page on one GPU."""

    name: str
    window_tokens: int
    block_tokens: int
    page_bytes: float  # one block of the group across all its layers, pages padded

    def blocks(self, tokens: int) -> int:
        """Blocks the group holds for a request of ``tokens`` whose last ``tokens`` may be in flight
        (min'd with the request's length, as the engine caps it at max_model_len)."""
        return math.ceil(tokens / self.block_tokens) + 1


@dataclass(frozen=True)
class AdmissionReserve:
    """One instance's per-request block charge (one GPU: DeepSeek-V4's single KV head is replicated)."""

    full_block_tokens: int
    full_page_bytes: float  # one block of the pooled-entry group across its layers
    recycled: tuple[RecycledGroup, ...]
    in_flight_tokens: int  # max_num_batched_tokens x in_flight_batches
    in_flight_batches: int
    packing: float  # pool bytes per byte of the groups' pages (layer-tuple stride / pooled-entry page)

    def _full(self, tokens: int) -> float:
        return math.ceil(tokens / self.full_block_tokens) * self.full_page_bytes

    def needed_bytes(self, tokens: int, max_len: int) -> float:
        """The bytes the engine's start-up check needs for one request of ``tokens`` (max_model_len
        ``max_len``): every group's admission blocks, as its pages are sized."""
        held = self._full(tokens)
        for g in self.recycled:
            held += g.blocks(min(g.window_tokens - 1 + self.in_flight_tokens, max_len)) * g.page_bytes
        return held

    def startup_bytes(self, tokens: int, max_len: int) -> float:
        """Pool bytes one request of ``tokens`` takes in the engine's maximum-concurrency figure."""
        return self.packing * self.needed_bytes(tokens, max_len)

    def steady_bytes(self, tokens: int) -> float:
        """Pool bytes one decoding request of ``tokens`` holds: its pooled entries and each recycled
        group's window with the tokens of the batches in flight."""
        held = self._full(tokens)
        for g in self.recycled:
            held += g.blocks(min(g.window_tokens - 1 + self.in_flight_batches, tokens)) * g.page_bytes
        return self.packing * held

    def transient_bytes(self, in_flight: int | None = None) -> float:
        """Pool bytes the tokens in flight across the whole batch (at most ``in_flight_tokens``) hold in
        the recycled groups."""
        flying = self.in_flight_tokens if in_flight is None else min(in_flight, self.in_flight_tokens)
        return self.packing * sum(math.ceil(flying / g.block_tokens) * g.page_bytes for g in self.recycled)

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


def admission_reserve(arch: Architecture, rule: AdmissionRule, kv_bits: float,
                      max_num_batched_tokens: int) -> AdmissionReserve:
    """The per-request charge of ``rule`` for a compressed-attention architecture at a KV width."""
    c = arch.compressed
    assert c is not None, "an admission reserve is for DeepSeek-V4's compressed attention"
    kinds = Counter(arch.layer_kinds)
    entry = compressed.entry_bytes(arch, kv_bits)
    b = rule.full_block_tokens
    # the pooled-entry group: one page per layer and tensor, by page size
    full_pages = Counter({b // c.csa_ratio * entry: kinds[LayerKind.CSA]})
    full_pages[b // c.csa_ratio * compressed.indexer_key_bytes(arch)] += kinds[LayerKind.CSA]
    full_pages[b // c.hca_ratio * entry] += kinds[LayerKind.HCA]
    full_pages = +full_pages
    sizes = sorted(full_pages)

    def padded(page: float) -> float:
        return min((s for s in sizes if s >= page), default=page) if rule.pad_to_full_pages else page

    window_layers = sum(kinds.values())
    groups = [  # (name, window, block, one layer's pages per tensor, layers)
        ("window", arch.sliding_window or 0, rule.window_block_tokens, (entry,), window_layers),
        ("csa compressor state", compressed.state_window_tokens(arch, LayerKind.CSA), rule.csa_state_block_tokens,
         compressed.state_bytes_per_token(arch, LayerKind.CSA), kinds[LayerKind.CSA]),
        ("hca compressor state", compressed.state_window_tokens(arch, LayerKind.HCA), rule.hca_state_block_tokens,
         compressed.state_bytes_per_token(arch, LayerKind.HCA), kinds[LayerKind.HCA]),
    ]
    recycled = tuple(
        RecycledGroup(name, window, block, layers * sum(padded(block * t) for t in per_token))
        for name, window, block, per_token, layers in groups if layers and window)
    full_page = sum(size * n for size, n in full_pages.items())
    packing = 1.0
    if rule.pack_layer_tuples and full_page:
        tuples = layer_tuples(max(full_pages.values()), [n for *_, n in groups if n])
        packing = tuples * sum(sizes) / full_page
    return AdmissionReserve(b, full_page, recycled, max_num_batched_tokens * rule.in_flight_batches,
                            rule.in_flight_batches, packing)


def layer_tuples(least: int, counts: list[int]) -> int:
    """Layers per tuple of the shared pool: the count, at least the pooled-entry group's, that pads
    the groups' layer counts (each rounded up to a multiple of it) least; the smallest on a tie."""
    counts = [least, *counts]
    return min(range(least, max(counts) + 1), key=lambda x: (sum(math.ceil(n / x) * x - n for n in counts), x))


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
    note = (f"{rule.id}: each request reserves its window and compressor-state blocks for "
            f"{reserve.in_flight_tokens:,} tokens in flight ({rule.in_flight_batches} x max_num_batched_tokens "
            f"{max_num_batched_tokens:,}): {reserve.startup_bytes(max_len, max_len) / GiB:.2f} GiB per "
            f"{max_len:,}-token request")
    return dataclasses.replace(layout, admission=reserve, admission_max_len=max_len), [note]


DEFAULT_RELEASE = "the default: the current release"


def rule_label(rule, release_notes: list[str], engine_version: str | None) -> str:
    """The memory rule as `fit` names it: its label, and the release planned at where none was stated."""
    default = any(DEFAULT_RELEASE in n for n in release_notes)
    return f"{rule.label}; planned at {engine_version}, {DEFAULT_RELEASE}" if default else rule.label


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
