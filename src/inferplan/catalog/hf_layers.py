"""Per-layer structure of a config.json: which mixer each layer runs, the mixture of experts, and
the sizes of the less common attention designs (DeepSeek sparse and compressed attention, Kimi
Delta Attention). ``hf_import`` assembles them into an ``Architecture``."""

from __future__ import annotations

from typing import Any

from inferplan.catalog.architecture import (
    CompressedAttnDims,
    DsaDims,
    GlobalAttnDims,
    LayerKind,
    LinearAttnDims,
    MoeDims,
)
from inferplan.catalog.hf_required import expert_width
from inferplan.errors import ConfigImportError

# DeepSeek-V4: layers whose compress ratio is 4 pool overlapping entries and run an indexer (CSA);
# vLLM's deepseek_v4_attention keys both on this ratio
CSA_RATIO = 4


def req(cfg: dict, key: str, where: str) -> Any:
    if key not in cfg or cfg[key] is None:
        raise ConfigImportError(f"config.json has no {key!r}, which {where} needs", field=key,
                                allowed=f"a config.json stating {key}")
    return cfg[key]


def first(cfg: dict, *keys: str, default: Any = None) -> Any:
    for key in keys:
        if cfg.get(key) is not None:
            return cfg[key]
    return default


def layer_kinds(cfg: dict, n_layers: int, model_type: str) -> tuple[LayerKind, ...]:
    """Per-layer mixer kind from layer_types, hybrid patterns or sliding-window rules."""
    if "hybrid_override_pattern" in cfg:  # Nemotron-H: M mamba, * attention, - MLP, E MoE
        table = {"M": LayerKind.MAMBA, "*": LayerKind.FULL, "-": LayerKind.MLP, "E": LayerKind.MLP}
        pattern = cfg["hybrid_override_pattern"]
        try:
            return tuple(table[ch] for ch in pattern)
        except KeyError as exc:
            raise ConfigImportError(
                f"hybrid_override_pattern has unknown symbol {exc.args[0]!r}",
                field="hybrid_override_pattern",
                allowed="M * - E",
            ) from None
    if "layers_block_type" in cfg:  # Nemotron 3 Ultra / 3.5: the pattern as words
        table = {"mamba": LayerKind.MAMBA, "attention": LayerKind.FULL, "mlp": LayerKind.MLP, "moe": LayerKind.MLP}
        blocks = cfg["layers_block_type"]
        if not isinstance(blocks, list) or not blocks or not all(isinstance(b, str) and b in table for b in blocks):
            raise ConfigImportError(f"layers_block_type must list one of {', '.join(table)} for each layer",
                                    field="layers_block_type", allowed=", ".join(table))
        return tuple(table[name] for name in blocks)
    if "compress_ratios" in cfg:  # DeepSeek-V4: 0 window only, CSA_RATIO compressed sparse, else heavily compressed
        ratios = _compress_ratios(cfg, n_layers)
        kinds = {0: LayerKind.SLIDING, CSA_RATIO: LayerKind.CSA}
        return tuple(kinds.get(r, LayerKind.HCA) for r in ratios)
    if "sparse_attention_config" in cfg:  # MiniMax-M3: 1 marks a sparse layer
        sparse = _block(cfg, "sparse_attention_config")
        if sparse.get("use_sparse_attention") is True:
            freq = sparse.get("sparse_attention_freq")
            if not _flags(freq, n_layers):
                raise ConfigImportError(f"sparse_attention_config.sparse_attention_freq must give 0 or 1 for each of the "
                                        f"{n_layers} layers", field="sparse_attention_freq", allowed="0, 1")
            return tuple(LayerKind.SPARSE if f else LayerKind.FULL for f in freq)
    if "linear_attn_config" in cfg:  # Kimi Linear / K3: 1-based KDA layer numbers
        kda = _kda_layers(cfg, n_layers)
        attention = LayerKind.MLA if cfg.get("kv_lora_rank") else LayerKind.FULL
        return tuple(LayerKind.LINEAR if i + 1 in kda else attention for i in range(n_layers))
    if "attn_type_list" in cfg:  # MiniMax: 1 full attention, 0 lightning (linear) attention (transformers MiniMaxConfig)
        types = cfg["attn_type_list"]
        if not _flags(types, n_layers) or 0 in types:
            raise ConfigImportError(f"attn_type_list must give 1 (full attention) for each of the {n_layers} layers; "
                                    "0 (lightning attention) is not modelled", field="attn_type_list", allowed="1")
        return (LayerKind.FULL,) * n_layers
    if "attention_chunk_size" in cfg:
        return _chunked_layers(cfg, n_layers, model_type)
    if cfg.get("layer_types"):
        table = {
            "full_attention": LayerKind.FULL,
            "attention": LayerKind.FULL,
            "sliding_attention": LayerKind.SLIDING,
            "chunked_attention": LayerKind.SLIDING,
            "linear_attention": LayerKind.LINEAR,
            "mamba": LayerKind.MAMBA,
        }
        kinds = []
        for i, name in enumerate(cfg["layer_types"]):
            if name not in table:
                raise ConfigImportError(
                    f"layer_types[{i}] is {name!r}", field="layer_types", allowed=", ".join(table)
                )
            kinds.append(table[name])
        return tuple(kinds)
    if "full_attention_interval" in cfg:  # Qwen3-Next without layer_types
        every = int(cfg["full_attention_interval"])
        return tuple(LayerKind.FULL if (i + 1) % every == 0 else LayerKind.LINEAR for i in range(n_layers))
    if "attn_layer_period" in cfg:  # Jamba
        period, offset = int(cfg["attn_layer_period"]), int(cfg.get("attn_layer_offset", 0))
        return tuple(LayerKind.FULL if i % period == offset else LayerKind.MAMBA for i in range(n_layers))
    if cfg.get("kv_lora_rank"):
        return (LayerKind.MLA,) * n_layers
    window = cfg.get("sliding_window")
    if model_type.startswith("gemma3") and window:
        pattern = int(cfg.get("sliding_window_pattern", 6))
        return tuple(LayerKind.FULL if (i + 1) % pattern == 0 else LayerKind.SLIDING for i in range(n_layers))
    if model_type == "gemma2" and window:
        return tuple(LayerKind.SLIDING if i % 2 == 0 else LayerKind.FULL for i in range(n_layers))
    if window and cfg.get("use_sliding_window", True) and model_type in ("mistral", "mixtral"):
        return (LayerKind.SLIDING,) * n_layers
    return (LayerKind.FULL,) * n_layers


# Llama 4 (transformers Llama4TextConfig): no_rope_layers marks with 1 the layers that apply RoPE and
# attend within their chunk of attention_chunk_size tokens; by default every 4th layer is a NoPE layer
# with full attention. vLLM's ChunkedLocalAttentionSpec keeps at most one chunk of KV per request, so
# a chunked layer is counted as a window of attention_chunk_size tokens.
NO_ROPE_LAYER_INTERVAL = 4


def _chunked_layers(cfg: dict, n_layers: int, model_type: str) -> tuple[LayerKind, ...]:
    if not model_type.startswith("llama4"):
        raise ConfigImportError(f"config.json ({model_type}) states 'attention_chunk_size'; chunked attention is read "
                                "for Llama 4 only", field="attention_chunk_size", allowed="llama4_text")
    if cfg.get("layer_types"):
        return layer_kinds({k: v for k, v in cfg.items() if k != "attention_chunk_size"}, n_layers, model_type)
    interval = cfg.get("no_rope_layer_interval", NO_ROPE_LAYER_INTERVAL)
    rope = cfg.get("no_rope_layers") or [int((i + 1) % interval != 0) for i in range(n_layers)]
    if not _flags(rope, n_layers):
        raise ConfigImportError(f"no_rope_layers must give 0 or 1 for each of the {n_layers} layers",
                                field="no_rope_layers", allowed="0, 1")
    return tuple(LayerKind.SLIDING if r else LayerKind.FULL for r in rope)


def global_attention_dims(cfg: dict, kinds: tuple[LayerKind, ...]) -> GlobalAttnDims | None:
    """Gemma 4's full-attention layers: ``global_head_dim`` wide, and with ``attention_k_eq_v`` one
    projection for K and V over ``num_global_key_value_heads`` heads (transformers' Gemma4TextAttention,
    vLLM's Gemma4DecoderLayer: the global head count applies only to K = V layers)."""
    k_eq_v = cfg.get("attention_k_eq_v")
    if k_eq_v is not None and not isinstance(k_eq_v, bool):
        raise ConfigImportError(f"attention_k_eq_v is {k_eq_v!r}", field="attention_k_eq_v", allowed="true, false")
    width = cfg.get("global_head_dim")
    if not k_eq_v and width is None:
        return None
    if LayerKind.FULL not in kinds:
        return None
    heads = int(first(cfg, "num_attention_heads", default=1))
    kv_heads = int(req(cfg, "num_global_key_value_heads", "key = value attention")) if k_eq_v else None
    if kv_heads is not None and heads % kv_heads:
        raise ConfigImportError(f"num_global_key_value_heads ({kv_heads}) does not divide num_attention_heads ({heads})",
                                field="num_global_key_value_heads", allowed=f"a divisor of {heads}")
    return GlobalAttnDims(
        head_dim=int(width if width is not None else cfg.get("head_dim") or cfg["hidden_size"] // heads),
        num_kv_heads=kv_heads if kv_heads is not None else int(first(cfg, "num_key_value_heads", default=heads)),
        k_eq_v=bool(k_eq_v),
    )


def moe_dims(cfg: dict, n_layers: int, hidden_intermediate: int, model_type: str) -> MoeDims | None:
    n_experts = first(cfg, "n_routed_experts", "num_local_experts", "num_experts", "n_routed_experts")
    if cfg.get("enable_moe_block") is False:  # Gemma 4: the experts switched off (the dense 31B states it)
        return None
    if not n_experts:
        if cfg.get("enable_moe_block") or cfg.get("top_k_experts"):
            raise ConfigImportError("config.json routes tokens to experts (enable_moe_block / top_k_experts) but "
                                    "states no number of experts", field="num_experts", allowed="an integer of at least 1")
        return None
    top_k = req_any(cfg, ("num_experts_per_tok", "num_experts_per_token", "experts_per_token", "moe_topk", "top_k_experts"),
                    "a mixture of experts")
    width = expert_width(cfg, model_type)
    shared = 0
    latent_size = first(cfg, "moe_latent_size", "routed_expert_hidden_size")  # Nemotron 3, Kimi-K3
    latent = int(latent_size) if latent_size else None
    if cfg.get("moe_shared_expert_intermediate_size"):  # Nemotron-H: the shared expert's own width
        n_shared = cfg.get("n_shared_experts")
        shared = int(cfg["moe_shared_expert_intermediate_size"]) * (1 if n_shared is None else int(n_shared))
    elif first(cfg, "n_shared_experts", "num_shared_experts"):
        shared = int(first(cfg, "n_shared_experts", "num_shared_experts")) * width
    elif first(cfg, "shared_expert_intermediate_size", "shared_intermediate_size"):  # Qwen2-MoE; MiniMax
        shared = int(first(cfg, "shared_expert_intermediate_size", "shared_intermediate_size"))
    elif cfg.get("enable_moe_block"):  # Gemma 4: every layer's dense MLP runs beside its experts, for every token
        shared = hidden_intermediate
    elif model_type.startswith("llama4"):  # transformers Llama4TextMoe: one shared expert of intermediate_size
        shared = hidden_intermediate
    if "hybrid_override_pattern" in cfg:  # Nemotron-H: E marks the MoE blocks
        layers = tuple(ch == "E" for ch in cfg["hybrid_override_pattern"])
        return MoeDims(int(n_experts), int(top_k), width, shared, layers, latent)
    if isinstance(cfg.get("layers_block_type"), list):
        layers = tuple(name == "moe" for name in cfg["layers_block_type"])
        return MoeDims(int(n_experts), int(top_k), width, shared, layers, latent)
    if isinstance(cfg.get("moe_layers"), list):  # Llama 4: the MoE layers' numbers
        layers = tuple(i in set(cfg["moe_layers"]) for i in range(n_layers))
        return MoeDims(int(n_experts), int(top_k), width, shared, layers, latent)
    first_dense = int(cfg.get("first_k_dense_replace", 0))
    freq = first(cfg, "moe_layer_freq", "decoder_sparse_step", "expert_layer_period", "interleave_moe_layer_step", default=1)
    if isinstance(freq, list):  # MiniMax-M3: 1 marks a MoE layer
        if not _flags(freq, n_layers):
            raise ConfigImportError(f"moe_layer_freq must be a whole number or give 0 or 1 for each of the {n_layers} "
                                    "layers", field="moe_layer_freq", allowed="an integer, or a list of 0 and 1")
        layers = tuple(bool(f) for f in freq)
        return MoeDims(int(n_experts), int(top_k), width, shared, layers, latent)
    if not _whole(freq, 1):
        raise ConfigImportError(f"moe_layer_freq is {freq!r}, not a whole number of at least 1", field="moe_layer_freq",
                                allowed="an integer of at least 1, or a list of 0 and 1")
    # Llama 4's interleave_moe_layer_step puts experts in layers step-1, 2*step-1, ... (transformers Llama4TextConfig)
    offset = int(cfg.get("expert_layer_offset", freq - 1 if "interleave_moe_layer_step" in cfg else 0))
    mlp_only = set(cfg.get("mlp_only_layers") or [])
    layers = tuple(
        i >= first_dense and (i - offset) % freq == 0 and i not in mlp_only for i in range(n_layers)
    )
    return MoeDims(
        num_experts=int(n_experts),
        experts_per_token=int(top_k),
        expert_intermediate_size=width,
        shared_intermediate_size=shared,
        moe_layers=layers,
        latent_size=latent,
    )


def compressed_dims(cfg: dict, kinds: tuple[LayerKind, ...]) -> CompressedAttnDims | None:
    """DeepSeek-V4's CSA / HCA sizes; the window is ``sliding_window``."""
    if "compress_ratios" not in cfg:
        return None
    ratios = _compress_ratios(cfg, len(kinds))
    heavy = {r for r in ratios if r not in (0, CSA_RATIO)}
    if len(heavy) > 1 or not _whole(cfg.get("sliding_window"), 1):
        raise ConfigImportError(f"compress_ratios {sorted(set(ratios))} with sliding_window {cfg.get('sliding_window')!r} "
                                "is not DeepSeek-V4's layout", field="compress_ratios",
                                allowed="0, 4 and one larger ratio, with a sliding_window of at least 1")
    where = "DeepSeek-V4 compressed attention"
    size = {key: _positive(cfg, key, where) for key in
            ("index_n_heads", "index_head_dim", "index_topk", "qk_rope_head_dim", "q_lora_rank", "o_groups", "o_lora_rank")}
    return CompressedAttnDims(
        csa_ratio=CSA_RATIO, hca_ratio=heavy.pop() if heavy else 128, index_n_heads=size["index_n_heads"],
        index_head_dim=size["index_head_dim"], index_topk=size["index_topk"], rope_head_dim=size["qk_rope_head_dim"],
        q_lora_rank=size["q_lora_rank"], o_groups=size["o_groups"], o_lora_rank=size["o_lora_rank"],
    )


def block_sparse_dims(cfg: dict) -> DsaDims:
    """MiniMax-M3's sparse attention: an indexer picks ``sparse_topk_blocks`` blocks of
    ``sparse_block_size`` tokens; its keys are kept in the KV cache's dtype (vLLM's indexer cache)."""
    sparse = _block(cfg, "sparse_attention_config")
    where = "block-sparse attention"
    return DsaDims(
        index_n_heads=_positive(sparse, "sparse_num_index_heads", where),
        index_head_dim=_positive(sparse, "sparse_index_dim", where),
        index_topk=_positive(sparse, "sparse_topk_blocks", where) * _positive(sparse, "sparse_block_size", where),
        index_keys_in_cache_dtype=True,
    )


def kda_dims(cfg: dict) -> LinearAttnDims:
    """Kimi Delta Attention sizes (``linear_attn_config``): vLLM keeps its recurrent state in float32."""
    kda = _block(cfg, "linear_attn_config")
    heads = _positive(kda, "num_heads", "Kimi Delta Attention")
    dim = _positive(kda, "head_dim", "Kimi Delta Attention")
    kernel = kda.get("short_conv_kernel_size", 4)
    if not _whole(kernel, 1):
        raise ConfigImportError(f"linear_attn_config.short_conv_kernel_size is {kernel!r}, not a whole number of at least 1",
                                field="short_conv_kernel_size", allowed="an integer of at least 1")
    # without use_full_rank_gate the decay and output gate go through head_dim (vLLM 0.11.1 layers/kda.py
    # f_a_proj/f_b_proj, g_a_proj/g_b_proj)
    rank = None if kda.get("use_full_rank_gate") else dim
    return LinearAttnDims(num_key_heads=heads, num_value_heads=heads, key_head_dim=dim, value_head_dim=dim,
                          conv_kernel=kernel, recurrent_state_bytes=4, gate_rank=rank)  # vLLM's kda_state_dtype: float32


# the recurrent state's dtype as configs name it (``mamba_ssm_dtype``), in bytes per element
SSM_STATE_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}


def gated_delta_dims(cfg: dict) -> LinearAttnDims:
    """Gated DeltaNet sizes (Qwen3-Next, Qwen3.5). The recurrent state is kept in the config's
    ``mamba_ssm_dtype`` where it names one: vLLM (Qwen3.5's config hook) and SGLang both follow it,
    and Qwen3.5's configs ask for float32; without it, the model's 16 bits (SGLang's float32 is applied per
    release, ``memory/state_pool.py`` ``engine_state_architecture``)."""
    dtype = cfg.get("mamba_ssm_dtype")
    if dtype is not None and dtype not in SSM_STATE_BYTES:
        raise ConfigImportError(f"mamba_ssm_dtype is {dtype!r}, which the importer does not know",
                                field="mamba_ssm_dtype", allowed=", ".join(SSM_STATE_BYTES))
    return LinearAttnDims(
        num_key_heads=int(req(cfg, "linear_num_key_heads", "linear attention")),
        num_value_heads=int(req(cfg, "linear_num_value_heads", "linear attention")),
        key_head_dim=int(req(cfg, "linear_key_head_dim", "linear attention")),
        value_head_dim=int(req(cfg, "linear_value_head_dim", "linear attention")),
        conv_kernel=int(cfg.get("linear_conv_kernel_dim", 4)),
        recurrent_state_bytes=SSM_STATE_BYTES[dtype] if dtype else 2,
        config_state_bytes=SSM_STATE_BYTES[dtype] if dtype else None,
    )


def own_indexer_share(cfg: dict, n_layers: int) -> float:
    """GLM-5.2's ``indexer_types``: "full" layers run their own indexer, "shared" ones reuse it."""
    types = cfg.get("indexer_types")
    if types is None:
        return 1.0
    if (not isinstance(types, list) or len(types) != n_layers or not all(t in ("full", "shared") for t in types)
            or "full" not in types):
        raise ConfigImportError(f"indexer_types must list 'full' or 'shared' for each of the {n_layers} layers, "
                                "at least one 'full'", field="indexer_types", allowed="full, shared")
    return types.count("full") / n_layers


def _whole(value: Any, least: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and least <= value <= 10**12


def _positive(cfg: dict, key: str, where: str) -> int:
    value = req(cfg, key, where)
    if not _whole(value, 1):
        raise ConfigImportError(f"config.json {key} is {value!r}, not a whole number of at least 1", field=key,
                                allowed="an integer of at least 1")
    return value


def _flags(values: Any, n_layers: int) -> bool:
    """A list of 0/1 flags, one per layer."""
    return isinstance(values, list) and len(values) == n_layers and all(v in (0, 1) and not isinstance(v, bool) for v in values)


def _block(cfg: dict, key: str) -> dict:
    value = cfg[key]
    if not isinstance(value, dict):
        raise ConfigImportError(f"config.json {key} must be an object, not {type(value).__name__}", field=key,
                                allowed=f"{key} as a JSON object of settings")
    return value


# Model types whose config class has no key for the multi-token-prediction layers its checkpoints ship
# (``mtp.*`` tensors), with the count the engines build from them when none is stated:
# - qwen3_next: transformers Qwen3NextConfig has no MTP key and Qwen3NextForCausalLM ignores ``^mtp.*``
#   on load; vLLM 0.11.1 qwen3_next_mtp.py builds getattr(config, "num_nextn_predict_layers", 1)
#   full-attention decoder layers, and SGLang 0.5.5 configs/model_config.py sets
#   num_nextn_predict_layers = 1 for the Qwen3NextForCausalLMMTP draft (one layer)
#   https://github.com/huggingface/transformers/blob/main/src/transformers/models/qwen3_next/configuration_qwen3_next.py
#   https://github.com/vllm-project/vllm/blob/v0.11.1/vllm/model_executor/models/qwen3_next_mtp.py
#   https://github.com/sgl-project/sglang/blob/v0.5.5/python/sglang/srt/configs/model_config.py
# (all checked 2026-12-07)
MTP_LAYERS_UNSTATED = {"qwen3_next": 1}
MTP_LAYER_KEYS = ("num_nextn_predict_layers", "mtp_num_hidden_layers")


def mtp_layer_key(cfg: dict) -> str | None:
    """The config key stating the multi-token-prediction layer count (None: the config states none)."""
    return next((k for k in MTP_LAYER_KEYS if cfg.get(k) is not None), None)


def mtp_layer_count(cfg: dict, model_type: str) -> int:
    """The multi-token-prediction layers the checkpoint ships: ``num_nextn_predict_layers`` (DeepSeek
    and others) or ``mtp_num_hidden_layers`` (Qwen3.5), else the count the engines build for a model
    type whose config class states none (``MTP_LAYERS_UNSTATED``), else 0."""
    key = mtp_layer_key(cfg)
    if key is None:
        return MTP_LAYERS_UNSTATED.get(model_type, 0)
    if not _whole(cfg[key], 0):
        raise ConfigImportError(f"config.json {key} must be a whole number of at least 0, not {cfg[key]!r}",
                                field=key, allowed="a whole number of at least 0")
    return int(cfg[key])


def mtp_layer_kinds(cfg: dict, n_layers: int, mtp_layers: int) -> tuple[LayerKind, ...]:
    """The MTP layers' attention where the config states it: DeepSeek-V4's compress_ratios entries past
    the decoder layers (0: window only), or Nemotron-H's MTP block pattern (its token mixers, the MLP
    and MoE blocks left out, for each MTP layer); empty where it does not."""
    for key in ("mtp_hybrid_override_pattern", "mtp_layers_block_type"):
        if mtp_layers and cfg.get(key):
            try:  # the decoder layers' pattern, for one MTP layer
                block = layer_kinds({key.removeprefix("mtp_"): cfg[key]}, 0, "")
            except ConfigImportError as exc:
                raise ConfigImportError(f"{key}: {exc}", field=key, allowed=exc.allowed) from None
            return tuple(k for k in block if k is not LayerKind.MLP) * mtp_layers
    ratios = cfg.get("compress_ratios")
    if not mtp_layers or not isinstance(ratios, list) or len(ratios) < n_layers + mtp_layers:
        return ()
    extra = ratios[n_layers:n_layers + mtp_layers]
    if not all(_whole(r, 0) for r in extra):
        return ()
    kinds = {0: LayerKind.SLIDING, CSA_RATIO: LayerKind.CSA}
    return tuple(kinds.get(r, LayerKind.HCA) for r in extra)


def _compress_ratios(cfg: dict, n_layers: int) -> list[int]:
    """DeepSeek-V4's per-layer compress ratios (entries past the layers are the MTP modules')."""
    ratios = cfg["compress_ratios"]
    if not isinstance(ratios, list) or len(ratios) < n_layers or not all(_whole(r, 0) for r in ratios[:n_layers]):
        raise ConfigImportError(f"compress_ratios must give a whole number of at least 0 for each of the {n_layers} layers",
                                field="compress_ratios", allowed="0 (window only), 4 (CSA) or one larger ratio (HCA)")
    return ratios[:n_layers]


def _kda_layers(cfg: dict, n_layers: int) -> set[int]:
    """Kimi's 1-based ``kda_layers`` (the others are ``full_attn_layers``), each layer listed once."""
    kda = _block(cfg, "linear_attn_config")
    layers, full = kda.get("kda_layers"), kda.get("full_attn_layers", [])
    numbers = (layers or []) + (full or []) if isinstance(layers, list) and isinstance(full, list) else None
    if (numbers is None or not layers or not all(_whole(i, 1) and i <= n_layers for i in numbers)
            or len(set(numbers)) != len(numbers) or (full and len(numbers) != n_layers)):
        raise ConfigImportError(f"linear_attn_config.kda_layers (and full_attn_layers) must list layer numbers 1 to "
                                f"{n_layers}, each once", field="kda_layers", allowed=f"1-based layer numbers 1..{n_layers}")
    return set(layers)


def req_any(cfg: dict, keys: tuple[str, ...], where: str) -> Any:
    value = first(cfg, *keys)
    if value is None:
        raise ConfigImportError(
            f"config.json has none of {', '.join(keys)}, which {where} needs", field=keys[0],
            allowed=f"a config.json stating one of {', '.join(keys)}",
        )
    return value
