"""What a config.json must say consistently before its numbers are read: each rule is one a
loader of the model (transformers, vLLM) relies on, refused here with the key named."""

from __future__ import annotations

from typing import Any

from inferplan.catalog.hf_keys import check_known_keys
from inferplan.catalog.hf_layers import first
from inferplan.catalog.hf_required import check_required
from inferplan.errors import ConfigImportError
from inferplan.inputs import MAX_NAME_CHARS, plain_text_problem

# The stored weight types a config.json states (transformers' torch_dtype / dtype): the model's
# native precision is read from it (16-bit unless float32).
TORCH_DTYPES = ("bfloat16", "float16", "float32")


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def _names(raw: dict, cfg: dict) -> None:
    archs = raw.get("architectures")
    if archs is not None and (not isinstance(archs, list) or not archs):
        raise ConfigImportError(f"config.json architectures is {archs!r}", field="architectures",
                                allowed="a non-empty list of class names, e.g. [\"LlamaForCausalLM\"]")
    for key, values in (("architectures", archs or []), ("model_type", [cfg.get("model_type", raw.get("model_type"))])):
        for value in values:
            if value is None:
                continue
            problem = "is not text" if not isinstance(value, str) else plain_text_problem(value, max_chars=MAX_NAME_CHARS)
            if problem:
                raise ConfigImportError(f"config.json {key} {problem}", field=key,
                                        allowed=f"a name of at most {MAX_NAME_CHARS} printable characters")


def _dtype(raw: dict, cfg: dict) -> None:
    for key in ("torch_dtype", "dtype"):
        value = cfg.get(key, raw.get(key))
        if value is not None and value not in TORCH_DTYPES:
            raise ConfigImportError(f"config.json {key} is {value!r}", field=key, allowed=", ".join(TORCH_DTYPES))


def _heads(cfg: dict) -> None:
    heads_key = "num_attention_heads" if "num_attention_heads" in cfg else "n_heads"
    kv_key = "num_key_value_heads" if "num_key_value_heads" in cfg else "n_kv_heads"
    heads, kv_heads, hidden = cfg.get(heads_key), cfg.get(kv_key), cfg.get("hidden_size")
    for key_a, key_b in (("num_attention_heads", "n_heads"), ("num_key_value_heads", "n_kv_heads")):
        if cfg.get(key_a) is not None and cfg.get(key_b) is not None and cfg[key_a] != cfg[key_b]:
            # the same count under two names that disagree: neither can be taken
            raise ConfigImportError(f"config.json states {key_a} {cfg[key_a]!r} and {key_b} {cfg[key_b]!r}", field=key_b,
                                    allowed=f"{key_b} equal to {key_a}, or absent")
    if _whole(heads) and _whole(kv_heads) and kv_heads <= heads and heads % kv_heads:
        # grouped-query attention shares each key/value head among a whole group of query heads
        raise ConfigImportError(f"config.json {kv_key} ({kv_heads}) does not divide {heads_key} ({heads})",
                                field=kv_key, allowed=f"a divisor of {heads_key} ({heads})")
    stated = first(cfg, "head_dim", "attention_head_dim")
    if stated is None and not cfg.get("kv_lora_rank") and _whole(heads) and _whole(hidden) and hidden % heads:
        # without head_dim the head width is hidden_size / num_attention_heads, which must be whole
        raise ConfigImportError(f"config.json hidden_size ({hidden}) is not a multiple of {heads_key} ({heads}) "
                                "and head_dim is not stated", field="head_dim",
                                allowed=f"head_dim stated, or hidden_size a multiple of {heads_key}")


# Gemma 4's on-device designs the importer does not model, each refused when switched on: layers that
# reuse an earlier layer's KV cache (and hold no K/V weights), and per-layer token embeddings
# (a vocab × layers × width table beside the main one)
UNMODELLED = {
    "num_kv_shared_layers": "layers that reuse an earlier layer's KV cache",
    "hidden_size_per_layer_input": "per-layer token embeddings",
    "use_double_wide_mlp": "MLPs twice as wide in the layers that share a KV cache",
    "pruned_heads": "attention heads pruned from some layers",
}


def _unmodelled(cfg: dict) -> None:
    for key, what in UNMODELLED.items():
        value = cfg.get(key)
        if value not in (None, 0) and value != {} and value != []:
            raise ConfigImportError(f"config.json states {key} {value!r}: {what}, which the importer does not model",
                                    field=key, allowed="0 or absent")


def check_config(raw: dict, cfg: dict) -> None:
    """Refuse a config whose names, weight type or head counts are inconsistent (``cfg``: the
    text model's keys, ``raw``: the whole file), or that states an expert or attention key
    the importer does not know."""
    _names(raw, cfg)
    _dtype(raw, cfg)
    _heads(cfg)
    check_known_keys(cfg)
    _unmodelled(cfg)
    check_required(cfg, str(cfg.get("model_type", raw.get("model_type", ""))))
