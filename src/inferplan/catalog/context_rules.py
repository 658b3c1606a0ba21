"""How an engine that sizes its KV cache by the context sizes it, and llama.cpp's compute buffer.

llama.cpp allocates the KV cache for the whole ``n_ctx`` at start-up (rounded up to a padding),
next to the weights and a compute buffer; mlx-lm grows its cache in fixed steps as tokens
arrive, so a context of N tokens holds N rounded up to the step. Neither engine has a memory
fraction: the cache is what the context needs, and the question is whether weights + cache +
buffers fit the device. A ``ContextCache`` states one release line's rounding; a ``ComputeGraph``
states the parts of llama.cpp's compute buffer. Both are fields of a ``MemoryRule``
(``engine_memory_rules.yaml``) with the engine source they were read from.
"""

from __future__ import annotations

import math
from typing import Literal

from pydantic import Field

from inferplan.catalog.schema import Frozen


class OneSlotUnified(Frozen):
    """llama-server's slots where it is started with one (--parallel 1, stated or its default) and no unified cache
    (-kvu unset): ``slots`` slots over one unified cache of the context's cells, each slot up to the whole context."""

    slots: int = Field(ge=2)
    draft_keeps_one_slot: bool = False  # with a draft model (-md) the one slot stays, its own stream
    sources: tuple[str, ...] = Field(min_length=1)


class WindowCache(Frozen):
    """llama.cpp's cache of the sliding-window layers (llama_kv_cache_iswa with --swa-full unset, the server's
    default): in each stream of the cache min(the other layers' cells in it, n_swa × the slots in it + the batch),
    rounded up to ``padding_tokens``; a stream per slot, or one the slots share (a unified cache, and every cache
    before the per-slot streams). ``full_size``: no window cache, the window layers hold as many cells as the
    others (llama.cpp before the iSWA cache)."""

    full_size: bool = False
    batch: Literal["ubatch", "batch"] = "ubatch"  # the batch added to the windows: n_ubatch, or n_batch (b5429-b5553)
    padding_tokens: int | None = Field(None, ge=1)  # None: the context's padding (256 with flash attention, 32 without)
    # True: the smaller of the two rounded up (GGML_PAD(min(...), 256) from b6975); False: the windows rounded up
    # before the smaller is taken (min(size_base, GGML_PAD(...)))
    padded_last: bool = False
    sources: tuple[str, ...] = Field(min_length=1)

    def cells_per_stream(self, base_cells: int, window_tokens: int, slots_in_stream: int, batch_tokens: int,
                         context_padding: int) -> int:
        """The window layers' cells in one stream whose other layers hold ``base_cells``."""
        if self.full_size:
            return base_cells
        pad = self.padding_tokens or context_padding
        wanted = window_tokens * slots_in_stream + batch_tokens
        if self.padded_last:
            return math.ceil(min(base_cells, wanted) / pad) * pad
        return min(base_cells, math.ceil(wanted / pad) * pad)


class ContextCache(Frozen):
    """The KV cache an engine sizes by the context instead of by the memory left."""

    # at_start: the whole (padded) context is allocated when the engine starts (llama.cpp n_ctx);
    # in_steps: the cache grows by `padding_tokens` as tokens arrive (mlx-lm KVCache.step)
    allocated: Literal["at_start", "in_steps"]
    padding_tokens: int = Field(ge=1)  # the context is rounded up to a multiple of this
    # the rounding without flash attention, where it differs (llama.cpp before the 256-token pad)
    padding_tokens_without_flash_attention: int | None = Field(None, ge=1)
    # flash attention when the deployment does not say (llama.cpp: -fa off before the auto default)
    flash_attention_default: bool = True
    # the context is allocated for every running sequence: n_ctx = max_model_len × max_num_seqs when
    # max_num_seqs is stated (llama-server splits n_ctx over its --parallel slots)
    per_sequence: bool = False
    # each slot's share of the padded context rounded up to a multiple of this, the context then the slots ×
    # that (llama.cpp's n_ctx_seq without a unified cache); None: the share as the context divides
    slot_padding_tokens: int | None = Field(None, ge=1)
    # the slot rounding without flash attention, where it differs (llama.cpp b5913-b6867: 32)
    slot_padding_tokens_without_flash_attention: int | None = Field(None, ge=1)
    # what the slots share: padded_context: the padded context, each slot its share rounded down (llama.cpp
    # n_ctx_seq from b6925); context: the requested context, each slot its share rounded up (llama.cpp
    # n_ctx_per_stream before b6925, the context itself not padded first)
    slot_share: Literal["padded_context", "context"] = "padded_context"
    # the attention cells of a hybrid model (recurrent state + attention layers) over its slots: slot_shares: each
    # slot's share, as any model's; context: one stream of the context for every slot (llama.cpp b6071-b6078, the
    # hybrid memory's cache kept unified); context_per_slot: a stream of the whole context for each slot (llama.cpp
    # b6079-b8024, llama_memory_hybrid sized by n_ctx instead of n_ctx_seq)
    hybrid_attention_cells: Literal["slot_shares", "context", "context_per_slot"] = "slot_shares"
    # where set, the slots llama-server opens instead of one (llama.cpp b6925-b7432, PR #16736 to PR #17997)
    one_slot_unified: OneSlotUnified | None = None
    # the sliding-window layers' cache (llama.cpp's iSWA cache); None: each sequence holds up to the window
    # (mlx-lm's rotating cache)
    window_cache: WindowCache | None = None
    # bytes per element of a recurrent model's state, its conv and its SSM / delta-rule tensors (llama.cpp's
    # recurrent memory has kept both F32 since its first recurrent model, b2366); None: the model's own
    state_bytes_per_element: int | None = Field(None, ge=1)
    sources: tuple[str, ...] = Field(min_length=1)

    def padding(self, flash_attention: bool) -> int:
        if not flash_attention and self.padding_tokens_without_flash_attention is not None:
            return self.padding_tokens_without_flash_attention
        return self.padding_tokens

    def slot_padding(self, flash_attention: bool) -> int | None:
        if not flash_attention and self.slot_padding_tokens_without_flash_attention is not None:
            return self.slot_padding_tokens_without_flash_attention
        return self.slot_padding_tokens


class ComputeGraph(Frozen):
    """llama.cpp's compute buffer for one ubatch: the larger of the attention branch and the output
    branch of the graph it reserves at start-up (the allocator reuses memory between them).

    attention branch: n_ctx × n_ubatch × (n_head × score bytes + mask bytes) + activation bytes ×
    n_ubatch × hidden; with flash attention no score matrix is built. output branch: n_ubatch ×
    (vocab + hidden) × logits bytes (the f32 logits of the whole ubatch and the last hidden state),
    or of ``output_rows`` rows where the build reserves logits only for the outputs a server asks
    for (``None``: the whole ubatch).
    """

    score_bytes: float = Field(gt=0)  # one K·Q score (f32), per n_ctx × n_ubatch × n_head, without flash attention
    mask_bytes: float = Field(gt=0)  # the KQ mask per n_ctx × n_ubatch, without flash attention
    mask_bytes_flash_attention: float = Field(gt=0)  # the mask with flash attention (f32 + its f16 copy)
    activation_constant: str  # calibration.yaml id: bytes per n_ubatch × hidden in the attention branch
    logits_bytes: float = Field(gt=0)  # per n_ubatch × (vocab + hidden)
    output_rows: int | None = Field(None, ge=1)  # logits rows reserved (None: every ubatch token)
    sources: tuple[str, ...] = Field(min_length=1)
