"""Parameter counts from an architecture: total, active per token, and by part.

The parts matter because quantized checkpoints keep some of them (embeddings, lm_head, norms,
routers) at 16 bits, and because tensor/expert parallelism shards them differently.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from inferplan.catalog.architecture import Architecture, LayerKind
from inferplan.memory import compressed


@dataclass(frozen=True)
class ParamBreakdown:
    embedding: int  # token embeddings
    lm_head: int  # 0 when tied to the embeddings
    attention: int  # token-mixer weights of every layer (attention, MLA, linear, Mamba)
    dense_mlp: int  # MLPs of non-MoE layers
    experts: int  # routed experts, all of them
    experts_active: int  # routed experts a token passes through
    shared_experts: int  # always-on shared experts
    router: int
    norms: int
    mtp: int  # multi-token-prediction module shipped in the checkpoint (not run by default)
    indexer: int = 0  # DSA indexers (inside ``attention``): replicated on every tensor-parallel rank

    @property
    def total(self) -> int:
        return (
            self.embedding + self.lm_head + self.attention + self.dense_mlp + self.experts
            + self.shared_experts + self.router + self.norms
        )

    @property
    def active(self) -> int:
        """Parameters one token's forward pass reads (embedding lookup excluded, lm_head included)."""
        return self.total - self.embedding - self.experts + self.experts_active

    @property
    def linear(self) -> int:
        """Weights that GPU quantization formats quantize (attention, MLP, experts)."""
        return self.attention + self.dense_mlp + self.experts + self.shared_experts


def _attention_params(arch: Architecture, kind: LayerKind) -> int:
    h = arch.hidden_size
    if arch.compressed is not None and kind in (LayerKind.SLIDING, LayerKind.CSA, LayerKind.HCA):
        return compressed.attention_params(arch, kind)
    if kind in (LayerKind.FULL, LayerKind.SLIDING, LayerKind.SPARSE):
        d, kv_heads = arch.layer_head_dim(kind), arch.layer_kv_heads(kind)
        kv_projections = 2 if arch.layer_value_projection(kind) else 1  # Gemma 4's K = V layers: keys only
        q = h * arch.num_attention_heads * d * (2 if arch.attention_output_gate else 1)
        kv = kv_projections * h * kv_heads * d
        o = arch.num_attention_heads * d * h
        bias = (arch.num_attention_heads + kv_projections * kv_heads) * d if arch.attention_bias else 0
        indexer = 0
        if kind is LayerKind.SPARSE and arch.dsa:  # query heads and one key head of the block indexer
            indexer = h * (arch.dsa.index_n_heads + 1) * arch.dsa.index_head_dim
        return q + kv + o + bias + indexer
    if kind is LayerKind.MLA:
        m = arch.mla
        assert m is not None
        qk_head = m.qk_nope_head_dim + m.qk_rope_head_dim
        if m.q_lora_rank:
            q = h * m.q_lora_rank + m.q_lora_rank + m.q_lora_rank * arch.num_attention_heads * qk_head
        else:
            q = h * arch.num_attention_heads * qk_head
        kv_a = h * (m.kv_lora_rank + m.qk_rope_head_dim) + m.kv_lora_rank
        kv_b = m.kv_lora_rank * arch.num_attention_heads * (m.qk_nope_head_dim + m.v_head_dim)
        o = arch.num_attention_heads * m.v_head_dim * h
        gate = h * arch.num_attention_heads * m.v_head_dim if arch.attention_output_gate else 0  # Kimi-K3
        return q + kv_a + kv_b + o + gate  # the layer's indexer, if it has one of its own, is counted in count_params
    if kind is LayerKind.LINEAR:
        d = arch.linear
        assert d is not None
        k_width = d.num_key_heads * d.key_head_dim
        v_width = d.num_value_heads * d.value_head_dim
        conv = (2 * k_width + v_width) * d.conv_kernel
        if d.gate_rank:  # KDA: q, k, v, b; decay f and gate g through the rank; A_log per head, dt_bias per channel
            r = d.gate_rank
            in_proj = h * (2 * k_width + v_width + d.num_value_heads) + 2 * h * r + r * (k_width + v_width)
            return in_proj + conv + v_width * h + d.value_head_dim + d.num_value_heads + k_width
        in_proj = h * (2 * k_width + 2 * v_width + 2 * d.num_value_heads)  # q, k, v, z, b, a
        return in_proj + conv + v_width * h + d.value_head_dim + 2 * d.num_value_heads
    if kind is LayerKind.MAMBA:
        m = arch.mamba
        assert m is not None
        conv_dim = m.inner_size + 2 * m.n_groups * m.state_size
        in_proj = h * (m.inner_size + conv_dim + m.num_heads)
        return in_proj + conv_dim * m.conv_kernel + m.inner_size * h + m.inner_size + 3 * m.num_heads
    return 0


def _indexer_params(arch: Architecture) -> int:
    """DSA lightning indexer of one layer: query projection from the q latent, one key head, its
    norm, and per-head weights."""
    if arch.dsa is None or arch.mla is None:
        return 0
    d, n, h = arch.dsa.index_head_dim, arch.dsa.index_n_heads, arch.hidden_size
    q_in = arch.mla.q_lora_rank or h
    return q_in * n * d + h * d + 2 * d + h * n


def _own_indexers(arch: Architecture) -> int:
    """Sparse layers with an indexer of their own (GLM-5.2's "shared" layers reuse an earlier one's)."""
    sparse = sum(k is LayerKind.MLA for k in arch.layer_kinds)
    return round(sparse * arch.dsa.own_indexer_share) if arch.dsa else 0


def _has_mlp(arch: Architecture, kind: LayerKind) -> bool:
    """Nemotron-H blocks hold one mixer each (Mamba, attention or MLP); other models pair every
    token mixer with an MLP."""
    if arch.model_type.startswith("nemotron_h"):
        return kind is LayerKind.MLP
    return True


def _expert_params(arch: Architecture) -> int:
    """One routed expert: its projections at the latent width under LatentMoE, else the hidden width."""
    assert arch.moe is not None
    width = arch.moe.latent_size or arch.hidden_size
    return arch.mlp_projections * width * arch.moe.expert_intermediate_size


def _always_on_moe_params(arch: Architecture) -> int:
    """Per MoE layer, what every token passes through: the shared experts, and under LatentMoE the
    hidden -> latent and latent -> hidden projections."""
    assert arch.moe is not None
    h = arch.hidden_size
    latent = 2 * h * arch.moe.latent_size if arch.moe.latent_size else 0
    return arch.mlp_projections * h * arch.moe.shared_intermediate_size + latent


@functools.lru_cache(maxsize=256)  # pure in a frozen architecture
def count_params(arch: Architecture) -> ParamBreakdown:
    h = arch.hidden_size
    embedding = arch.vocab_size * h
    lm_head = 0 if arch.tie_word_embeddings else arch.vocab_size * h
    indexer = _own_indexers(arch) * _indexer_params(arch)
    attention = sum(_attention_params(arch, k) for k in arch.layer_kinds) + indexer
    gated = arch.mlp_projections
    dense = experts = active = shared = router = 0
    moe_layers = arch.moe.moe_layers if arch.moe else (False,) * arch.num_layers
    for kind, is_moe in zip(arch.layer_kinds, moe_layers):
        if is_moe and arch.moe:
            per_expert = _expert_params(arch)
            experts += arch.moe.num_experts * per_expert
            active += arch.moe.experts_per_token * per_expert
            shared += _always_on_moe_params(arch)
            router += h * arch.moe.num_experts
        elif _has_mlp(arch, kind):
            dense += gated * h * arch.intermediate_size
    norms = (2 * arch.num_layers + 1) * h
    if arch.qk_norm:
        norms += sum(2 * arch.layer_head_dim(k) for k in arch.layer_kinds)
    mtp = 0
    if arch.mtp_layers:
        # a DeepSeek MTP module is one more decoder layer plus a 2h -> h projection and norms
        # (Nemotron-H's MTP block is an attention layer and a MoE layer)
        last_moe = bool(arch.moe and arch.moe.moe_layers[-1])
        mixer = LayerKind.FULL if arch.model_type.startswith("nemotron_h") else arch.layer_kinds[-1]
        layer = _attention_params(arch, mixer) + _indexer_params(arch) + 2 * h * h + 4 * h
        if last_moe and arch.moe:
            layer += (arch.moe.num_experts * _expert_params(arch) + _always_on_moe_params(arch)
                      + h * arch.moe.num_experts)
        mtp = arch.mtp_layers * layer
    return ParamBreakdown(
        embedding=embedding,
        lm_head=lm_head,
        attention=attention,
        dense_mlp=dense,
        experts=experts,
        experts_active=active,
        shared_experts=shared,
        router=router,
        norms=norms,
        mtp=mtp,
        indexer=indexer,
    )
