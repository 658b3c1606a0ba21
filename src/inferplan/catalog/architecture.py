"""A model's architecture, normalised from its Hugging Face config.json.

Only what memory and speed depend on is kept. Layer kinds say how each layer stores
per-sequence state:

- ``full``: full attention, K and V for every token (``kv_heads × head_dim`` each).
- ``sliding``: attention over the last ``sliding_window`` tokens only.
- ``mla``: multi-head latent attention: one compressed latent (``kv_lora_rank``) plus the
  decoupled rope key (``qk_rope_head_dim``) per token.
- ``linear``: linear attention (Gated DeltaNet): a fixed-size state per sequence.
- ``mamba``: a Mamba-2 mixer: a fixed-size SSM + convolution state per sequence.
- ``mlp``: no token mixer (Nemotron-H MLP-only blocks).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum


class LayerKind(str, Enum):
    FULL = "full"
    SLIDING = "sliding"
    MLA = "mla"
    LINEAR = "linear"
    MAMBA = "mamba"
    MLP = "mlp"


ATTENTION_KINDS = (LayerKind.FULL, LayerKind.SLIDING)


@dataclass(frozen=True)
class MlaDims:
    kv_lora_rank: int
    qk_rope_head_dim: int
    qk_nope_head_dim: int
    v_head_dim: int
    q_lora_rank: int | None


@dataclass(frozen=True)
class DsaDims:
    """DeepSeek Sparse Attention: a lightning indexer (its own small key cache per layer) picks the
    ``index_topk`` cached tokens each query attends to."""

    index_n_heads: int
    index_head_dim: int
    index_topk: int


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
class LinearAttnDims:
    """Gated DeltaNet (Qwen3-Next) mixer sizes."""

    num_key_heads: int
    num_value_heads: int
    key_head_dim: int
    value_head_dim: int
    conv_kernel: int


@dataclass(frozen=True)
class MambaDims:
    """Mamba-2 mixer sizes."""

    num_heads: int
    head_dim: int
    state_size: int
    n_groups: int
    conv_kernel: int
    ssm_state_bytes: int = 2  # per element of the SSM state (config mamba_ssm_cache_dtype float32: 4)

    @property
    def inner_size(self) -> int:
        return self.num_heads * self.head_dim


@dataclass(frozen=True)
class QuantConfig:
    """What the checkpoint's ``quantization_config`` says, mapped to a catalogue quantization id."""

    method: str  # as written upstream (fp8, compressed-tensors, awq, mxfp4, modelopt ...)
    quantization: str  # catalogue quantization id
    unquantized_modules: tuple[str, ...] = ()
    kv_cache_dtype: str | None = None  # KV quantization the checkpoint asks for ("auto" resolves to it)


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
    moe: MoeDims | None = None
    linear: LinearAttnDims | None = None
    mamba: MambaDims | None = None
    quant: QuantConfig | None = None
    attention_bias: bool = False
    qk_norm: bool = False
    mlp_projections: int = 3  # gated MLPs (SwiGLU/GeGLU): gate, up, down; plain (ReLU²): up, down
    mtp_layers: int = 0  # DeepSeek multi-token-prediction layers shipped in the checkpoint
    has_vision_tower: bool = False
    notes: tuple[str, ...] = field(default=())

    @property
    def num_layers(self) -> int:
        return len(self.layer_kinds)

    def count(self, kind: LayerKind) -> int:
        return sum(1 for k in self.layer_kinds if k == kind)
