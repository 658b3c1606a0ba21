"""Which config.json keys about experts, attention and MLP widths the importer knows.

A key that looks like it decides the mixture of experts (``*expert*``, ``moe*``, ``*router*``,
``*routed*``, ``*routing*``, ``*share*``, ``top_k*``), the attention layout (``*attn*``, ``*attention*``,
``*head*``, ``*kv*``, ``*key_value*``, ``*query*``, ``*group*``, ``*lora*``, ``*latent*``, ``*mla*``,
``*sliding*``, ``*window*``, ``*chunk*``, ``*local*``, ``*global*``, ``*sparse*``, ``*compress*``, ``swa*``,
``*layer_types*``, ``*block_type*``, ``*block_config*``: per-layer attention and MLP shapes, as
Nemotron-NAS states them) or an MLP width (``*intermediate*``, ``*ffn*``, ``*ff_dim*``, ``*mlp*``,
``*hidden_dim*``) or a recurrent / convolution mixer (``*mixer*``, ``*mamba*``, ``*ssm*``, ``*conv*``,
``*state_size*``, ``*time_step*``) must be one the importer reads or one listed here as not changing weights or the
KV cache. Any other such key is refused with its name: a router the importer cannot read would
otherwise be planned as a dense model, a key/value head count under another name
(``multi_query_group_num``, ``num_kv_heads``, ``n_head_kv``, ``num_query_groups``) as full multi-head
attention, and an attention layout it cannot read with the wrong KV cache.
"""

from __future__ import annotations

import re

from inferplan.errors import ConfigImportError

MOE_LOOKING = re.compile(r"expert|^moe|_moe|router|routed|routing|share|^top_?k|_top_?k|hash")
HEADS_LOOKING = re.compile(r"head|kv|key_value|query|group")
ATTENTION_LOOKING = re.compile(r"attn|attention|sliding|window|chunk|local|global|sparse|lora|latent|mla|compress|^swa"
                               r"|layer_types|block_type|block_config")
MLP_LOOKING = re.compile(r"intermediate|ffn|ff_dim|mlp|hidden_dim")
MIXER_LOOKING = re.compile(r"mixer|mamba|ssm|conv|state_size|d_state|time_step")

# keys the importer reads (hf_import, hf_layers, mistral_params)
READ = frozenset({
    "n_routed_experts", "num_local_experts", "num_experts", "num_experts_per_tok", "num_experts_per_token",
    "experts_per_token", "moe_topk", "moe_intermediate_size", "moe_latent_size", "routed_expert_hidden_size",
    "moe_shared_expert_intermediate_size", "n_shared_experts", "num_shared_experts", "shared_expert_intermediate_size",
    "moe_layer_freq", "expert_layer_period", "expert_layer_offset", "expert_dtype",
    "num_attention_heads", "num_key_value_heads", "n_kv_heads", "head_dim", "attention_head_dim", "attention_bias",
    "attn_output_gate", "sliding_window", "use_sliding_window", "sliding_window_pattern", "layer_types",
    "layers_block_type", "linear_attn_config", "sparse_attention_config", "full_attention_interval",
    "attn_layer_period", "attn_layer_offset", "attn_type_list", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim", "index_head_dim",
    "index_topk", "linear_key_head_dim", "linear_value_head_dim", "mamba_head_dim", "mamba_d_head",
    # Gemma 4: the full-attention layers' own shape, its experts beside the dense MLP, KV sharing (refused when on)
    "global_head_dim", "num_global_key_value_heads", "attention_k_eq_v", "top_k_experts", "enable_moe_block",
    "expert_intermediate_size", "num_kv_shared_layers", "use_double_wide_mlp",
    # Llama 4: chunked local attention and NoPE layers, experts every interleave_moe_layer_step layers
    "attention_chunk_size", "no_rope_layers", "no_rope_layer_interval", "interleave_moe_layer_step", "moe_layers",
    "intermediate_size_mlp",
    # Mamba and Gated DeltaNet state sizes (hf_import, hf_layers.gated_delta_dims)
    "conv_kernel", "mamba_d_conv", "linear_conv_kernel_dim", "ssm_state_size", "mamba_d_state", "state_size",
    "mamba_expand", "mamba_ssm_cache_dtype", "mamba_ssm_dtype",
    # MLA and DeepSeek sparse / compressed attention (hf_import, hf_layers.compressed_dims)
    "kv_lora_rank", "q_lora_rank", "o_lora_rank", "o_groups", "index_n_heads", "compress_ratios", "mla_use_output_gate",
    # linear attention and Mamba heads, groups and widths
    "linear_num_key_heads", "linear_num_value_heads", "mamba_num_heads", "mamba_n_heads", "n_groups", "mamba_n_groups",
    # MLP widths and which layers hold experts
    "intermediate_size", "ffn_hidden_size", "dense_intermediate_size", "shared_intermediate_size", "mlp_hidden_act",
    "mlp_only_layers", "decoder_sparse_step",
})

# keys that do not change the weights or the KV cache the importer counts, each with its reason
IGNORED = frozenset({
    # training-time router settings and routing arithmetic (no weights, no cache)
    "router_aux_loss_coef", "output_router_logits", "norm_topk_prob", "topk_group", "topk_method",
    "num_expert_group", "use_grouped_topk", "moe_renormalize", "moe_router_activation_func", "moe_router_dtype",
    "router_jitter_noise", "router_z_loss_coef", "moe_shared_expert_overlap", "latent_moe_use_norm",
    "n_group", "routed_scaling_factor", "moe_router_scaling_factor", "use_routing_bias", "use_moe_router_bias",
    # DeepSeek-V4's first layers pick their experts by a hash of the token: the same experts, no other weights
    "num_hash_layers",
    # bias vectors (a few thousand numbers per layer, under 0.01 % of the weights)
    "mlp_bias", "qkv_bias", "mamba_proj_bias", "use_conv_bias",
    # Mamba-2 mixers: their activation, kernel choice and the time-step initialisation range (one
    # time step per head whatever these say; transformers NemotronHConfig)
    "mamba_hidden_act", "use_mamba_kernels", "time_step_floor", "time_step_limit", "time_step_max", "time_step_min",
    "time_step_rank",
    # attention arithmetic: dropout, scaling, soft-capping, rope and cache-reuse settings of the same layers
    "attention_dropout", "attn_logit_softcapping", "query_pre_attn_scalar", "max_window_layers", "output_attentions",
    "add_cross_attention", "index_topk_freq", "index_topk_pattern", "index_skip_topk_offset",
    "rope_local_base_freq", "compress_rope_theta", "swa_rope_theta",  # rotary bases of the same layers
    "mla_use_nope",  # Kimi: MLA layers without rotary positions; the cache still holds kv_lora_rank + qk_rope_head_dim
    "chunk_size",  # Mamba-2's scan chunk (computation only)
    # GLM-5.2's MTP step reuses the last indexer's selection (no weights, no cache of its own)
    "index_share_for_mtp_iteration",
    # EXAONE 4.5's MTP modules share one set of weights (counted through its MTP key)
    "mtp_share_layers",
    # generic transformers fields (generation and head pruning; pruned_heads is refused when not empty)
    "num_beam_groups", "chunk_size_feed_forward", "pruned_heads",
    "attention_output_gate",  # MiniMax-M3 states it false; attn_output_gate is the key read
    "attn_temperature_tuning", "attn_scale",  # Llama 4's NoPE-layer query scaling
    # restatements of a key read: Gemma 2's window (sliding_window), GLM-5.2's dense/MoE list
    # (first_k_dense_replace) and head width (qk_nope_head_dim + qk_rope_head_dim)
    "sliding_window_size", "mlp_layer_types", "qk_head_dim",
    # the multi-token-prediction modules' own pattern (counted through mtp_num_hidden_layers)
    "mtp_hybrid_override_pattern", "mtp_layers_block_type",
    # generic transformers fields for encoder-decoder use (Kimi-K3 states them off: null, false)
    "cross_attention_hidden_size",
    # Kimi-K3's block size for attention residuals (no weights) and its sampling default
    "attn_res_block_size", "top_k",
    # Gemma 4: image tokens attend each other both ways (a mask, no weights, no cache)
    "use_bidirectional_attention",
})


# what each kind of unknown key would get wrong, in the order the patterns are tried
_KINDS = (
    (MOE_LOOKING, "a mixture-of-experts key the importer does not read; planning it as a dense model would be wrong",
     "the expert keys listed in docs/memory.md"),
    (HEADS_LOOKING, "a head-count or key/value grouping key the importer does not read; planning the model with "
     "num_key_value_heads (or full multi-head attention) instead would count the wrong KV cache",
     "num_key_value_heads and the other attention keys listed in docs/memory.md"),
    (ATTENTION_LOOKING, "an attention key the importer does not read; its KV cache cannot be counted",
     "the attention keys listed in docs/memory.md"),
    (MLP_LOOKING, "an MLP width key the importer does not read; the weights cannot be counted",
     "intermediate_size, moe_intermediate_size and the other keys listed in docs/memory.md"),
    (MIXER_LOOKING, "a Mamba or convolution mixer key the importer does not read; planning the layers as attention "
     "would count the wrong weights and cache", "the Mamba keys listed in docs/memory.md"),
)


def check_known_keys(cfg: dict) -> None:
    """Refuse a config whose text model states an expert, attention, head-count or MLP-width key the
    importer does not know."""
    for key in cfg:
        if key in READ or key in IGNORED:
            continue
        lowered = key.lower()
        for pattern, what, allowed in _KINDS:
            if pattern.search(lowered):
                raise ConfigImportError(f"config.json states {key!r}, {what}", field=key, allowed=allowed)
