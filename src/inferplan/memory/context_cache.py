"""The KV cache and compute buffer of an engine that sizes its cache by the context (llama.cpp, MLX).

llama.cpp allocates the cache for the whole ``n_ctx`` when it starts, rounded up to the release's
padding (``ContextCache``), next to the weights and a compute buffer; mlx-lm grows its cache in
256-token steps, so a context of N tokens holds N rounded up to the step. The cache is therefore
what the context needs, not what memory is left: a deployment fits when weights + cache + compute
buffer + runtime fit the device. A hybrid model keeps a recurrent state per llama.cpp slot and its
attention cache as the build sizes it; builds b6925-b7432 open 4 slots over one unified cache for
``--parallel 1``. The rules are data (``engine_memory_rules_context.yaml``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from inferplan.catalog.architecture import Architecture
from inferplan.catalog.context_rules import ComputeGraph, ContextCache
from inferplan.catalog.loader import Catalog
from inferplan.catalog.memory_rules import memory_rule
from inferplan.inputs.deployment import Deployment
from inferplan.memory.kv_cache import KvLayout
from inferplan.units import MiB


@dataclass(frozen=True)
class ContextKv:
    """The cache an engine holds for one context, per GPU."""

    tokens: int  # the context after the engine's rounding (llama.cpp prints it as the cache's cells)
    slot_tokens: int  # the cells each of its slots holds (llama.cpp's n_ctx_seq)
    bytes_per_gpu: float
    fits: bool  # the room weights, buffers and runtime leave holds it
    note: str
    room_bytes: float = math.inf  # what weights, buffers and runtime leave for it, per GPU

    @property
    def shortfall_bytes_per_gpu(self) -> float:
        """What the room lacks for the whole cache (0 when it holds it)."""
        return max(self.bytes_per_gpu - self.room_bytes, 0.0)


def padded_context(rule: ContextCache, tokens: int, flash_attention: bool) -> int:
    """The context the engine allocates for: ``tokens`` rounded up to the release's padding."""
    pad = rule.padding(flash_attention)
    return math.ceil(tokens / pad) * pad


def context_sequences(rule: ContextCache | None, max_num_seqs: int | None) -> int:
    """The sequences an engine allocates the context for: ``max_num_seqs`` where the rule allocates it per
    running sequence and the deployment states it (llama-server's --parallel slots), else one."""
    return (max_num_seqs or 1) if rule is not None and rule.per_sequence else 1


def unified_slots(rule: ContextCache | None, slots: int, draft_model: bool) -> int | None:
    """The slots a release opens over one unified cache where it is started with ``slots`` (llama-server b6925-b7432
    turns one slot without -kvu into 4: ``ContextCache.one_slot_unified``); None: the ``slots`` it is started with,
    a stream each."""
    auto = rule.one_slot_unified if rule is not None and rule.per_sequence else None
    if auto is None or slots != 1 or (draft_model and auto.draft_keeps_one_slot):
        return None
    return auto.slots


def context_settings(rule: ContextCache, flash_attention: bool | None, tokens: int) -> dict:
    """The engine settings a context-sized cache adds: flash attention (stated, else the release's
    default) and the padded context the compute buffer is sized for."""
    fa = rule.flash_attention_default if flash_attention is None else flash_attention
    return {"flash_attention": fa, "context_tokens": padded_context(rule, tokens, fa)}


def slot_cells(rule: ContextCache, tokens: int, slots: int, flash_attention: bool) -> int:
    """The cells each of ``slots`` slots holds of a context of ``tokens``: its share of the padded context,
    rounded up to the rule's slot padding where it has one (llama.cpp's n_ctx_seq); where the slots share the
    requested context, each its share rounded up (llama.cpp's n_ctx_per_stream before b6925)."""
    share = (math.ceil(tokens / slots) if rule.slot_share == "context"
             else padded_context(rule, tokens, flash_attention) // slots)
    pad = rule.slot_padding(flash_attention)
    return math.ceil(share / pad) * pad if pad else share


def context_cells(rule: ContextCache, tokens: int, slots: int, flash_attention: bool) -> int:
    """The context's cells (llama.cpp's n_ctx): the slots × each slot's cells where the slots share the padded
    context with a slot padding (llama_context's n_ctx = n_ctx_seq × n_seq_max from b6925), else the padded
    context."""
    if rule.slot_padding_tokens and rule.slot_share == "padded_context":
        return slot_cells(rule, tokens, slots, flash_attention) * slots
    return padded_context(rule, tokens, flash_attention)


def attention_cells(rule: ContextCache, tokens: int, slots: int, flash_attention: bool, hybrid: bool) -> int:
    """The attention cells allocated for a context of ``tokens`` over ``slots`` slots: where each slot's share is
    padded, the slots × that (each slot a stream of its n_ctx_seq), else the padded context; a hybrid model's as the
    release sizes its attention cache (``ContextCache.hybrid_attention_cells``)."""
    how = rule.hybrid_attention_cells if hybrid else "slot_shares"
    if how == "context":
        return context_cells(rule, tokens, slots, flash_attention)
    if how == "context_per_slot":
        return context_cells(rule, tokens, slots, flash_attention) * slots
    if rule.slot_padding_tokens:
        return slot_cells(rule, tokens, slots, flash_attention) * slots
    return padded_context(rule, tokens, flash_attention)


def context_kv(rule: ContextCache, layout: KvLayout, tokens: int, flash_attention: bool,
               room_bytes: float = math.inf, slots: int = 1, unified: bool = False, *,
               ubatch_tokens: int = 512, batch_tokens: int = 2048) -> ContextKv:
    """The KV cache allocated for a context of ``tokens`` over ``slots`` slots on each GPU (llama.cpp's slots
    share one cache of n_ctx cells: where each slot's share is padded, the slots × that), its sliding-window layers
    as the release sizes them (``window_cells``), a hybrid model's recurrent state once per slot (llama.cpp's
    recurrent memory of max(1, n_seq_max) cells), and whether the ``room_bytes`` the rest of the memory leaves holds
    it. ``unified``: the slots share one cache of the padded context, each up to all of it (llama.cpp's n_ctx_seq =
    n_ctx with -kvu). ``ubatch_tokens`` / ``batch_tokens``: llama.cpp's n_ubatch and n_batch."""
    hybrid = layout.state_bytes_per_seq_per_gpu > 0
    if unified:
        per_slot = cells = padded_context(rule, tokens, flash_attention)
    else:
        per_slot = slot_cells(rule, tokens, slots, flash_attention)
        cells = attention_cells(rule, tokens, slots, flash_attention, hybrid)
    window = window_cells(rule, layout, cells, slots, flash_attention, unified, hybrid,
                          ubatch_tokens if rule.window_cache and rule.window_cache.batch == "ubatch" else batch_tokens)
    if window is None:  # each sequence holds up to the window
        per_gpu = layout.sequence_bytes_per_gpu(cells) + (slots - 1) * layout.state_bytes_per_seq_per_gpu
    else:
        per_gpu = layout.cache_bytes_per_gpu(cells, window[0] * window[1], slots)
    how = "allocated at start-up" if rule.allocated == "at_start" else f"grown in {rule.padding_tokens}-token steps"
    fits = per_gpu <= room_bytes
    room = "" if math.isinf(room_bytes) else \
        f"; {room_bytes / MiB:,.2f} MiB left for it{'' if fits else ': it does not fit'}"
    windows = "" if window is None or window[1] == cells else \
        f"; the window layers {window[0]:,} × {window[1]:,} cells"
    return ContextKv(cells, per_slot, per_gpu, fits, f"KV cache for the context, {how}: {tokens:,} tokens → {cells:,} "
                                                     f"cells ({_layout_note(rule, slots, per_slot, flash_attention, unified, hybrid)}{windows}), "
                                                     f"{per_gpu / MiB:,.2f} MiB per GPU{room}", room_bytes)


def window_cells(rule: ContextCache, layout: KvLayout, cells: int, slots: int, flash_attention: bool, unified: bool,
                 hybrid: bool, batch_tokens: int) -> tuple[int, int] | None:
    """(streams, cells in each) of the sliding-window layers of a cache of ``cells`` cells over ``slots`` slots, as the
    release sizes them (``ContextCache.window_cache``): a stream per slot where each slot has its own, else one stream
    all the slots share. None: the release caps each sequence at the window (or the model has no window layers)."""
    window_tokens = layout.window_tokens or next((s.window_tokens for s in layout.stages if s.window_tokens), None)
    if rule.window_cache is None or window_tokens is None:
        return None
    one_stream = unified or not rule.slot_padding_tokens or (hybrid and rule.hybrid_attention_cells == "context")
    streams = 1 if one_stream else slots
    per_stream = rule.window_cache.cells_per_stream(cells // streams, window_tokens, slots // streams, batch_tokens,
                                                    rule.padding(flash_attention))
    return streams, per_stream


def _layout_note(rule: ContextCache, slots: int, per_slot: int, flash_attention: bool, unified: bool, hybrid: bool) -> str:
    """How the cells are laid out over the slots, and a hybrid model's attention streams and recurrent states."""
    padding = (f"{slots} slots of {per_slot:,}, each a multiple of {rule.slot_padding(flash_attention)}"
               if rule.slot_padding_tokens and slots > 1 and not unified else f"a multiple of {rule.padding(flash_attention)}"
               + (f", one unified cache {slots} slots share" if unified else ""))
    if not hybrid or slots == 1:
        return padding
    streams = {"context": "; the hybrid model's attention in one stream of the context",
               "context_per_slot": f"; the hybrid model's attention in {slots} streams of the whole context"}
    return f"{padding}{'' if unified else streams.get(rule.hybrid_attention_cells, '')}; {slots} recurrent states"


def context_slots(catalog: Catalog, d: Deployment, engine: str) -> int | None:
    """The sequences an engine that allocates its context per sequence is started for (llama-server's
    --parallel slots, each ``max_model_len`` of the cache's cells): ``max_num_seqs``, else one (the slots the release
    opens over a unified cache for one: ``unified_slots``). That is all it runs at once, whatever memory is left
    over. None: the engine's cache is not sized so."""
    slots = context_sized_slots(catalog, d, engine)
    rule = memory_rule(catalog, engine, d.engine_version).context_cache
    return None if slots is None else unified_slots(rule, slots, bool(d.draft_checkpoint)) or slots


def context_sized_slots(catalog: Catalog, d: Deployment, engine: str) -> int | None:
    """The ``max_model_len`` sequences the context of an engine that allocates it per sequence is sized for (the
    --ctx-size over ``max_num_seqs``, else one), all held at once; fewer than ``context_slots`` where the slots share
    one unified cache. None: the engine's cache is not sized so."""
    rule = memory_rule(catalog, engine, d.engine_version).context_cache
    return context_sequences(rule, d.max_num_seqs) if rule is not None and rule.per_sequence else None


def compute_buffer_bytes(graph: ComputeGraph, catalog: Catalog, arch: Architecture, *, context_tokens: int,
                         ubatch_tokens: int, flash_attention: bool, tp: int = 1) -> tuple[float, str]:
    """llama.cpp's compute buffer on one GPU: the larger of the attention branch (K·Q scores and mask
    over the whole context for one ubatch, plus its activations) and the output branch (the
    ubatch's logits)."""
    heads = arch.num_attention_heads / tp
    per_cell = graph.mask_bytes_flash_attention if flash_attention else graph.mask_bytes + heads * graph.score_bytes
    activations = catalog.constant(graph.activation_constant) * ubatch_tokens * arch.hidden_size / tp
    attention = context_tokens * ubatch_tokens * per_cell + activations
    rows = min(graph.output_rows or ubatch_tokens, ubatch_tokens)
    output = rows * (arch.vocab_size + arch.hidden_size) * graph.logits_bytes
    kind = "flash attention: no score matrix" if flash_attention else f"{heads:g} heads of f32 scores"
    return max(attention, output), (
        f"llama.cpp compute buffer = max(attention branch {attention / MiB:,.2f} MiB ({context_tokens:,} cells × "
        f"n_ubatch {ubatch_tokens} × mask{'' if flash_attention else ' + scores'}, {kind}; + activations), "
        f"output branch {output / MiB:,.2f} MiB ({rows} rows × (vocab {arch.vocab_size:,} + hidden {arch.hidden_size:,})))"
    )
