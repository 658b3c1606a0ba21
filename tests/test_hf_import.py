import json
import struct

import pytest

from inferplan.catalog.architecture import LayerKind
from inferplan.catalog.hf_import import architecture_from_config, import_model, read_config
from inferplan.errors import ConfigImportError
from inferplan.memory.params import count_params

LLAMA = {
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096,
    "intermediate_size": 14336, "num_hidden_layers": 32, "num_attention_heads": 32,
    "num_key_value_heads": 8, "vocab_size": 128256, "max_position_embeddings": 131072,
    "tie_word_embeddings": False, "torch_dtype": "bfloat16",
}


def config(catalog, model_id):
    return read_config(catalog.data_dir / catalog.models.records[model_id].config)


def test_llama_31_8b_parameters_match_the_checkpoint(catalog):
    params = count_params(architecture_from_config(config(catalog, "llama-3.1-8b")))
    assert params.total * 2 == 16_060_522_496  # BF16 model.safetensors.index.json total_size


@pytest.mark.parametrize(
    ("model", "total_b", "active_b", "tol"),
    [
        ("qwen3-32b", 32.8, None, 0.01),
        ("qwen3-235b-a22b", 235.1, 22.0, 0.02),
        ("deepseek-v3", 671.0, 37.0, 0.02),
        ("gpt-oss-120b", 116.8, 5.1, 0.02),
        ("gpt-oss-20b", 20.9, 3.6, 0.02),
        ("mixtral-8x7b", 46.7, 12.9, 0.02),
        ("llama-3.1-405b", 405.9, None, 0.01),
        ("nemotron-nano-9b-v2", 8.89, None, 0.02),
    ],
)
def test_parameter_counts_match_published_totals(catalog, model, total_b, active_b, tol):
    params = count_params(architecture_from_config(config(catalog, model)))
    assert params.total / 1e9 == pytest.approx(total_b, rel=tol)
    if active_b:
        assert params.active / 1e9 == pytest.approx(active_b, rel=0.03)


def test_nemotron_3_super_latent_moe_matches_nvidia_counts(catalog):
    """LatentMoE: 512 experts work at the 1,024-wide latent, behind per-layer h->latent->h
    projections; NVIDIA publishes 120.6B total and 12.7B active (embedding lookup included)."""
    arch = architecture_from_config(config(catalog, "nemotron-3-super"))
    params = count_params(arch)
    assert arch.moe.latent_size == 1024 and arch.moe.shared_intermediate_size == 5376
    assert params.total / 1e9 == pytest.approx(120.6, rel=0.01)
    assert (params.active + params.embedding) / 1e9 == pytest.approx(12.7, rel=0.02)


def test_float32_ssm_cache_doubles_the_mamba_state(catalog):
    from inferplan.memory.kv_cache import state_bytes_per_layer

    arch = architecture_from_config(config(catalog, "nemotron-3-super"))
    m = arch.mamba
    assert m.ssm_state_bytes == 4  # mamba_ssm_cache_dtype: float32
    ssm = m.num_heads * m.head_dim * m.state_size
    conv = (m.num_heads * m.head_dim + 2 * m.n_groups * m.state_size) * (m.conv_kernel - 1)
    assert state_bytes_per_layer(arch, LayerKind.MAMBA) == ssm * 4 + conv * 2


def test_deepseek_v32_counts_its_indexers(catalog):
    """DSA adds a lightning indexer to every MLA layer; with the MTP layer the count matches the
    685.4B parameters a public inventory of the checkpoint's tensors gives (within 0.5 %)."""
    arch = architecture_from_config(config(catalog, "deepseek-v3.2"))
    assert arch.dsa.index_topk == 2048 and arch.dsa.index_n_heads == 64 and arch.dsa.index_head_dim == 128
    params = count_params(arch)
    assert (params.total + params.mtp) / 1e9 == pytest.approx(685.4, rel=0.005)


def test_deepseek_v3_is_mla_with_moe(catalog):
    arch = architecture_from_config(config(catalog, "deepseek-v3"))
    assert arch.layer_kinds == (LayerKind.MLA,) * 61
    assert arch.mla.kv_lora_rank == 512 and arch.mla.qk_rope_head_dim == 64
    assert arch.moe.num_experts == 256 and arch.moe.experts_per_token == 8
    assert arch.moe.moe_layers[:3] == (False, False, False) and all(arch.moe.moe_layers[3:])
    assert arch.quant.quantization == "fp8-block"
    assert arch.mtp_layers == 1


def test_gpt_oss_alternates_sliding_and_full_attention(catalog):
    arch = architecture_from_config(config(catalog, "gpt-oss-120b"))
    assert arch.count(LayerKind.SLIDING) == arch.count(LayerKind.FULL) == 18
    assert arch.sliding_window == 128
    assert arch.quant.quantization == "mxfp4"


def test_gemma3_pattern_is_five_local_to_one_global(catalog):
    arch = architecture_from_config(config(catalog, "gemma-3-27b"))
    assert arch.layer_kinds[:6] == (LayerKind.SLIDING,) * 5 + (LayerKind.FULL,)
    assert arch.sliding_window == 1024
    assert arch.tie_word_embeddings


def test_hybrid_linear_attention_and_mamba(catalog):
    nxt = architecture_from_config(config(catalog, "qwen3-next-80b-a3b"))
    assert nxt.count(LayerKind.LINEAR) == 36 and nxt.count(LayerKind.FULL) == 12
    nem = architecture_from_config(config(catalog, "nemotron-nano-9b-v2"))
    assert nem.count(LayerKind.MAMBA) == 27 and nem.count(LayerKind.FULL) == 4
    assert nem.mamba.num_heads == 128 and nem.mamba.state_size == 128


@pytest.mark.parametrize(
    ("qc", "expected"),
    [
        ({"quant_method": "fp8", "weight_block_size": [128, 128]}, "fp8-block"),
        ({"quant_method": "fp8"}, "fp8"),
        ({"quant_method": "mxfp4"}, "mxfp4"),
        ({"quant_method": "awq", "bits": 4}, "int4-awq"),
        ({"quant_method": "gptq", "bits": 4}, "int4-gptq"),
        ({"quant_method": "modelopt", "quant_algo": "NVFP4"}, "nvfp4"),
        ({"quant_method": "modelopt", "quant_algo": "FP8"}, "fp8"),
        ({"quant_method": "compressed-tensors", "format": "nvfp4-pack-quantized"}, "nvfp4"),
        ({"quant_method": "compressed-tensors", "config_groups": {"g": {"weights": {"num_bits": 8, "type": "float"}}}}, "fp8"),
        ({"quant_method": "compressed-tensors", "config_groups": {"g": {"weights": {"num_bits": 8, "type": "int"}, "input_activations": {"num_bits": 8}}}}, "int8-w8a8"),
        ({"quant_method": "compressed-tensors", "config_groups": {"g": {"weights": {"num_bits": 4, "type": "int"}}}}, "int4-w4a16"),
    ],
)
def test_quantization_config_maps_to_catalogue_ids(qc, expected):
    assert architecture_from_config({**LLAMA, "quantization_config": qc}).quant.quantization == expected


QUARK_MX = {"dtype": "fp4", "qscheme": "per_group", "group_size": 32, "is_dynamic": False}


@pytest.mark.parametrize(
    ("global_cfg", "layers", "expected"),
    [
        ({"weight": QUARK_MX, "input_tensors": {**QUARK_MX, "is_dynamic": True}}, {}, "mxfp4-w4a4"),
        ({"weight": QUARK_MX, "input_tensors": None}, {}, "mxfp4"),
        ({"weight": {"dtype": "fp8_e4m3"}, "input_tensors": {"dtype": "fp8_e4m3"}}, {}, "fp8"),
        ({}, {"*.experts.*": {"weight": QUARK_MX, "input_tensors": {"dtype": "fp8_e4m3"}}}, "mxfp4"),
    ],
)
def test_amd_quark_configs_map_by_weight_and_input_dtype(global_cfg, layers, expected):
    qc = {"quant_method": "quark", "global_quant_config": global_cfg, "layer_quant_config": layers,
          "exclude": ["lm_head"], "kv_cache_quant_config": {"*k_proj": {"output_tensors": {"dtype": "fp8_e4m3"}}}}
    quant = architecture_from_config({**LLAMA, "quantization_config": qc}).quant
    assert (quant.quantization, quant.kv_cache_dtype, quant.unquantized_modules) == (expected, "fp8", ("lm_head",))


def test_an_unknown_quark_dtype_is_named():
    qc = {"quant_method": "quark", "global_quant_config": {"weight": {"dtype": "fp6_e3m2"}, "input_tensors": None}}
    with pytest.raises(ConfigImportError, match="fp6_e3m2") as err:
        architecture_from_config({**LLAMA, "quantization_config": qc})
    assert err.value.field == "quantization_config.global_quant_config.weight.dtype"


def test_unsupported_quantization_is_named():
    with pytest.raises(ConfigImportError, match="quant_method 'bitsandbytes'") as err:
        architecture_from_config({**LLAMA, "quantization_config": {"quant_method": "bitsandbytes"}})
    assert err.value.field == "quantization_config.quant_method"


def test_missing_required_key_is_named():
    broken = {k: v for k, v in LLAMA.items() if k != "hidden_size"}
    with pytest.raises(ConfigImportError, match="hidden_size"):
        architecture_from_config(broken)


def test_mla_without_rope_dim_names_it():
    with pytest.raises(ConfigImportError, match="qk_rope_head_dim"):
        architecture_from_config({**LLAMA, "kv_lora_rank": 512, "q_lora_rank": None})


def test_unknown_layer_type_lists_the_allowed():
    with pytest.raises(ConfigImportError, match="layer_types") as err:
        architecture_from_config({**LLAMA, "num_hidden_layers": 1, "layer_types": ["cross_attention"]})
    assert "full_attention" in err.value.allowed


def test_malformed_json_is_a_clear_error(tmp_path):
    bad = tmp_path / "config.json"
    bad.write_text("{not json")
    with pytest.raises(ConfigImportError, match="not valid JSON"):
        import_model(str(bad))


def _write_safetensors(path, tensors):
    header, offset = {}, 0
    for name, (dtype, shape, nbytes) in tensors.items():
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + nbytes]}
        offset += nbytes
    blob = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(blob)) + blob + b"\0" * offset)


def test_model_folder_reads_safetensors_headers(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps(LLAMA))
    _write_safetensors(tmp_path / "model-00001.safetensors", {"a": ("BF16", [4, 4], 32), "b": ("BF16", [8], 16)})
    _write_safetensors(tmp_path / "model-00002.safetensors", {"c": ("F32", [2], 8)})
    imported = import_model(str(tmp_path))
    assert imported.checkpoint_bytes == 56
    assert imported.checkpoint_source == "safetensors headers"


def test_model_folder_prefers_the_index_total_size(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps(LLAMA))
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps({"metadata": {"total_size": 16060522496}, "weight_map": {}}))
    assert import_model(str(tmp_path)).checkpoint_bytes == 16060522496


def test_repo_id_is_found_in_the_local_hf_cache(tmp_path, monkeypatch):
    snap = tmp_path / "hub" / "models--acme--tiny" / "snapshots" / "abc123"
    snap.mkdir(parents=True)
    (snap / "config.json").write_text(json.dumps(LLAMA))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    imported = import_model("acme/tiny")
    assert imported.architecture.hidden_size == 4096


def test_unknown_location_says_what_was_expected():
    with pytest.raises(ConfigImportError, match="local Hugging Face cache"):
        import_model("nobody/nothing-here")


def test_modelopt_sidecar_sets_quantization_and_fp8_kv(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps(LLAMA))
    (tmp_path / "hf_quant_config.json").write_text(json.dumps(
        {"producer": {"name": "modelopt"}, "quantization": {"quant_algo": "NVFP4", "kv_cache_quant_algo": "FP8"}}))
    quant = import_model(str(tmp_path)).architecture.quant
    assert quant.quantization == "nvfp4" and quant.kv_cache_dtype == "fp8"


def test_compressed_tensors_kv_scheme_is_read():
    qc = {"quant_method": "compressed-tensors", "kv_cache_scheme": {"num_bits": 8, "type": "float"},
          "config_groups": {"g": {"weights": {"num_bits": 8, "type": "float"}}}}
    assert architecture_from_config({**LLAMA, "quantization_config": qc}).quant.kv_cache_dtype == "fp8"


@pytest.mark.parametrize("key, value", [
    ("hidden_size", float("nan")), ("hidden_size", -4096), ("hidden_size", 4096.5), ("num_attention_heads", 0),
    ("num_key_value_heads", 0), ("num_hidden_layers", True), ("vocab_size", -1), ("intermediate_size", float("inf")),
])
def test_a_malformed_config_names_its_key_instead_of_crashing(key, value):
    cfg = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 32,
           "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 128256, "intermediate_size": 14336}
    with pytest.raises(ConfigImportError) as err:
        architecture_from_config({**cfg, key: value})
    assert err.value.field == key


def test_impossible_head_and_expert_counts_are_refused():
    cfg = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 32,
           "num_attention_heads": 32, "num_key_value_heads": 64, "vocab_size": 128256, "intermediate_size": 14336}
    with pytest.raises(ConfigImportError, match="key/value heads"):
        architecture_from_config(cfg)
    moe = {**cfg, "architectures": ["MixtralForCausalLM"], "model_type": "mixtral", "num_key_value_heads": 8,
           "num_local_experts": 8, "num_experts_per_tok": 16}
    with pytest.raises(ConfigImportError) as err:
        architecture_from_config(moe)
    assert err.value.field == "num_experts_per_tok"


def test_a_yarn_rope_scaling_opens_a_longer_context(catalog, tmp_path):
    from inferplan.memory.resolve import spec_from_import

    cfg = config(catalog, "qwen3-8b")
    assert architecture_from_config(cfg).rope_context_tokens == 0  # as shipped: no rope scaling
    for key, kind in (("rope_scaling", "type"), ("rope_parameters", "rope_type")):  # older and newer spellings
        scaled = {**cfg, key: {kind: "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}}
        (tmp_path / "config.json").write_text(json.dumps(scaled))
        assert spec_from_import(str(tmp_path / "config.json")).context_tokens == 131072
    linear = {**cfg, "rope_scaling": {"type": "linear", "factor": 8.0}}
    assert architecture_from_config(linear).rope_context_tokens == 0  # only YaRN is read


def test_seed_2026_lines_read_from_their_own_configs(catalog):
    """Seed 001's 2026 lines: layer kinds and sizes as their config.json states them, parameter
    counts against counts from each checkpoint's tensor shapes or cards (see seed_lines.yaml)."""
    glm = architecture_from_config(config(catalog, "glm-5.2"))
    assert glm.count(LayerKind.MLA) == 78 and glm.dsa.own_indexer_share == pytest.approx(21 / 78)
    # 743.4B without the MTP layer; with it, 753.3B, the card's 753B
    assert (count_params(glm).total + count_params(glm).mtp) / 1e9 == pytest.approx(753.3, rel=0.002)
    k3 = architecture_from_config(config(catalog, "kimi-k3"))
    assert k3.count(LayerKind.LINEAR) == 69 and k3.count(LayerKind.MLA) == 24
    assert k3.layer_kinds[3] is LayerKind.MLA and k3.layer_kinds[92] is LayerKind.MLA  # 1-based 4 and 93
    assert k3.linear.recurrent_state_bytes == 4 and k3.moe.latent_size == 3584 and k3.moe.experts_per_token == 16
    # a public verifier of the checkpoint counts 2,779.97B; the card gives 104B active (full-rank output gate on
    # the KDA layers, counted as Gated DeltaNet's z; an output gate on the MLA layers, mla_use_output_gate)
    assert count_params(k3).total / 1e9 == pytest.approx(2779.97, rel=0.001)
    assert count_params(k3).active / 1e9 == pytest.approx(104.1, rel=0.005)
    v4 = architecture_from_config(config(catalog, "deepseek-v4-flash"))
    assert (v4.count(LayerKind.SLIDING), v4.count(LayerKind.CSA), v4.count(LayerKind.HCA)) == (2, 21, 20)
    assert v4.quant.quantization == "mixed-fp4-fp8"
    assert count_params(v4).total / 1e9 == pytest.approx(284.3, rel=0.002)  # compressor weights not counted
    assert count_params(v4).active / 1e9 == pytest.approx(13.3, rel=0.03)
    pro = architecture_from_config(config(catalog, "deepseek-v4-pro"))
    assert (pro.count(LayerKind.CSA), pro.count(LayerKind.HCA), pro.compressed.index_topk) == (30, 31, 1024)
    assert pro.quant.quantization == "mixed-fp4-fp8"  # its config omits expert_dtype; V4 ships FP4 experts
    m3 = architecture_from_config(config(catalog, "minimax-m3"))
    assert m3.count(LayerKind.SPARSE) == 57 and m3.dsa.index_topk == 2048 and m3.has_vision_tower
    assert m3.intermediate_size == 12288 and m3.moe.expert_intermediate_size == 3072
    assert m3.moe.moe_layers == (False,) * 3 + (True,) * 57


def test_mistral_params_json_reads_as_vllm_maps_it(catalog, tmp_path):
    """Mistral Large 3 ships params.json, not config.json: dim, hidden_dim, the moe block and yarn
    are renamed as vLLM does; the FP8 repo's block-scaled weights are fp8-block."""
    arch = architecture_from_config(config(catalog, "mistral-large-3"))
    assert arch.hidden_size == 7168 and arch.count(LayerKind.MLA) == 61 and arch.intermediate_size == 16384
    assert arch.moe.num_experts == 128 and arch.moe.experts_per_token == 4 and arch.moe.moe_layers[:4] == (False,) * 3 + (True,)
    assert arch.quant.quantization == "fp8-block" and arch.rope_context_tokens == 36 * 8192
    assert count_params(arch).total / 1e9 == pytest.approx(673.4, rel=0.001)
    (tmp_path / "params.json").write_text(json.dumps(config(catalog, "mistral-large-3")))
    assert import_model(str(tmp_path)).architecture == arch  # a folder with params.json only


@pytest.mark.parametrize(("model", "edit", "field"), [
    ("nemotron-3-ultra", {"layers_block_type": []}, "layers_block_type"),
    ("nemotron-3-ultra", {"layers_block_type": [["mamba"]] * 108}, "layers_block_type"),
    ("deepseek-v4-flash", {"compress_ratios": 4}, "compress_ratios"),
    ("deepseek-v4-flash", {"compress_ratios": []}, "compress_ratios"),
    ("deepseek-v4-flash", {"compress_ratios": [0, 4]}, "compress_ratios"),
    ("deepseek-v4-flash", {"index_topk": 0}, "index_topk"),
    ("deepseek-v4-flash", {"sliding_window": -128}, "compress_ratios"),
    ("kimi-k3", {"linear_attn_config": [1, 2]}, "linear_attn_config"),
    ("kimi-k3", {"linear_attn_config": {"num_heads": 96, "head_dim": 128}}, "kda_layers"),
    ("kimi-k3", {"linear_attn_config": {"kda_layers": [0, 1], "num_heads": 96, "head_dim": 128}}, "kda_layers"),
    ("kimi-k3", {"linear_attn_config": {"kda_layers": [1, 500], "num_heads": 96, "head_dim": 128}}, "kda_layers"),
    ("minimax-m3", {"sparse_attention_config": [1]}, "sparse_attention_config"),
    ("minimax-m3", {"sparse_attention_config": {"use_sparse_attention": True, "sparse_attention_freq": [1] * 60,
                                                "sparse_index_dim": -128, "sparse_num_index_heads": 4,
                                                "sparse_topk_blocks": 16, "sparse_block_size": 128}}, "sparse_index_dim"),
    ("glm-5.2", {"indexer_types": ["shared"] * 78}, "indexer_types"),
    ("mistral-large-3", {"moe": [1, 2]}, "moe"),
    ("qwen3.5-397b-a17b", {"mamba_ssm_dtype": "float8"}, "mamba_ssm_dtype"),
])
def test_malformed_new_config_keys_name_the_key(catalog, model, edit, field):
    raw = config(catalog, model)
    nested = "text_config" in raw and not set(edit) & set(raw)
    bad = {**raw, "text_config": {**raw["text_config"], **edit}} if nested else {**raw, **edit}
    with pytest.raises(ConfigImportError) as exc:
        architecture_from_config(bad)
    assert exc.value.field == field, str(exc.value)


def test_kda_heads_are_not_the_attention_heads(catalog):
    raw = config(catalog, "kimi-k3")
    kda = {**raw["text_config"]["linear_attn_config"], "num_heads": 64}
    arch = architecture_from_config({**raw, "text_config": {**raw["text_config"], "linear_attn_config": kda}})
    assert arch.num_attention_heads == 96 and arch.linear.num_value_heads == 64


def test_new_layer_lists_are_checked(catalog):
    bad = config(catalog, "minimax-m3")
    bad["text_config"] = {**bad["text_config"], "moe_layer_freq": [1, 0]}
    with pytest.raises(ConfigImportError) as exc:
        architecture_from_config(bad)
    assert exc.value.field == "moe_layer_freq"
    v4 = {**config(catalog, "deepseek-v4-flash"), "compress_ratios": [0, 4, 16, 128] * 11}
    with pytest.raises(ConfigImportError) as exc:
        architecture_from_config(v4)
    assert exc.value.field == "compress_ratios"
    glm = {**config(catalog, "glm-5.2"), "indexer_types": ["full"] * 3}
    with pytest.raises(ConfigImportError) as exc:
        architecture_from_config(glm)
    assert exc.value.field == "indexer_types"


def test_gated_deltanet_state_follows_the_configs_mamba_ssm_dtype(catalog):
    # Qwen3.5's config asks for a float32 recurrent state (vLLM's Qwen3.5 config hook and SGLang
    # follow it): 45 layers x 64 value heads x 128 x 128 x 4 bytes per sequence; Qwen3-Next's
    # config names none, so its state is the model's 16 bits
    from inferplan.memory.kv_cache import state_bytes_per_layer

    q35 = architecture_from_config(config(catalog, "qwen3.5-397b-a17b"))
    assert q35.linear.recurrent_state_bytes == 4
    state = sum(state_bytes_per_layer(q35, k, 1) for k in q35.layer_kinds)
    conv = 45 * 3 * (2 * 16 * 128 + 64 * 128) * 2  # (q, k, v) channels x (kernel 4 - 1) positions, 16 bits
    assert state == 45 * 64 * 128 * 128 * 4 + conv
    assert architecture_from_config(config(catalog, "qwen3-next-80b-a3b")).linear.recurrent_state_bytes == 2
    raw = config(catalog, "qwen3.5-397b-a17b")
    half = {**raw, "text_config": {**raw["text_config"], "mamba_ssm_dtype": "bfloat16"}}
    assert architecture_from_config(half).linear.recurrent_state_bytes == 2


def test_hyper_connections_keep_the_configs_residual_streams(catalog):
    # DeepSeek-V4's mHC: "hc_mult": 4 parallel residual streams; models without the key keep one
    assert architecture_from_config(config(catalog, "deepseek-v4-flash")).residual_streams == 4
    assert architecture_from_config(config(catalog, "deepseek-v4-pro")).residual_streams == 4
    assert architecture_from_config(LLAMA).residual_streams == 1
    assert architecture_from_config({**LLAMA, "hc_mult": None}).residual_streams == 1  # null: not stated
    # GLM-5-next style: hyper-connections switched off beside a stated hc_mult
    assert architecture_from_config({**LLAMA, "hc_mult": 4, "mhc": False}).residual_streams == 1
    assert architecture_from_config({**LLAMA, "hc_mult": 4, "mhc": True}).residual_streams == 4


@pytest.mark.parametrize("value", [0, -4, 2.5, "4", True])
def test_a_malformed_hc_mult_names_the_key(value):
    with pytest.raises(ConfigImportError) as err:
        architecture_from_config({**LLAMA, "hc_mult": value})
    assert err.value.field == "hc_mult" and "at least 1" in err.value.allowed
