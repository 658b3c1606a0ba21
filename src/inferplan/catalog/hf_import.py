"""Import a model from a Hugging Face ``config.json`` without the network.

Accepts a config.json file, a model folder (config.json plus ``model.safetensors.index.json``
or ``*.safetensors`` files, whose headers give exact tensor sizes), or a repo id found in the
local Hugging Face cache. Unsupported architectures raise ``ConfigImportError`` naming what is
missing.
"""

from __future__ import annotations

import json
import math
import os
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from inferplan.catalog.architecture import (
    Architecture,
    DsaDims,
    LayerKind,
    MambaDims,
    MlaDims,
    MoeDims,
)
from inferplan.catalog.hf_checks import check_config
from inferplan.catalog.hf_layers import (
    block_sparse_dims,
    compressed_dims,
    first,
    gated_delta_dims,
    global_attention_dims,
    kda_dims,
    layer_kinds,
    moe_dims,
    mtp_layer_count,
    mtp_layer_key,
    mtp_layer_kinds,
    own_indexer_share,
    req,
    req_any,
    SSM_STATE_BYTES,
)
from inferplan.catalog.hf_quant import quant_config
from inferplan.catalog.hf_required import dense_width
from inferplan.catalog.mistral_params import as_hf_config, is_mistral_params
from inferplan.errors import ConfigImportError
from inferplan.input_files import MAX_INDEX_BYTES, parse_json, read_json
from inferplan.units import MiB

# what `model` may name when a model is imported from files
IMPORT_FROM = "a config.json, a model folder holding one, or a repo id in the local Hugging Face cache"
# a .safetensors file as its format writes it; a header past the cap is not one a checkpoint ships
SAFETENSORS_FORM = "a .safetensors file: an 8-byte little-endian header length, then that JSON header"
MAX_SAFETENSORS_HEADER_BYTES = 100 * MiB

# Keys read from text_config when a multimodal wrapper nests the language model.
_NESTED = ("text_config", "llm_config", "language_config")

# Defaults that upstream config.json files leave out, applied only where the key is missing: those
# of transformers Gemma2Config / Gemma3TextConfig, and Qwen3-Next's gated attention (vLLM 0.11.1
# qwen3_next.py reads getattr(config, "attn_output_gate", True), a q_proj twice as wide;
# https://github.com/vllm-project/vllm/blob/v0.11.1/vllm/model_executor/models/qwen3_next.py, checked 2026-12-07).
_MODEL_TYPE_DEFAULTS: dict[str, dict[str, Any]] = {
    "qwen3_next": {"attn_output_gate": True},
    "gemma2": {"tie_word_embeddings": True, "head_dim": 256, "sliding_window": 4096},
    "gemma3_text": {
        "tie_word_embeddings": True, "head_dim": 256, "vocab_size": 262_208,
        "max_position_embeddings": 131_072, "sliding_window_pattern": 6, "sliding_window": 4096,
    },
}
_MODEL_TYPE_DEFAULTS["gemma3"] = _MODEL_TYPE_DEFAULTS["gemma3_text"]


@dataclass(frozen=True)
class ImportedModel:
    """What a local model folder says: architecture, and checkpoint bytes when known."""

    name: str
    architecture: Architecture
    checkpoint_bytes: int | None
    checkpoint_source: str | None  # "index total_size" or "safetensors headers"
    path: str
    config_name: str | None = None  # the config's own ``_name_or_path``, when it states one


# config.json dimensions that must be whole numbers of at least 1 (0 allowed for the MLP width,
# which MoE models set to 0); a boolean, fraction, NaN or negative there is a malformed file
_POSITIVE_DIMS = ("hidden_size", "num_hidden_layers", "n_layers", "num_layers", "num_attention_heads", "n_heads",
                  "num_key_value_heads", "n_kv_heads", "head_dim", "vocab_size", "num_experts", "n_routed_experts",
                  "num_local_experts", "num_experts_per_tok", "moe_intermediate_size", "kv_lora_rank",
                  "global_head_dim", "num_global_key_value_heads", "top_k_experts", "expert_intermediate_size")
_NON_NEGATIVE_DIMS = ("intermediate_size", "ffn_hidden_size", "max_position_embeddings", "first_k_dense_replace")


def _check_dims(cfg: dict) -> None:
    for key in (*_POSITIVE_DIMS, *_NON_NEGATIVE_DIMS):
        value = cfg.get(key)
        if value is None:
            continue
        least = 1 if key in _POSITIVE_DIMS else 0
        whole = isinstance(value, int) and not isinstance(value, bool)
        if not whole or value < least or value > 10**12:
            raise ConfigImportError(f"config.json {key} is {value!r}, not a whole number of at least {least}",
                                    field=key, allowed=f"an integer from {least} to 10^12")


def _yarn_context(cfg: dict) -> int:
    """The context a YaRN ``rope_scaling`` (``rope_parameters`` in newer configs) opens, as vLLM
    derives it: original positions × factor."""
    rope = cfg.get("rope_scaling") or cfg.get("rope_parameters")
    if not isinstance(rope, dict) or (rope.get("rope_type") or rope.get("type")) != "yarn":
        return 0
    factor, original = rope.get("factor"), rope.get("original_max_position_embeddings") or cfg.get("max_position_embeddings")
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v > 0 for v in (factor, original)):
        return 0
    return int(min(original * factor, 10**9))


def architecture_from_config(raw: dict) -> Architecture:
    """Normalise a config.json dict (multimodal wrappers: the text model inside); a malformed
    value (a fraction, NaN, 0 heads, more active experts than experts) is an error naming its key."""
    try:
        arch = _architecture_from_config(raw)
    except (ValueError, TypeError, AttributeError, OverflowError, ZeroDivisionError) as exc:  # a value of the wrong kind elsewhere
        raise ConfigImportError(f"config.json holds a value that is not usable: {exc}", field="config.json",
                                allowed="each key's value of the JSON type Hugging Face configs use for it") from None
    if arch.num_kv_heads > arch.num_attention_heads:
        raise ConfigImportError(f"config.json has {arch.num_kv_heads} key/value heads but only "
                                f"{arch.num_attention_heads} attention heads", field="num_key_value_heads",
                                allowed=f"1..{arch.num_attention_heads}")
    if arch.moe and arch.moe.experts_per_token > arch.moe.num_experts:
        raise ConfigImportError(f"config.json routes {arch.moe.experts_per_token} experts per token of only "
                                f"{arch.moe.num_experts}", field="num_experts_per_tok", allowed=f"1..{arch.moe.num_experts}")
    return arch


def _architecture_from_config(raw: dict) -> Architecture:
    if not isinstance(raw, dict):
        raise ConfigImportError("config.json must be a JSON object", field="config.json",
                                allowed="a JSON object of the model's settings ({\"hidden_size\": …}), as Hugging Face or Mistral write it")
    if is_mistral_params(raw):
        raw = as_hf_config(raw)
    archs = raw.get("architectures") or ["unknown"]
    cfg = dict(raw)
    has_vision = False
    for key in _NESTED:
        if isinstance(raw.get(key), dict):
            cfg = {**raw[key]}
            cfg.setdefault("quantization_config", raw.get("quantization_config"))
            if "tie_word_embeddings" in raw:
                cfg.setdefault("tie_word_embeddings", raw["tie_word_embeddings"])
            has_vision = "vision_config" in raw
            break
    model_type = str(cfg.get("model_type", raw.get("model_type", "unknown")))
    for key, value in _MODEL_TYPE_DEFAULTS.get(model_type, {}).items():
        cfg.setdefault(key, value)
    _check_dims(cfg)
    check_config(raw, cfg)
    hidden = int(req(cfg, "hidden_size", "every architecture"))
    if isinstance(cfg.get("layers_block_type"), list) and cfg.get("num_hidden_layers") is None:
        cfg["num_hidden_layers"] = len(cfg["layers_block_type"])  # Nemotron 3 Ultra states only the list
    n_layers = int(req_any(cfg, ("num_hidden_layers", "n_layers", "num_layers"), "every architecture"))
    heads = int(req_any(cfg, ("num_attention_heads", "n_heads"), "every architecture"))
    kv_heads = int(first(cfg, "num_key_value_heads", "n_kv_heads", default=heads) or heads)
    head_dim = int(first(cfg, "head_dim", "attention_head_dim", default=hidden // heads) or hidden // heads)
    vocab = int(req(cfg, "vocab_size", "the embedding size"))
    intermediate = int(first(cfg, "intermediate_size", "ffn_hidden_size", default=0) or 0)
    kinds = layer_kinds(cfg, n_layers, model_type)
    if len(kinds) != n_layers and "hybrid_override_pattern" not in cfg:
        raise ConfigImportError(
            f"layer_types lists {len(kinds)} layers but num_hidden_layers is {n_layers}",
            field="layer_types", allowed=f"a layer_types list of {n_layers} entries, one per layer (num_hidden_layers)",
        )
    mla = None
    if cfg.get("kv_lora_rank"):
        mla = MlaDims(
            kv_lora_rank=int(cfg["kv_lora_rank"]),
            qk_rope_head_dim=int(req(cfg, "qk_rope_head_dim", "multi-head latent attention")),
            qk_nope_head_dim=int(req(cfg, "qk_nope_head_dim", "multi-head latent attention")),
            v_head_dim=int(req(cfg, "v_head_dim", "multi-head latent attention")),
            q_lora_rank=int(cfg["q_lora_rank"]) if cfg.get("q_lora_rank") else None,
        )
    dsa = None
    if mla is not None and cfg.get("index_topk"):
        dsa = DsaDims(
            index_n_heads=int(req(cfg, "index_n_heads", "DeepSeek sparse attention")),
            index_head_dim=int(req(cfg, "index_head_dim", "DeepSeek sparse attention")),
            index_topk=int(cfg["index_topk"]),
            own_indexer_share=own_indexer_share(cfg, n_layers),
        )
    if LayerKind.SPARSE in kinds:
        dsa = block_sparse_dims(cfg)
    compressed = compressed_dims(cfg, kinds)
    linear = None
    if LayerKind.LINEAR in kinds and "linear_attn_config" in cfg:
        linear = kda_dims(cfg)
    elif LayerKind.LINEAR in kinds:
        linear = gated_delta_dims(cfg)
    mamba = None
    if LayerKind.MAMBA in kinds:
        m_heads = first(cfg, "mamba_num_heads", "mamba_n_heads")
        m_head_dim = first(cfg, "mamba_head_dim", "mamba_d_head")
        if m_heads is None and cfg.get("mamba_expand"):
            m_head_dim = m_head_dim or 64
            m_heads = int(cfg["mamba_expand"]) * hidden // int(m_head_dim)
        if m_heads is None or m_head_dim is None:
            raise ConfigImportError("config.json has no mamba_num_heads/mamba_head_dim", field="mamba_num_heads",
                                    allowed="mamba_num_heads and mamba_head_dim (or mamba_n_heads and mamba_d_head), "
                                    "or mamba_expand")
        mamba = MambaDims(
            num_heads=int(m_heads),
            head_dim=int(m_head_dim),
            state_size=int(req_any(cfg, ("ssm_state_size", "mamba_d_state", "state_size"), "a Mamba mixer")),
            n_groups=int(first(cfg, "n_groups", "mamba_n_groups", default=1)),
            conv_kernel=int(first(cfg, "conv_kernel", "mamba_d_conv", default=4)),
            ssm_state_bytes=4 if str(cfg.get("mamba_ssm_cache_dtype", "")) in ("float32", "fp32") else 2,
            config_state_bytes=SSM_STATE_BYTES.get(str(cfg.get("mamba_ssm_dtype"))),  # the key SGLang reads
        )
    window = first(cfg, "sliding_window", "attention_chunk_size") if LayerKind.SLIDING in kinds or compressed else None
    mtp = mtp_layer_count(cfg, model_type)
    moe = moe_dims(cfg, n_layers, intermediate, model_type)
    return Architecture(
        hf_architecture=str(archs[0]),
        model_type=model_type,
        hidden_size=hidden,
        num_attention_heads=heads,
        num_kv_heads=kv_heads,
        head_dim=head_dim,
        intermediate_size=dense_width(cfg, _dense_layers(cfg, kinds, moe, model_type)),
        vocab_size=vocab,
        tie_word_embeddings=bool(cfg.get("tie_word_embeddings", raw.get("tie_word_embeddings", False))),
        layer_kinds=kinds,
        max_position_embeddings=int(first(cfg, "max_position_embeddings", "max_seq_len", default=0) or 0),
        rope_context_tokens=_yarn_context(cfg),
        torch_dtype=str(first(cfg, "torch_dtype", "dtype", default=raw.get("torch_dtype", "bfloat16"))),
        sliding_window=int(window) if window else None,
        mla=mla,
        dsa=dsa,
        compressed=compressed,
        moe=moe,
        global_attention=global_attention_dims(cfg, kinds),
        linear=linear,
        mamba=mamba,
        quant=quant_config(cfg, n_layers),
        attention_bias=bool(cfg.get("attention_bias", model_type.startswith("qwen2"))),
        qk_norm=model_type.startswith(("qwen3", "gemma3", "gemma4")) or bool(cfg.get("use_qk_norm")),
        mlp_projections=2 if str(first(cfg, "mlp_hidden_act", "hidden_act", default="")) in ("relu2", "squared_relu") else 3,
        mtp_layers=mtp,
        mtp_layers_key=mtp_layer_key(cfg),
        mtp_layer_kinds=mtp_layer_kinds(cfg, n_layers, mtp),
        attention_output_gate=bool(cfg.get("attn_output_gate", False) or cfg.get("mla_use_output_gate", False)),
        residual_streams=_residual_streams(cfg),
        has_vision_tower=has_vision,
    )


def _dense_layers(cfg: dict, kinds: tuple[LayerKind, ...], moe: MoeDims | None, model_type: str) -> int:
    """Layers holding a dense MLP: those without experts (Nemotron-H: its MLP blocks only), and
    every layer where Gemma 4 runs one beside its experts."""
    if cfg.get("enable_moe_block"):
        return len(kinds)
    moe_layers = moe.moe_layers if moe else (False,) * len(kinds)
    nemotron = model_type.startswith("nemotron_h")
    return sum(1 for kind, is_moe in zip(kinds, moe_layers) if not is_moe and (kind is LayerKind.MLP or not nemotron))


def _residual_streams(cfg: dict) -> int:
    """Residual streams a hyper-connected model keeps per token (DeepSeek-V4's ``hc_mult``: 4); one
    where the config switches hyper-connections off (GLM-5-next's ``mhc: false`` beside its hc_mult)."""
    value = first(cfg, "hc_mult", default=1)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigImportError(f"hc_mult is {json.dumps(value)}; hyper-connections keep a whole number of residual "
                                "streams", field="hc_mult", allowed="an integer of at least 1 (1: a plain residual)")
    return 1 if cfg.get("mhc") is False else value


def read_config(path: Path, max_bytes: int | None = None) -> dict:
    return read_json(path, field="model", error=ConfigImportError, max_bytes=max_bytes)


def safetensors_header_bytes(path: Path) -> int:
    """Bytes of tensor data in one .safetensors file, read from its header only."""
    with path.open("rb") as fh:
        head = fh.read(8)
        if len(head) != 8:
            raise ConfigImportError(f"{path.name} is not a safetensors file", field="model", allowed=SAFETENSORS_FORM)
        (n,) = struct.unpack("<Q", head)
        if n > MAX_SAFETENSORS_HEADER_BYTES:
            raise ConfigImportError(f"{path.name}: header length {n} is implausible", field="model",
                                    allowed=f"{SAFETENSORS_FORM}, the header at most {MAX_SAFETENSORS_HEADER_BYTES:,} bytes")
        header = parse_json(fh.read(n), where=f"{path.name}: safetensors header", field="model",
                            error=ConfigImportError)
    return sum(
        int(t["data_offsets"][1]) - int(t["data_offsets"][0])
        for name, t in header.items()
        if name != "__metadata__"
    )


def _checkpoint_bytes(folder: Path) -> tuple[int | None, str | None]:
    index = folder / "model.safetensors.index.json"
    if index.is_file():
        meta = read_config(index, MAX_INDEX_BYTES).get("metadata") or {}
        if meta.get("total_size"):
            return int(meta["total_size"]), "model.safetensors.index.json total_size"
    files = sorted(f for f in folder.glob("*.safetensors") if f.is_file())  # not a pipe that blocks on open
    if files:
        return sum(safetensors_header_bytes(f) for f in files), "safetensors headers"
    return None, None


def hf_cache_snapshot(repo_id: str) -> Path | None:
    """The newest local snapshot folder of a repo in the Hugging Face cache, if any."""
    hub = os.environ.get("HF_HUB_CACHE") or os.path.join(
        os.environ.get("HF_HOME", os.path.expanduser("~/.cache/huggingface")), "hub"
    )
    repo_dir = Path(hub) / ("models--" + repo_id.replace("/", "--"))
    snaps = sorted((repo_dir / "snapshots").glob("*/config.json"), key=lambda p: p.stat().st_mtime)
    return snaps[-1].parent if snaps else None


def import_model(location: str) -> ImportedModel:
    """Import from a config.json path, a model folder, or a repo id in the local HF cache."""
    try:
        path = Path(location).expanduser()
    except RuntimeError:  # "~name" for a user that does not exist
        path = Path(location)
    if path.is_dir():
        folder, config_path = path, path / "config.json"
    elif path.suffix == ".json" or path.is_file():
        folder, config_path = path.parent, path
    elif "/" in location and (snap := hf_cache_snapshot(location)) is not None:
        folder, config_path = snap, snap / "config.json"
    else:
        raise ConfigImportError(
            f"{location!r} is not a config.json, a model folder or a repo id in the local "
            "Hugging Face cache",
            field="model", allowed=IMPORT_FROM,
        )
    if not config_path.is_file() and config_path.name == "config.json" and (folder / "params.json").is_file():
        config_path = folder / "params.json"  # Mistral's own format (Mistral Large 3 ships no config.json)
    if not folder.is_dir():  # a path to nothing: say so, not that the missing folder lacks a config
        raise ConfigImportError(f"{location}: no such file or folder", field="model",
                                allowed=IMPORT_FROM)
    if not config_path.is_file():
        raise ConfigImportError(f"no config.json (or Mistral params.json) in {folder}", field="model", allowed=IMPORT_FROM)
    raw = read_config(config_path)
    modelopt = folder / "hf_quant_config.json"
    if "quantization_config" not in raw and modelopt.is_file():
        q = read_config(modelopt).get("quantization") or {}
        raw = {**raw, "quantization_config": {"quant_method": "modelopt", **q}}
    arch = architecture_from_config(raw)
    size, how = _checkpoint_bytes(folder) if config_path.name in ("config.json", "params.json") else (None, None)
    return ImportedModel(
        name=location, architecture=arch, checkpoint_bytes=size, checkpoint_source=how, path=str(folder),
        config_name=raw.get("_name_or_path") if isinstance(raw.get("_name_or_path"), str) else None,
    )
