"""DeepSeek-V4's compressed attention: what one layer stores per token and per sequence.

Every layer keeps a sliding window of its last ``window`` tokens, one shared key/value entry per
token (a single KV head, replicated on every tensor-parallel rank as MLA's latent is). On top of
the window:

- CSA layers pool the cache into one entry per ``csa_ratio`` tokens (overlapping pools) and keep
  an indexer key per entry, with which an indexer picks the ``index_topk`` entries a query attends;
- HCA layers pool one entry per ``hca_ratio`` tokens and attend all of them.

Sizes as vLLM allocates them (``deepseek_v4_attention.py``, ``deepseek_compressor.py``; the
catalogue source ``seedlines-hf-deepseek-v4-flash-config`` names the commits): an FP8 entry is the
non-rotary part in FP8, the rotary part in BF16, one scale byte per 64 FP8 values and one byte of
padding (584 bytes for a 512-wide head with 64 rotary dims); a 16-bit cache stores the head as is.
Each pooling layer also carries a float32 compressor state per sequence: ``overlap × ratio``
pending tokens of ``2 × overlap × head_dim`` values (overlap 2 on CSA layers, whose indexer has a
compressor of its own at its key width; 1 on HCA layers).
"""

from __future__ import annotations

import math

from inferplan.catalog.architecture import Architecture, LayerKind

FP8_SCALE_GROUP = 64  # one scale byte per 64 FP8 values of an entry
ENTRY_PADDING_BYTES = 1
COMPRESSOR_STATE_BYTES = 4  # float32
INDEXER_KEY_BYTES_PER_VALUE = 1  # FP8 indexer keys
INDEXER_SCALE_BLOCK = 128  # and one float32 scale per 128 key values


def entry_bytes(arch: Architecture, kv_bits: float) -> float:
    """One cached key/value entry (a token in the window, or a pooled entry)."""
    assert arch.compressed is not None
    d, rope = arch.head_dim, arch.compressed.rope_head_dim
    if kv_bits > 8:
        return d * kv_bits / 8
    nope = d - rope
    return nope * kv_bits / 8 + rope * 2 + math.ceil(nope / FP8_SCALE_GROUP) + ENTRY_PADDING_BYTES


def indexer_key_bytes(arch: Architecture) -> float:
    assert arch.compressed is not None
    d = arch.compressed.index_head_dim
    return d * INDEXER_KEY_BYTES_PER_VALUE + math.ceil(d / INDEXER_SCALE_BLOCK) * 4


def growing_bytes_per_token(arch: Architecture, kind: LayerKind, kv_bits: float) -> float:
    """Bytes a layer's pooled entries add per token of context (zero for window-only layers)."""
    c = arch.compressed
    assert c is not None
    if kind is LayerKind.CSA:
        return (entry_bytes(arch, kv_bits) + indexer_key_bytes(arch)) / c.csa_ratio
    if kind is LayerKind.HCA:
        return entry_bytes(arch, kv_bits) / c.hca_ratio
    return 0.0


def sparse_bytes_per_token(arch: Architecture, kind: LayerKind, kv_bits: float) -> float:
    """The part of a CSA layer's growth a decode step reads only for the top-k entries."""
    c = arch.compressed
    return entry_bytes(arch, kv_bits) / c.csa_ratio if c and kind is LayerKind.CSA else 0.0


def state_window_tokens(arch: Architecture, kind: LayerKind) -> int:
    """Pending tokens a pooling layer's compressor keeps: ``overlap x ratio`` (overlap 2 on CSA
    layers, 1 on HCA layers); 0 on window-only layers."""
    c = arch.compressed
    assert c is not None
    return {LayerKind.CSA: 2 * c.csa_ratio, LayerKind.HCA: c.hca_ratio}.get(kind, 0)


def state_bytes_per_token(arch: Architecture, kind: LayerKind) -> tuple[float, ...]:
    """Float32 compressor state per pending token, one figure per state tensor of the layer (CSA:
    its own compressor, then its indexer's, each ``2 x overlap x width`` values; HCA: one of
    ``2 x head_dim``)."""
    c = arch.compressed
    assert c is not None
    if kind is LayerKind.CSA:
        return tuple(2 * 2 * width * COMPRESSOR_STATE_BYTES for width in (arch.head_dim, c.index_head_dim))
    if kind is LayerKind.HCA:
        return (2 * arch.head_dim * COMPRESSOR_STATE_BYTES,)
    return ()


def state_bytes(arch: Architecture, kind: LayerKind) -> float:
    """Float32 compressor state one sequence keeps in a pooling layer."""
    return state_window_tokens(arch, kind) * sum(state_bytes_per_token(arch, kind))


def attention_params(arch: Architecture, kind: LayerKind) -> int:
    """One layer's attention weights: low-rank queries, one shared key/value head, a grouped
    low-rank output projection, and on CSA layers the indexer (the compressors' small
    projections are not counted)."""
    c = arch.compressed
    assert c is not None
    h, heads, d = arch.hidden_size, arch.num_attention_heads, arch.head_dim
    q = h * c.q_lora_rank + c.q_lora_rank + c.q_lora_rank * heads * d
    kv = h * d + d
    o = heads * d * c.o_lora_rank + c.o_groups * c.o_lora_rank * h
    indexer = 0
    if kind is LayerKind.CSA:
        n, di = c.index_n_heads, c.index_head_dim
        indexer = c.q_lora_rank * n * di + h * di + 2 * di + h * n
    return q + kv + o + heads + indexer
