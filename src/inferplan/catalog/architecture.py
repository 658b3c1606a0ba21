"""A model's architecture, normalised from its Hugging Face config.json.

Only what memory and speed depend on is kept. Layer kinds say how each layer stores
per-sequence state:

- ``full``: full attention, K and V for every token (``kv_heads × head_dim`` each).
- ``sliding``: attention over the last ``sliding_window`` tokens only.
- ``mla``: multi-head latent attention: one compressed latent (``kv_lora_rank``) plus the
  decoupled rope key (``qk_rope_head_dim``) per token.
- ``linear``: linear attention (Gated DeltaNet, Kimi Delta Attention): a fixed-size state per sequence.
- ``mamba``: a Mamba-2 mixer: a fixed-size SSM + convolution state per sequence.
- ``mlp``: no token mixer (Nemotron-H MLP-only blocks).
- ``csa`` / ``hca``: DeepSeek-V4's compressed attention: a sliding window plus entries pooled every
  few tokens (CSA: an indexer picks the top-k of them; HCA: every one, pooled more coarsely).
  DeepSeek-V4's window-only layers are ``sliding``.
- ``sparse``: full attention (K and V for every token) of which a query reads only the blocks an
  indexer picks, the indexer keeping a key of its own per token (MiniMax-M3's sparse attention).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from inferplan.catalog.hf_keep import KeptGroups


class LayerKind(str, Enum):
    FULL = "full"
    SLIDING = "sliding"
    MLA = "mla"
    LINEAR = "linear"
    MAMBA = "mamba"
    MLP = "mlp"
    CSA = "csa"
    HCA = "hca"
    SPARSE = "sparse"


@dataclass(frozen=True)
class MlaDims:
    kv_lora_rank: int
    qk_rope_head_dim: int
    qk_nope_head_dim: int
    v_head_dim: int
    q_lora_rank: int | None


@dataclass(frozen=True)
class DsaDims:
    """Indexer-driven sparse attention: an indexer (its own small key cache per layer) picks the
    ``index_topk`` cached tokens each query attends to — DeepSeek Sparse Attention on MLA layers,
    MiniMax-M3's on ``sparse`` (GQA) layers, which picks whole blocks of tokens."""

    index_n_heads: int
    index_head_dim: int
    index_topk: int  # tokens
    index_keys_in_cache_dtype: bool = False  # MiniMax-M3: keys in the KV cache's dtype; DSA: FP8 with scales
    # share of the sparse layers that run an indexer of their own; the others reuse the top-k an
    # earlier layer picked and hold neither indexer weights nor indexer keys (GLM-5.2 indexer_types "shared")
    own_indexer_share: float = 1.0


@dataclass(frozen=True)
class CompressedAttnDims:
    """DeepSeek-V4 attention sizes (``memory.compressed`` says what they cost)."""

    csa_ratio: int  # tokens pooled into one entry on CSA layers
    hca_ratio: int  # on HCA layers
    index_n_heads: int
    index_head_dim: int
    index_topk: int  # pooled entries (not tokens) a CSA query attends
    rope_head_dim: int
    q_lora_rank: int
    o_groups: int
    o_lora_rank: int


@dataclass(frozen=True)
class MoeDims:
    num_experts: int
    experts_per_token: int
    expert_intermediate_size: int
    shared_intermediate_size: int  # total width of always-on shared experts (0 if none)
    moe_layers: tuple[bool, ...]  # True where the layer's MLP is a mixture of experts
    latent_size: int | None = None  # LatentMoE: routed experts work at this width, behind a shared
    # hidden -> latent projection and a latent -> hidden projection per MoE layer (Nemotron 3)


@dataclass(frozen=True)
class GlobalAttnDims:
    """Full-attention layers shaped apart from the sliding ones (Gemma 4's ``global_head_dim`` and,
    with ``attention_k_eq_v``, ``num_global_key_value_heads``). ``k_eq_v``: one projection gives the
    keys and the values, so those layers hold no value-projection weights; the cache still holds a
    K and a V per token (K normed and rotated, V normed only), as transformers and vLLM keep them."""

    head_dim: int
    num_kv_heads: int
    k_eq_v: bool


@dataclass(frozen=True)
class LinearAttnDims:
    """Gated DeltaNet (Qwen3-Next) or Kimi Delta Attention (Kimi-K3) mixer sizes."""

    num_key_heads: int
    num_value_heads: int
    key_head_dim: int
    value_head_dim: int
    conv_kernel: int
    recurrent_state_bytes: int = 2  # per element of the heads x key x value state (vLLM keeps KDA's in FP32: 4)
    # Kimi Linear's KDA: the decay (f_a/f_b) and the output gate (g_a/g_b) are projections through this rank;
    # None: Gated DeltaNet's weights (a full-rank output gate z, one decay per head), as Kimi-K3's full-rank gate
    gate_rank: int | None = None
    config_state_bytes: int | None = None  # per element as the config's mamba_ssm_dtype names it (None: it names none)
    conv_state_bytes: int = 2  # per element of the conv state (16 bits; an engine may keep it wider)


@dataclass(frozen=True)
class MambaDims:
    """Mamba-2 mixer sizes."""

    num_heads: int
    head_dim: int
    state_size: int
    n_groups: int
    conv_kernel: int
    ssm_state_bytes: int = 2  # per element of the SSM state (config mamba_ssm_cache_dtype float32: 4)
    config_state_bytes: int | None = None  # per element as the config's mamba_ssm_dtype names it (None: it names none)
    conv_state_bytes: int = 2  # per element of the conv state (16 bits; an engine may keep it wider)

    @property
    def inner_size(self) -> int:
        return self.num_heads * self.head_dim


@dataclass(frozen=True)
class QuantConfig:
    """What the checkpoint's ``quantization_config`` says, mapped to a catalogue quantization id."""

    method: str  # as written upstream (fp8, compressed-tensors, awq, mxfp4, modelopt ...)
    quantization: str  # catalogue quantization id
    unquantized_modules: tuple[str, ...] = ()
    kept_unquantized: KeptGroups = KeptGroups()  # what ``unquantized_modules`` keeps, by counted group
    kv_cache_dtype: str | None = None  # KV quantization the checkpoint asks for ("auto" resolves to it)
    # (group, quantization id, share of the group's layers) a config naming a format per module lists
    # (ModelOpt MIXED_PRECISION); what it does not list is unquantized. Empty: one format throughout
    layer_formats: tuple[tuple[str, str, float], ...] = ()


@dataclass(frozen=True)
class Architecture:
    hf_architecture: str
    model_type: str
    hidden_size: int
    num_attention_heads: int
    num_kv_heads: int
    head_dim: int
    intermediate_size: int  # dense MLP width (0 where every MLP is MoE)
    vocab_size: int
    tie_word_embeddings: bool
    layer_kinds: tuple[LayerKind, ...]
    max_position_embeddings: int
    torch_dtype: str = "bfloat16"
    rope_context_tokens: int = 0  # longer context a YaRN rope_scaling in the config opens (original × factor); 0: none
    sliding_window: int | None = None
    mla: MlaDims | None = None
    dsa: DsaDims | None = None  # sparse attention on the MLA layers (DeepSeek-V3.2, GLM-5)
    compressed: CompressedAttnDims | None = None  # DeepSeek-V4's CSA / HCA layers
    moe: MoeDims | None = None
    global_attention: GlobalAttnDims | None = None  # full-attention layers' own heads (Gemma 4)
    linear: LinearAttnDims | None = None
    mamba: MambaDims | None = None
    quant: QuantConfig | None = None
    attention_bias: bool = False
    qk_norm: bool = False
    mlp_projections: int = 3  # gated MLPs (SwiGLU/GeGLU): gate, up, down; plain (ReLU²): up, down
    mtp_layers: int = 0  # DeepSeek multi-token-prediction layers shipped in the checkpoint
    # the config.json key stating mtp_layers (num_nextn_predict_layers, mtp_num_hidden_layers); None: the
    # config states none (the count the engines build for its model type, or 0), and an engine reading the key finds none
    mtp_layers_key: str | None = None
    # the MTP layers' attention where the config states it (DeepSeek-V4: compress_ratios past the
    # layers); empty: as the last decoder layer's
    mtp_layer_kinds: tuple[LayerKind, ...] = ()
    attention_output_gate: bool = False  # a gate on the attention output (Qwen3.5: q_proj twice as wide; Kimi-K3's MLA)
    # parallel residual streams of hyper-connections (DeepSeek-V4's mHC, config hc_mult); 1: a plain residual
    residual_streams: int = 1
    has_vision_tower: bool = False
    notes: tuple[str, ...] = field(default=())

    @property
    def num_layers(self) -> int:
        return len(self.layer_kinds)

    def layer_head_dim(self, kind: LayerKind) -> int:
        """Head width of a layer of this kind (Gemma 4's full-attention layers have their own)."""
        return self.global_attention.head_dim if self.global_attention and kind is LayerKind.FULL else self.head_dim

    def layer_kv_heads(self, kind: LayerKind) -> int:
        """Key/value heads of a layer of this kind."""
        return self.global_attention.num_kv_heads if self.global_attention and kind is LayerKind.FULL else self.num_kv_heads

    def layer_value_projection(self, kind: LayerKind) -> bool:
        """Whether a layer of this kind has value-projection weights of its own (not Gemma 4's K = V layers)."""
        return not (self.global_attention and self.global_attention.k_eq_v and kind is LayerKind.FULL)

    def count(self, kind: LayerKind) -> int:
        return sum(1 for k in self.layer_kinds if k == kind)
