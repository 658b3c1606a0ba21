"""Engine defaults chosen by the GPU's memory, as data on an ``engines.yaml`` record.

SGLang picks its chunked-prefill size and its largest CUDA-graph batch by the device's total memory
(``server_args._handle_gpu_memory_settings``; the tensor-parallel size also moves the graph batch),
then reserves memory outside ``mem_fraction_static`` from those two numbers:

    mem_fraction_static = round((gpu_mem - reserved) / gpu_mem, 3)
    reserved = base + per_token x max(chunk, floor_tokens) + per_graph_batch x cuda_graph_max_bs
               + per_eight_gpus x tp x pp / 8 + prefill graphs, at least floor when gpu_mem is above floor_above

``defaults_by_gpu_memory`` holds the tiers (ordered by ``below_gib``, the last one open) and
``memory_fraction_reserve`` the reserve; ``memory/settings.py`` applies both. The reserve's
``fraction_scales`` lower the fraction further where the engine does so for the attention backend it
picks on a software stack (SGLang 0.5.6: AITER on ROCm, x 0.85 above a context of 8,192 tokens). The numbers are in the
engine's own units (GiB thresholds, MiB terms) and become bytes through the properties here.
``ReleaseDefaults``, on an engine release's memory rule, changes them from a release on: other tiers
(SGLang before 0.4.7: no chunked prefill by default before 0.2.13, a fixed 8,192-token chunk to 0.3.5, then 2,048
below 25,000 MiB; 0.5.20's for 20-35 GiB GPUs), a stated max_num_seqs capping the graph batch (SGLang 0.5.22) and the
prefill CUDA graphs captured by default (SGLang from 0.5.10: ``catalog/prefill_graphs.py``).

No postponed annotations here, as in ``schema.py``: pydantic builds the model from real types.
"""

from typing import Annotated

from pydantic import AfterValidator, ConfigDict, Field

from inferplan.catalog.prefill_graphs import PrefillGraphs
from inferplan.catalog.provenance import Count, Ratio, release_order
from inferplan.inputs import Input
from inferplan.units import GiB, MiB


class GpuMemoryTier(Input):
    """The defaults an engine takes on a GPU reporting less than ``below_gib`` of memory (None: any
    larger GPU), and above the previous tier's bound."""

    model_config = ConfigDict(defer_build=True)

    below_gib: float | None = Field(None, gt=0)
    max_num_batched_tokens: int = Field(ge=1)  # SGLang chunked_prefill_size
    cuda_graph_max_bs: int = Field(ge=1)  # the largest decode batch captured as a CUDA graph
    # a larger graph batch from a tensor-parallel size on: {min tp: cuda_graph_max_bs}
    cuda_graph_max_bs_from_tp: dict[int, int] = Field(default_factory=dict)
    # the engine divides a stated chunk by this on these GPUs as it does its default (SGLang 0.3.6: 8,192 // 4)
    stated_chunk_divisor: int | None = Field(None, ge=2)

    @property
    def below_bytes(self) -> float | None:
        return None if self.below_gib is None else self.below_gib * GiB

    def graph_batch(self, tp: int) -> int:
        """The largest CUDA-graph batch at tensor-parallel size ``tp``."""
        larger = [size for least, size in sorted(self.cuda_graph_max_bs_from_tp.items()) if tp >= least]
        return larger[-1] if larger else self.cuda_graph_max_bs


def _ordered(tiers: tuple[GpuMemoryTier, ...]) -> tuple[GpuMemoryTier, ...]:
    bounds = [t.below_gib for t in tiers]
    if tiers and (bounds[-1] is not None or None in bounds[:-1]):
        raise ValueError("only the last GPU-memory tier is open (no below_gib)")
    if any(a >= b for a, b in zip(bounds[:-2], bounds[1:-1])):
        raise ValueError("GPU-memory tiers go from the smallest below_gib to the largest, without overlap")
    return tiers


GpuMemoryTiers = Annotated[tuple[GpuMemoryTier, ...], AfterValidator(_ordered)]


def tier_for(tiers: tuple[GpuMemoryTier, ...], total_bytes: float) -> GpuMemoryTier | None:
    """The tier a GPU reporting ``total_bytes`` falls in (None: the engine has no tiers)."""
    for tier in tiers:
        if tier.below_bytes is None or total_bytes < tier.below_bytes:
            return tier
    return None


class AttentionDpChunk(Input):
    """How the engine divides its chunk (the default or a stated one) under attention data parallelism from
    ``first_release`` on: by ``divisor``, or by the attention data-parallel ranks where it is None."""

    model_config = ConfigDict(defer_build=True)

    first_release: str
    divisor: int | None = Field(None, ge=2)


def attention_dp_chunk(entries: tuple[AttentionDpChunk, ...], release: str | None, ranks: int, chunk: int) -> int:
    """Each attention data-parallel rank's chunk of ``chunk`` at ``release`` (None: the newest) over ``ranks``
    ranks: the latest entry reached divides it (none reached, or one rank: ``chunk`` as it is)."""
    reached = [e for e in entries if _from(release, e.first_release)]
    if ranks < 2 or not reached:
        return chunk
    entry = max(reached, key=lambda e: release_order(e.first_release))
    return max(chunk // (entry.divisor or ranks), 1)


class SlotLimit(Input):
    """The most sequences (slots) a context of the engine may be created with from ``first_release`` on (None: no
    limit from that release; llama.cpp's LLAMA_MAX_SEQ, which llama_context checks n_seq_max against)."""

    model_config = ConfigDict(defer_build=True)

    first_release: str
    max_slots: int | None = Field(None, ge=1)


def slot_limit(entries: tuple[SlotLimit, ...], release: str | None) -> int | None:
    """The most slots the engine opens at ``release`` (None: the newest): the latest entry reached (none: no limit)."""
    reached = [e for e in entries if _from(release, e.first_release)]
    return max(reached, key=lambda e: release_order(e.first_release)).max_slots if reached else None


class FractionScale(Input):
    """A factor the engine applies to its static fraction, the one it picks or the one it is given,
    when it runs ``attention_backend`` — its default on the ``software`` stack for models without
    latent (MLA) attention, and for MLA models with ``latent_kv_heads_per_gpu`` KV heads per GPU —
    with a context above ``above_context_tokens``."""

    model_config = ConfigDict(defer_build=True)

    software: str  # the stack on which the engine picks the backend by default (a Software value)
    attention_backend: str  # the backend's name in the engine (SGLang --attention-backend)
    above_context_tokens: Count
    scale: Ratio
    # the config's KV heads over the tensor-parallel size with which an MLA model takes the backend
    latent_kv_heads_per_gpu: tuple[int, ...] = ()
    note: str

    def applies(self, software: str, context_tokens: int | None, latent_kv_heads_per_gpu: int | None) -> bool:
        """``latent_kv_heads_per_gpu``: None for a model without latent attention."""
        backend = latent_kv_heads_per_gpu is None or latent_kv_heads_per_gpu in self.latent_kv_heads_per_gpu
        return (software == self.software and backend and context_tokens is not None
                and context_tokens > self.above_context_tokens.value)


class MemoryFractionReserve(Input):
    """The memory an engine keeps outside its static fraction, from its chunk and graph batch (SGLang
    0.5.x without DP attention; the prefill-graph term comes from the release's ``prefill_graphs``, the
    speculative one from engine_mtp_rules.yaml)."""

    model_config = ConfigDict(defer_build=True)

    base_mib: float = Field(ge=0)  # constant metadata (attention backend)
    mib_per_chunk_token: float = Field(ge=0)  # activations of one prompt chunk
    chunk_floor_tokens: int = Field(ge=0)  # the chunk counted is at least this
    mib_per_graph_batch: float = Field(ge=0)  # CUDA-graph buffers per captured batch row
    mib_per_eight_gpus: float = Field(ge=0)  # x tp x pp / 8
    floor_mib: float = Field(ge=0)  # the reserve is at least this ...
    floor_above_gib: float = Field(ge=0)  # ... on GPUs with more than this
    fraction_decimals: int = Field(ge=1)  # the fraction is rounded to this many decimals
    fraction_scales: tuple[FractionScale, ...] = ()  # applied after the rounding, as the engine does

    def reserved_bytes(self, total_bytes: float, chunk_tokens: int, graph_batch: int, gpus: int,
                       prefill_graph_bytes: float = 0.0) -> float:
        """Bytes reserved on a GPU of ``total_bytes`` for one instance of ``gpus`` (tp x pp) GPUs;
        ``prefill_graph_bytes``: kept for prefill CUDA graphs, added before the floor as the engine adds it."""
        mib = (self.base_mib + self.mib_per_chunk_token * max(chunk_tokens, self.chunk_floor_tokens)
               + self.mib_per_graph_batch * graph_batch + self.mib_per_eight_gpus * gpus / 8 + prefill_graph_bytes / MiB)
        if total_bytes > self.floor_above_gib * GiB:
            mib = max(mib, self.floor_mib)
        return mib * MiB

    def fraction(self, total_bytes: float, chunk_tokens: int, graph_batch: int, gpus: int,
                 extra_bytes: float = 0.0, prefill_graph_bytes: float = 0.0) -> float:
        """The static fraction the engine picks: (total - reserved) / total, rounded as it rounds it;
        ``extra_bytes``: what it reserves besides, after the floor, for a speculative draft (engine_mtp_rules.yaml)."""
        reserved = self.reserved_bytes(total_bytes, chunk_tokens, graph_batch, gpus, prefill_graph_bytes) + extra_bytes
        return round((total_bytes - reserved) / total_bytes, self.fraction_decimals)


def _from(release: str | None, first_release: str) -> bool:
    """Whether ``release`` (None: the rule's open end, past every first release) is ``first_release`` or later, a post
    release after its base (``release_order``)."""
    return release is None or release_order(first_release) <= release_order(release)


class ReleaseTiers(Input):
    """The tiers the engine picks by GPU memory from ``first_release`` on, in place of engines.yaml's."""

    model_config = ConfigDict(defer_build=True)

    first_release: str  # inclusive, inside the rule's range
    tiers: GpuMemoryTiers
    # False: chunked prefill is off by default, so a prompt runs whole and the prompt step holds the tier's
    # tokens or the longest prompt (the max model length), the larger (SGLang before 0.2.13's max_prefill_tokens)
    chunked_prefill: bool = True
    sources: tuple[str, ...] = Field(min_length=1)
    note: str = ""


class GraphBatchCap(Input):
    """From ``first_release`` on, a stated max_num_seqs (SGLang ``--max-running-requests``) caps the largest decode
    CUDA-graph batch the tier gives, and with it the graph memory the engine's own default fraction leaves out."""

    model_config = ConfigDict(defer_build=True)

    first_release: str  # inclusive, inside the rule's range
    sources: tuple[str, ...] = Field(min_length=1)
    note: str = ""


class ReleaseDefaults(Input):
    """How an engine's releases change the defaults it picks by GPU memory (None on a rule: engines.yaml's hold)."""

    model_config = ConfigDict(defer_build=True)

    tiers: tuple[ReleaseTiers, ...] = ()  # each from its first_release to the next's
    graph_batch_capped_by_seqs: GraphBatchCap | None = None
    prefill_graphs: tuple[PrefillGraphs, ...] = ()  # each from its first_release to the next's (before the first: none)
    # where the rule's releases capture decode CUDA graphs up to a batch of their own, not the tier's
    # cuda_graph_max_bs, the sources that say so: the plan states no graph batch for them
    graph_batch_not_tiers: tuple[str, ...] = ()

    def first_releases(self) -> tuple[str, ...]:
        cap = self.graph_batch_capped_by_seqs
        return (*(t.first_release for t in self.tiers), *((cap.first_release,) if cap else ()),
                *(p.first_release for p in self.prefill_graphs))

    def source_ids(self) -> tuple[str, ...]:
        cap = self.graph_batch_capped_by_seqs
        return (*(s for t in self.tiers for s in t.sources), *(cap.sources if cap else ()),
                *(s for p in self.prefill_graphs for s in p.sources), *self.graph_batch_not_tiers)

    def prefill_graphs_at(self, release: str | None) -> PrefillGraphs | None:
        """The prefill graphs captured by default at ``release`` (None: the newest), None before the first entry."""
        reached = [p for p in self.prefill_graphs if _from(release, p.first_release)]
        return max(reached, key=lambda p: release_order(p.first_release)) if reached else None

    def _tiers_entry(self, release: str | None) -> ReleaseTiers | None:
        reached = [t for t in self.tiers if _from(release, t.first_release)]
        return max(reached, key=lambda t: release_order(t.first_release)) if reached else None

    def tiers_at(self, release: str | None, stated: tuple[GpuMemoryTier, ...]) -> tuple[GpuMemoryTier, ...]:
        """The tiers at ``release`` (a release number; None: the newest): the latest entry reached, else ``stated``."""
        entry = self._tiers_entry(release)
        return entry.tiers if entry else stated

    def chunks_prompts(self, release: str | None) -> bool:
        """Whether the engine splits a prompt into chunks by default at ``release`` (None: the newest); where it
        does not, the prompt step holds the tier's tokens or the longest prompt, the larger."""
        entry = self._tiers_entry(release)
        return entry is None or entry.chunked_prefill

    def caps_graph_batch(self, release: str | None) -> bool:
        """Whether a stated max_num_seqs caps the graph batch at ``release`` (None: the newest)."""
        cap = self.graph_batch_capped_by_seqs
        return cap is not None and _from(release, cap.first_release)
