"""Mistral's own ``params.json``, for repos that ship no config.json (Mistral Large 3).

The keys are renamed to the Hugging Face names the way vLLM reads such a file
(``vllm/transformers_utils/configs/mistral.py``): ``dim`` is the hidden size, ``hidden_dim`` the
dense MLP width, the ``moe`` block holds the expert sizes and ``yarn`` the RoPE scaling. A model
with a multi-head-latent-attention rank is read as DeepSeek-V3 (vLLM's MistralLarge3ForCausalLM
subclasses it); a ``vision_encoder`` block makes it a multimodal wrapper around the text model.
"""

from __future__ import annotations

from typing import Any

from inferplan.errors import ConfigImportError

_RENAMES = {
    "dim": "hidden_size",
    "n_layers": "num_hidden_layers",
    "n_heads": "num_attention_heads",
    "n_kv_heads": "num_key_value_heads",
    "hidden_dim": "intermediate_size",
    "norm_eps": "rms_norm_eps",
    "tied_embeddings": "tie_word_embeddings",
}
_MOE_RENAMES = {
    "num_experts": "n_routed_experts",
    "num_experts_per_tok": "num_experts_per_tok",
    "expert_hidden_dim": "moe_intermediate_size",
    "num_shared_experts": "n_shared_experts",
    "route_every_n": "moe_layer_freq",
    "first_k_dense_replace": "first_k_dense_replace",
}
_BLOCKS = ("moe", "yarn", "vision_encoder", "llama_4_scaling")


def is_mistral_params(raw: Any) -> bool:
    """True for a params.json: Mistral's ``dim`` and no Hugging Face ``hidden_size``."""
    return isinstance(raw, dict) and "dim" in raw and "hidden_size" not in raw and "text_config" not in raw


def as_hf_config(raw: dict) -> dict:
    """The params.json as a config.json dict (text model nested under ``text_config`` when the
    file carries a vision encoder)."""
    cfg: dict[str, Any] = {_RENAMES.get(key, key): value for key, value in raw.items() if key not in _BLOCKS}
    moe = raw.get("moe")
    if moe is not None and not isinstance(moe, dict):
        raise ConfigImportError(f"params.json moe must be an object, not {type(moe).__name__}", field="moe",
                                allowed="moe as a JSON object of settings, or no moe")
    if isinstance(moe, dict):
        cfg.update({new: moe[old] for old, new in _MOE_RENAMES.items() if old in moe})
    yarn = raw.get("yarn")
    if isinstance(yarn, dict):
        cfg["rope_scaling"] = {"type": "yarn", "factor": yarn.get("factor"),
                               "original_max_position_embeddings": yarn.get("original_max_position_embeddings")}
    mla = bool(raw.get("kv_lora_rank"))
    cfg["model_type"] = "deepseek_v3" if mla else "mistral"
    architecture = "MistralLarge3ForCausalLM" if mla else "MistralForCausalLM"
    if isinstance(raw.get("vision_encoder"), dict):
        return {"architectures": [architecture], "text_config": cfg, "vision_config": raw["vision_encoder"],
                "quantization_config": cfg.pop("quantization_config", None)}
    return {"architectures": [architecture], **cfg}
