"""Keys a config.json must state for the parameter count or the KV cache to be right: where a key
the architecture needs is missing, the import is refused naming it, rather than filled with a
default that would change the weights or the cache (a dense MLP of width 0, routed experts as
wide as the dense MLP, multi-head latent attention planned as plain multi-head attention)."""

from __future__ import annotations

from inferplan.errors import ConfigImportError

# Model types whose config class has no key for the routed experts' width: their experts are
# ``intermediate_size`` wide (every other mixture of experts must state ``moe_intermediate_size``).
# - mixtral: transformers modeling_mixtral.py, the expert MLP's ffn_dim = config.intermediate_size
#   https://github.com/huggingface/transformers/blob/main/src/transformers/models/mixtral/modeling_mixtral.py
# - gpt_oss: transformers modeling_gpt_oss.py, GptOssExperts' expert_dim = config.intermediate_size
#   https://github.com/huggingface/transformers/blob/main/src/transformers/models/gpt_oss/modeling_gpt_oss.py
# - minimax_m2 / minimax_m3: vLLM minimax_m2.py, the FusedMoE intermediate_size = config.intermediate_size
#   https://github.com/vllm-project/vllm/blob/main/vllm/model_executor/models/minimax_m2.py
# - llama4_text: transformers configuration_llama4.py, intermediate_size for the experts and
#   intermediate_size_mlp for the dense layers
#   https://github.com/huggingface/transformers/blob/main/src/transformers/models/llama4/configuration_llama4.py
# (all checked 2026-12-05)
EXPERTS_AT_INTERMEDIATE_SIZE = frozenset({"mixtral", "gpt_oss", "minimax_m2", "minimax_m3", "minimax_m3_vl",
                                          "llama4_text", "llama4"})

EXPERT_WIDTH_KEYS = ("moe_intermediate_size", "expert_intermediate_size")
# the dense MLP's width, most specific first: MiniMax-M3 and Llama 4 name it apart from the experts'
DENSE_WIDTH_KEYS = ("dense_intermediate_size", "intermediate_size_mlp", "intermediate_size", "ffn_hidden_size")
# the multi-head latent attention keys beside kv_lora_rank (transformers DeepseekV3Config)
MLA_KEYS = ("qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim", "q_lora_rank")
# keys that state which layers hold experts some other way than first_k_dense_replace
LAYER_LAYOUT_KEYS = ("hybrid_override_pattern", "layers_block_type", "num_hash_layers",
                     "compress_ratios", "mlp_only_layers", "decoder_sparse_step")
TOP_K_KEYS = ("num_experts_per_tok", "num_experts_per_token", "experts_per_token", "moe_topk", "top_k_experts")
EXPERT_COUNT_KEYS = ("n_routed_experts", "num_local_experts", "num_experts")


def _stated(cfg: dict, key: str) -> bool:
    return cfg.get(key) is not None


def expert_width(cfg: dict, model_type: str) -> int:
    """The routed experts' MLP width: ``moe_intermediate_size`` (or Gemma 4's
    ``expert_intermediate_size``), or ``intermediate_size`` for the model types that name it so."""
    for key in EXPERT_WIDTH_KEYS:
        if _stated(cfg, key):
            return int(cfg[key])
    if model_type in EXPERTS_AT_INTERMEDIATE_SIZE:
        if _stated(cfg, "intermediate_size"):
            return int(cfg["intermediate_size"])
        raise ConfigImportError(f"config.json routes tokens to experts but has no 'intermediate_size', the experts' "
                                f"width in {model_type}", field="intermediate_size",
                                allowed="intermediate_size stated (an integer of at least 1)")
    raise ConfigImportError("config.json routes tokens to experts but has no 'moe_intermediate_size', the experts' "
                            "width; intermediate_size is the dense MLP's width for this model type", field="moe_intermediate_size",
                            allowed="moe_intermediate_size stated (an integer of at least 1)")


# Model types whose config class derives a missing head_dim as hidden_size / num_attention_heads
# (transformers LlamaConfig, MistralConfig, MixtralConfig, Qwen2Config, Qwen2MoeConfig, Phi3Config,
# Olmo2/Olmo3Config, Exaone4Config; https://github.com/huggingface/transformers/tree/main/src/transformers/models,
# checked 2026-12-05). Elsewhere the class default is a fixed width (Qwen3Config: 128, where Qwen3-0.6B's
# 1024 / 16 would give 64; GptOssConfig: 64), so a config of another type must state head_dim.
HEAD_DIM_DERIVED = frozenset({"llama", "mistral", "mixtral", "qwen2", "qwen2_moe", "phi3", "olmo2", "olmo3",
                              "exaone4", "exaone4_5_text", "lfm2", "nemotron-nas", "nemotron_h"})
# Nemotron-H's config class defaults differ from the importer's generic ones (NemotronHConfig:
# mlp_hidden_act relu2, n_groups 8), and its layers are known only from the pattern
NEMOTRON_H_KEYS = ("mlp_hidden_act", "n_groups")


def check_required(cfg: dict, model_type: str) -> None:
    """Refuse a config that states part of a design without a key the counts read."""
    if not any(_stated(cfg, key) for key in ("num_key_value_heads", "n_kv_heads")):
        raise ConfigImportError("config.json has no 'num_key_value_heads'; the KV cache's size follows from it "
                                "(multi-head attention states it equal to num_attention_heads)", field="num_key_value_heads",
                                allowed="num_key_value_heads stated (a divisor of num_attention_heads)")
    if not model_type or model_type == "unknown":
        raise ConfigImportError("config.json has no 'model_type'; the importer reads each key as that model "
                                "type's config class defines it", field="model_type", allowed="the model type's name")
    _check_latent(cfg)
    if (model_type not in HEAD_DIM_DERIVED and not _stated(cfg, "kv_lora_rank") and "compress_ratios" not in cfg
            and not any(_stated(cfg, key) for key in ("head_dim", "attention_head_dim"))):
        raise ConfigImportError(f"config.json ({model_type}) has no 'head_dim'; its config class does not derive it "
                                "from hidden_size / num_attention_heads", field="head_dim",
                                allowed="head_dim stated (an integer of at least 1)")
    if model_type.startswith("nemotron_h"):
        if not any(key in cfg for key in ("hybrid_override_pattern", "layers_block_type")):
            raise ConfigImportError("config.json (nemotron_h) has no 'hybrid_override_pattern', which says which layers "
                                    "are Mamba, attention, MLP or experts", field="hybrid_override_pattern",
                                    allowed="hybrid_override_pattern (M, *, -, E) or layers_block_type stated")
        mamba = "M" in str(cfg.get("hybrid_override_pattern", "")) or "mamba" in (cfg.get("layers_block_type") or [])
        for key in NEMOTRON_H_KEYS[:1] + (NEMOTRON_H_KEYS[1:] if mamba else ()):
            if not _stated(cfg, key):
                raise ConfigImportError(f"config.json (nemotron_h) has no {key!r}; its config class's default "
                                        "differs from the importer's generic one", field=key, allowed=f"{key} stated")
    has_experts = any(cfg.get(key) for key in EXPERT_COUNT_KEYS)
    top_k = [key for key in TOP_K_KEYS if cfg.get(key)]
    if top_k and not has_experts and cfg.get("enable_moe_block") is not False:
        raise ConfigImportError(f"config.json routes tokens to experts ({top_k[0]}) but states no number of experts",
                                field="num_experts", allowed=f"one of {', '.join(EXPERT_COUNT_KEYS)} stated")
    if cfg.get("n_routed_experts"):
        _check_deepseek_moe(cfg)


def _check_latent(cfg: dict) -> None:
    """Multi-head latent attention and DeepSeek sparse attention: each key stated (``q_lora_rank``
    may be null: DeepSeek-V2-Lite projects queries directly; DeepseekV3Config's default is 1536)."""
    mla = [key for key in MLA_KEYS if _stated(cfg, key)]
    if mla and not _stated(cfg, "kv_lora_rank") and "compress_ratios" not in cfg:
        raise ConfigImportError(f"config.json states {', '.join(mla)} (multi-head latent attention) but no "
                                "'kv_lora_rank'; without it the KV cache would be planned as plain multi-head attention",
                                field="kv_lora_rank", allowed="kv_lora_rank stated (an integer of at least 1)")
    if _stated(cfg, "kv_lora_rank") and "q_lora_rank" not in cfg:
        raise ConfigImportError("config.json states kv_lora_rank but no 'q_lora_rank' (null when queries are projected "
                                "directly)", field="q_lora_rank", allowed="q_lora_rank stated: an integer, or null")
    if _stated(cfg, "kv_lora_rank") and _stated(cfg, "index_n_heads") and not _stated(cfg, "index_topk"):
        raise ConfigImportError("config.json states an indexer (index_n_heads) but no 'index_topk', the tokens it "
                                "selects", field="index_topk", allowed="index_topk stated (an integer of at least 1)")


def _check_deepseek_moe(cfg: dict) -> None:
    """DeepSeek's naming (n_routed_experts): its config classes default both keys to non-zero values."""
    for key in ("n_shared_experts", "first_k_dense_replace"):
        if key == "first_k_dense_replace" and (any(k in cfg for k in LAYER_LAYOUT_KEYS)
                                               or isinstance(cfg.get("moe_layer_freq"), list)):
            continue
        if key == "n_shared_experts" and any(_stated(cfg, k) for k in (
                "moe_shared_expert_intermediate_size", "shared_expert_intermediate_size", "num_shared_experts")):
            continue
        if not _stated(cfg, key):
            raise ConfigImportError(f"config.json states n_routed_experts but no {key!r}; transformers' DeepSeek "
                                    "config classes default it to a non-zero value, so the count cannot be taken as 0",
                                    field=key, allowed=f"{key} stated (0 or more)")


def dense_width(cfg: dict, dense_layers: int) -> int:
    """The dense MLP's width where ``dense_layers`` layers hold one; refused when none is stated."""
    for key in DENSE_WIDTH_KEYS:
        if _stated(cfg, key):
            return int(cfg[key])
    if dense_layers:
        raise ConfigImportError(f"config.json has no 'intermediate_size', the width of the dense MLP its {dense_layers} "
                                "dense layer(s) hold", field="intermediate_size",
                                allowed="intermediate_size stated (an integer of at least 1)")
    return 0
