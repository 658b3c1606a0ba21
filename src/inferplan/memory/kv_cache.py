"""KV cache and recurrent-state sizes, per token and per sequence, per GPU and per instance.

Per layer kind (see ``catalog.architecture``):

- full attention: ``2 × kv_heads × head_dim × bytes`` per token (K and V; Gemma 4's full-attention
  layers with their own ``kv_heads`` and ``head_dim``, and two tensors cached even where K = V);
- sliding window: the same per token, but a sequence never holds more than the window;
- MLA: ``(kv_lora_rank + qk_rope_head_dim) × bytes`` per token (one latent, no separate V);
- linear attention / Mamba: a constant state per sequence, independent of its length.

Tensor parallelism splits KV heads across GPUs; when TP exceeds the KV heads each GPU keeps one
(replicated) head, and MLA's single latent is replicated on every TP rank. Pipeline parallelism
splits layers (``memory.stages``); each stage has its own layout, a sequence's bytes per GPU are the
most any stage holds for it, and where the engine sizes each stage's cache by its own room the
stages' rooms scale what a sequence takes of the smallest (``room_bytes_per_sequence``).
"""

from __future__ import annotations

import dataclasses
import functools
import math
import operator
from dataclasses import dataclass
from typing import Protocol

from inferplan.catalog.architecture import Architecture, LayerKind
from inferplan.memory import compressed
from inferplan.memory.stages import stage_bounds


class RequestCharge(Protocol):
    """What an engine release charges each request of a cache it keeps in recycled block groups
    (``memory.admission.AdmissionReserve``)."""

    def startup_bytes(self, tokens: int, max_len: int) -> float: ...
    def needed_bytes(self, tokens: int, max_len: int) -> float: ...
    def running_sequences(self, pool_bytes: float, tokens: int) -> int: ...

INDEXER_KEY_BYTES = 1  # DSA indexer keys are FP8
INDEXER_SCALE_BLOCK = 128  # one FP32 scale per 128 key values


@dataclass(frozen=True)
class KvLayout:
    """KV geometry of one engine instance (``tp × pp`` GPUs) at a KV dtype."""

    growing_bytes_per_token_per_gpu: float  # full-attention and MLA layers (+ DSA indexer keys): grow with context
    window_bytes_per_token_per_gpu: float  # sliding-window layers: capped at the window
    state_bytes_per_seq_per_gpu: float  # linear-attention / Mamba state
    growing_bytes_per_token: float  # the same, summed over the instance's GPUs
    window_bytes_per_token: float
    state_bytes_per_seq: float
    window_tokens: int | None
    residual_tokens: int  # KIVI: recent tokens kept at 16 bits
    residual_extra_bytes_per_token_per_gpu: float
    # DSA: the part of growing_bytes_per_token_per_gpu (the MLA latent) a decode step reads only for
    # the top-k tokens the indexer selects; stored for every token all the same
    sparse_bytes_per_token_per_gpu: float = 0.0
    sparse_topk: int | None = None
    # under pipeline parallelism, each stage's own layout: a sequence's bytes (and a step's reads)
    # are those of the stage that holds the most at that length — windows and fixed state included,
    # which the per-token figures above (the stage with the most bytes per token) leave out
    stages: tuple[KvLayout, ...] = ()
    # each stage's KV room as a multiple of the smallest stage's (the stage with the most weights):
    # the engine sizes every stage's cache to the same count of blocks, so a sequence takes, of the
    # smallest room, the most any stage needs for it relative to that stage's own room
    stage_rooms: tuple[float, ...] = ()
    # what the engine release charges each request in blocks (memory.admission), for a cache it keeps
    # in groups that reserve in-flight tokens per request; None: a request takes its own bytes
    admission: RequestCharge | None = None
    admission_max_len: int = 0  # the max_model_len the engine caps each group's reserve at

    @property
    def bytes_per_token(self) -> float:
        """What one token of context occupies across the instance, all layers (window layers
        counted in full, as for a context inside the window)."""
        return self.growing_bytes_per_token + self.window_bytes_per_token

    @property
    def bytes_per_token_per_gpu(self) -> float:
        return self.growing_bytes_per_token_per_gpu + self.window_bytes_per_token_per_gpu

    def sequence_bytes_per_gpu(self, tokens: int, block_tokens: int = 1) -> float:
        """Memory one sequence of ``tokens`` holds on each GPU (of the fullest stage), rounded up to whole blocks."""
        if self.stages:
            return max(stage.sequence_bytes_per_gpu(tokens, block_tokens) for stage in self.stages)
        held = _round_up(tokens, block_tokens)
        windowed = held
        if self.window_tokens is not None and tokens > self.window_tokens:
            # a window that straddles block boundaries touches one block more
            windowed = _round_up(self.window_tokens, block_tokens) + (block_tokens if block_tokens > 1 else 0)
        residual = min(tokens, self.residual_tokens) * self.residual_extra_bytes_per_token_per_gpu
        return (
            held * self.growing_bytes_per_token_per_gpu
            + min(windowed, held) * self.window_bytes_per_token_per_gpu
            + self.state_bytes_per_seq_per_gpu
            + residual
        )

    def cache_bytes_per_gpu(self, cells: int, window_cells: int, states: int) -> float:
        """Memory a cache sized by cells holds on each GPU (of the fullest stage): ``cells`` in the growing
        layers, ``window_cells`` in the sliding-window layers and ``states`` recurrent states (llama.cpp's)."""
        if self.stages:
            return max(stage.cache_bytes_per_gpu(cells, window_cells, states) for stage in self.stages)
        return (cells * self.growing_bytes_per_token_per_gpu + window_cells * self.window_bytes_per_token_per_gpu
                + states * self.state_bytes_per_seq_per_gpu)

    def read_bytes_per_gpu(self, tokens: int) -> float:
        """Cache bytes one decode step reads for a sequence of ``tokens``: everything it holds,
        except that sparse attention reads the latent of only its top-k tokens."""
        if self.stages:
            return max(stage.read_bytes_per_gpu(tokens) for stage in self.stages)
        skipped = max(tokens - self.sparse_topk, 0) * self.sparse_bytes_per_token_per_gpu if self.sparse_topk else 0.0
        return self.sequence_bytes_per_gpu(tokens) - skipped

    def room_bytes_per_sequence(self, tokens: int, block_tokens: int = 1) -> float:
        """Bytes of the smallest stage's KV room one sequence of ``tokens`` takes: its own bytes
        where one stage holds everything; under pipeline parallelism the most any stage needs for it,
        scaled to that stage's room (a stage with fewer weights has more room for the same bytes)."""
        if self.admission is not None and not self.stages:
            return self.admission.startup_bytes(tokens, self.admission_max_len)
        if not self.stages or not self.stage_rooms:
            return self.sequence_bytes_per_gpu(tokens, block_tokens)
        return max(stage.sequence_bytes_per_gpu(tokens, block_tokens) / room
                   for stage, room in zip(self.stages, self.stage_rooms))

    def needed_bytes_per_sequence(self, tokens: int, block_tokens: int = 1) -> float:
        """Room the engine's start-up check needs for one sequence of ``tokens``: its admission charge
        where the release states one, else the room it takes."""
        if self.admission is not None and not self.stages:
            return self.admission.needed_bytes(tokens, self.admission_max_len)
        return self.room_bytes_per_sequence(tokens, block_tokens)

    def sequences_held(self, room_bytes_per_gpu: float, tokens: int, block_tokens: int = 1) -> int:
        """Sequences of ``tokens`` the room holds while they run: each its own room, except that under
        an admission reserve each decoding request holds its window and the tokens in flight across
        the batch are reserved once."""
        if self.admission is not None and not self.stages:
            return self.admission.running_sequences(room_bytes_per_gpu, tokens)
        seq = self.room_bytes_per_sequence(tokens, block_tokens)
        return int(room_bytes_per_gpu // seq) if seq else 10**9

    def max_tokens_per_sequence(self, budget_bytes_per_gpu: float, sequences: int, block_tokens: int = 1) -> int:
        """Largest context each of ``sequences`` concurrent sequences can have in the budget (the
        smallest stage's room under pipeline parallelism)."""
        if sequences <= 0 or budget_bytes_per_gpu <= 0:
            return 0
        per_seq = budget_bytes_per_gpu / sequences
        lo, hi = 0, 1
        while self.room_bytes_per_sequence(hi, block_tokens) <= per_seq and hi < 2**40:
            hi *= 2
        while lo < hi:  # largest t with room_bytes(t) <= per_seq
            mid = (lo + hi + 1) // 2
            if self.room_bytes_per_sequence(mid, block_tokens) <= per_seq:
                lo = mid
            else:
                hi = mid - 1
        return lo


def _round_up(tokens: int, block: int) -> int:
    return int(math.ceil(tokens / block) * block) if block > 1 else tokens


def _split_bytes_per_token(arch: Architecture, kind: LayerKind, kv_bits: float, tp: int) -> tuple[float, float]:
    """(growing, windowed) bytes one token adds to one layer on one GPU: full-attention and MLA
    layers grow with the context, sliding layers only up to the window; DeepSeek-V4's layers keep a
    window of entries and grow by their pooled ones (replicated on every TP rank, one KV head)."""
    if arch.compressed is not None and kind in (LayerKind.SLIDING, LayerKind.CSA, LayerKind.HCA):
        return compressed.growing_bytes_per_token(arch, kind, kv_bits), compressed.entry_bytes(arch, kv_bits)
    if kind is LayerKind.SLIDING:
        return 0.0, _attention_bytes_per_token_per_layer(arch, kind, kv_bits, tp)
    return _attention_bytes_per_token_per_layer(arch, kind, kv_bits, tp), 0.0


def _attention_bytes_per_token_per_layer(arch: Architecture, kind: LayerKind, kv_bits: float, tp: int) -> float:
    if kind in (LayerKind.FULL, LayerKind.SLIDING, LayerKind.SPARSE):
        heads_per_gpu = max(1, math.ceil(arch.layer_kv_heads(kind) / tp))
        indexer = 0.0
        if kind is LayerKind.SPARSE and arch.dsa:  # MiniMax-M3 keeps the index key in the cache's dtype
            indexer = (arch.dsa.index_head_dim * kv_bits / 8 if arch.dsa.index_keys_in_cache_dtype
                       else indexer_bytes_per_token_per_layer(arch))
        # K and V both cached, also where one projection makes them (Gemma 4's K = V layers)
        return 2 * heads_per_gpu * arch.layer_head_dim(kind) * kv_bits / 8 + indexer
    if kind is LayerKind.MLA:
        return mla_latent_bytes_per_token_per_layer(arch, kv_bits) + indexer_bytes_per_token_per_layer(arch)
    return 0.0


def mla_latent_bytes_per_token_per_layer(arch: Architecture, kv_bits: float) -> float:
    """MLA's one compressed latent plus its RoPE key, replicated on every TP rank."""
    assert arch.mla is not None
    return (arch.mla.kv_lora_rank + arch.mla.qk_rope_head_dim) * kv_bits / 8


def indexer_bytes_per_token_per_layer(arch: Architecture) -> float:
    """DSA indexer keys: FP8 whatever the KV dtype, plus one FP32 scale per 128 values (vLLM's
    DeepseekV32IndexerCache, catalogue source seedlines-vllm-dsv32-indexer-cache, and SGLang's NSA pool
    both store 132 bytes for a 128-wide key); averaged over the sparse layers where only some run an
    indexer of their own (GLM-5.2)."""
    if arch.dsa is None:
        return 0.0
    d = arch.dsa.index_head_dim
    return (d * INDEXER_KEY_BYTES + math.ceil(d / INDEXER_SCALE_BLOCK) * 4) * arch.dsa.own_indexer_share


def state_bytes_per_layer(arch: Architecture, kind: LayerKind, tp: int = 1) -> float:
    """Recurrent state one sequence holds in one layer on one GPU of a TP group."""
    if kind is LayerKind.LINEAR:
        d = arch.linear
        assert d is not None
        v_heads = max(1, math.ceil(d.num_value_heads / tp))
        k_heads = max(1, math.ceil(d.num_key_heads / tp))
        recurrent = v_heads * d.key_head_dim * d.value_head_dim
        conv = (2 * k_heads * d.key_head_dim + v_heads * d.value_head_dim) * (d.conv_kernel - 1)
        return recurrent * d.recurrent_state_bytes + conv * d.conv_state_bytes
    if kind is LayerKind.MAMBA:
        m = arch.mamba
        assert m is not None
        heads = max(1, math.ceil(m.num_heads / tp))
        groups = max(1, math.ceil(m.n_groups / tp))
        ssm = heads * m.head_dim * m.state_size
        conv = (heads * m.head_dim + 2 * groups * m.state_size) * (m.conv_kernel - 1)
        return ssm * m.ssm_state_bytes + conv * m.conv_state_bytes
    if kind in (LayerKind.CSA, LayerKind.HCA):
        return compressed.state_bytes(arch, kind)
    return 0.0


@functools.lru_cache(maxsize=1024)  # pure in its (hashable, frozen) arguments; a frontier asks the same layout often
def kv_layout(
    arch: Architecture,
    *,
    kv_bits: float,
    tp: int = 1,
    pp: int = 1,
    residual_tokens: int = 0,
    residual_bits: float = 16,
) -> KvLayout:
    """KV geometry for an instance of ``tp × pp`` GPUs."""
    stages = _stages(arch.layer_kinds, pp)
    layouts = [_stage_layout(arch, layers, kv_bits, tp, residual_tokens, residual_bits) for layers in stages]
    busiest = max(range(pp), key=lambda i: layouts[i].bytes_per_token_per_gpu)
    whole = layouts[0] if pp == 1 else _stage_layout(arch, arch.layer_kinds, kv_bits, tp, residual_tokens, residual_bits)
    return dataclasses.replace(
        layouts[busiest],
        growing_bytes_per_token=tp * whole.growing_bytes_per_token_per_gpu,
        window_bytes_per_token=tp * whole.window_bytes_per_token_per_gpu,
        state_bytes_per_seq=tp * whole.state_bytes_per_seq_per_gpu,
        stages=tuple(layouts) if pp > 1 else (),
    )


def _stage_layout(arch: Architecture, layers: tuple[LayerKind, ...], kv_bits: float, tp: int,
                  residual_tokens: int, residual_bits: float) -> KvLayout:
    """The layout of the layers one GPU holds (one pipeline stage, one tensor-parallel rank)."""
    kinds = set(arch.layer_kinds)  # a few kinds over many layers: each kind's bytes once, summed in layer order
    split = {bits: {k: _split_bytes_per_token(arch, k, bits, tp) for k in kinds} for bits in {kv_bits, residual_bits}}

    def per_gpu(part: int, bits=kv_bits):  # part 0: growing, 1: windowed
        return sum(map(operator.itemgetter(part), map(split[bits].__getitem__, layers)))

    growing, window = per_gpu(0), per_gpu(1)
    windowed = any(split[kv_bits][k][1] for k in arch.layer_kinds)
    residual = per_gpu(0, residual_bits) + per_gpu(1, residual_bits) - growing - window  # KIVI's 16-bit recent tokens
    state_by_kind = {k: state_bytes_per_layer(arch, k, tp) for k in set(layers)}
    state = sum(map(state_by_kind.__getitem__, layers))
    return KvLayout(
        growing_bytes_per_token_per_gpu=growing,
        window_bytes_per_token_per_gpu=window,
        state_bytes_per_seq_per_gpu=state,
        growing_bytes_per_token=tp * growing,
        window_bytes_per_token=tp * window,
        state_bytes_per_seq=tp * state,
        window_tokens=arch.sliding_window if windowed else None,
        residual_tokens=residual_tokens,
        residual_extra_bytes_per_token_per_gpu=residual if residual_tokens else 0.0,
        sparse_bytes_per_token_per_gpu=_sparse_bytes_per_token(arch, layers, kv_bits, tp),
        sparse_topk=sparse_topk_tokens(arch),
    )


def _sparse_bytes_per_token(arch: Architecture, layers: tuple[LayerKind, ...], kv_bits: float, tp: int) -> float:
    """Bytes per token of context a decode step reads only for the top-k selected tokens: DSA's MLA
    latent, MiniMax-M3's K and V, DeepSeek-V4's CSA entries (the indexer keys are read for every token)."""
    if arch.dsa and LayerKind.SPARSE in layers:  # block-sparse GQA layers: their K and V
        kv_heads = max(1, math.ceil(arch.num_kv_heads / tp))
        return layers.count(LayerKind.SPARSE) * 2 * kv_heads * arch.head_dim * kv_bits / 8
    if arch.dsa:  # DSA over MLA layers; a pipeline stage of block-sparse GQA's full layers only has none
        return layers.count(LayerKind.MLA) * mla_latent_bytes_per_token_per_layer(arch, kv_bits) if arch.mla else 0.0
    return sum(compressed.sparse_bytes_per_token(arch, k, kv_bits) for k in layers) if arch.compressed else 0.0


def sparse_topk_tokens(arch: Architecture) -> int | None:
    """Tokens of context the selected entries cover: DSA picks tokens, CSA pooled entries."""
    if arch.dsa:
        return arch.dsa.index_topk
    if arch.compressed and LayerKind.CSA in arch.layer_kinds:
        return arch.compressed.index_topk * arch.compressed.csa_ratio
    return None


def _stages(kinds: tuple[LayerKind, ...], pp: int) -> list[tuple[LayerKind, ...]]:
    """The layers of each of ``pp`` contiguous stages (split as ``stage_bounds`` does)."""
    return [kinds[start:end] for start, end in stage_bounds(len(kinds), pp)]


def stated_layout(bytes_per_token: float, *, tp: int = 1, pp: int = 1) -> KvLayout:
    """A layout from a stated per-token KV size, split evenly over the instance's GPUs."""
    return KvLayout(
        growing_bytes_per_token_per_gpu=bytes_per_token / (tp * pp),
        window_bytes_per_token_per_gpu=0.0,
        state_bytes_per_seq_per_gpu=0.0,
        growing_bytes_per_token=bytes_per_token,
        window_bytes_per_token=0.0,
        state_bytes_per_seq=0.0,
        window_tokens=None,
        residual_tokens=0,
        residual_extra_bytes_per_token_per_gpu=0.0,
    )
