"""Modules a quantized checkpoint leaves unquantized (its quantization_config's ignore list, or a
catalogue checkpoint's ``keeps_unquantized``) are counted at 16 bits. The byte counts below are
worked out by hand from the small config: hidden 1024, 2 layers, 8 heads x 128 (no GQA), MLP 4096,
vocabulary 1000, untied embeddings:
  attention 2 x 4 x 1024 x 1024 = 8,388,608; MLP 2 x 3 x 1024 x 4096 = 25,165,824;
  embeddings = lm_head = 1,024,000; norms 2 x 2 x 1024 + 1024 = 5,120."""

from __future__ import annotations

import json

import pytest
import yaml
from pydantic import ValidationError

from inferplan.catalog.hf_keep import kept_groups
from inferplan.catalog.models import spec_from_card
from inferplan.catalog.keep_schema import KeepsUnquantized
from inferplan.catalog.loader import DATA_DIR, load_files
from inferplan.memory.resolve import spec_from_import
from inferplan.errors import CatalogError
from inferplan.memory.weights import weight_bytes
from inferplan.inputs.deployment import Deployment
from inferplan.memory.fit import fit

ATTENTION, MLP, TABLE, NORMS = 8_388_608, 25_165_824, 1_024_000, 5_120
SMALL = {
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 1024, "intermediate_size": 4096,
    "num_hidden_layers": 2, "num_attention_heads": 8, "num_key_value_heads": 8, "head_dim": 128,
    "vocab_size": 1000, "max_position_embeddings": 4096, "tie_word_embeddings": False, "torch_dtype": "bfloat16",
}
FBGEMM = {"quant_method": "fbgemm_fp8", "activation_scale_ub": 1200.0, "modules_to_not_convert": [
    f"model.layers.{i}.self_attn.{p}_proj" for i in range(2) for p in "qkvo"] + ["lm_head"]}
COMPRESSED = {"quant_method": "compressed-tensors", "ignore": ["lm_head", "re:.*self_attn.*"], "config_groups": {
    "group_0": {"targets": ["Linear"], "weights": {"num_bits": 8, "type": "float", "strategy": "channel"}}}}
MODELOPT = {"quant_method": "modelopt", "quant_algo": "NVFP4", "exclude_modules": ["lm_head", "model.layers.0.mlp*"]}
# attention and lm_head at 2 bytes, MLP at 1, embeddings and norms at 2
FP8_ATTENTION_KEPT = 2 * ATTENTION + MLP + 2 * TABLE + 2 * TABLE + 2 * NORMS  # 46,049,280
# NVFP4 4.5 bits: attention and layer 1's MLP at 4.5/8 bytes, layer 0's MLP and lm_head at 2
NVFP4_FIRST_MLP_KEPT = ATTENTION * 4.5 / 8 + MLP / 2 * 2 + MLP / 2 * 4.5 / 8 + 4 * TABLE + 2 * NORMS  # 41,068,544


def _import(tmp_path, qc: dict, name: str):
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps({**SMALL, "quantization_config": qc}))
    return spec_from_import(str(path))


@pytest.mark.parametrize(("qc", "quant", "expected"), [
    (FBGEMM, "fbgemm-fp8", FP8_ATTENTION_KEPT),
    (COMPRESSED, "fp8", FP8_ATTENTION_KEPT),
    (MODELOPT, "nvfp4", NVFP4_FIRST_MLP_KEPT),
], ids=["fbgemm_fp8 modules_to_not_convert", "compressed-tensors ignore regex", "modelopt exclude_modules per layer"])
def test_an_ignore_list_is_counted_at_16_bits(tmp_path, catalog, qc, quant, expected):
    spec = _import(tmp_path, qc, qc["quant_method"])
    assert spec.native_quantization == quant
    w = weight_bytes(spec, catalog.quantizations.records[quant])
    assert w.total_bytes == pytest.approx(expected, rel=1e-9)
    assert any("kept unquantized" in a for a in w.assumptions)


def test_each_format_spelling_maps_onto_the_counted_groups():
    mxfp4 = kept_groups(("model.layers.*.self_attn", "model.layers.*.mlp.router", "model.embed_tokens", "lm_head"), 36)
    assert dict(mxfp4.shares) == {"attention": 1.0, "router": 1.0, "embeddings": 1.0, "lm_head": 1.0}
    moe = kept_groups(("re:.*mlp.gate$", "model.layers.3.mlp.shared_expert", "model.layers.0.mlp"), 4)
    assert dict(moe.shares) == {"router": 1.0, "shared_experts": 0.25, "mlp": 0.25}
    assert moe.unmapped == ()


def test_an_unmappable_pattern_is_stated_never_dropped(tmp_path, catalog):
    qc = {**FBGEMM, "modules_to_not_convert": ["lm_head", "model.layers.0.foo_bar", "model.layers.1.mlp.experts.7.up_proj"]}
    spec = _import(tmp_path, qc, "odd")
    groups = spec.kept("fbgemm-fp8").groups
    assert groups.unmapped == ("model.layers.0.foo_bar", "model.layers.1.mlp.experts.7.up_proj")
    w = weight_bytes(spec, catalog.quantizations.records["fbgemm-fp8"])
    assert any("model.layers.0.foo_bar" in a and "counted as quantized" in a for a in w.assumptions)
    assert w.total_bytes == pytest.approx(ATTENTION + MLP + 4 * TABLE + 2 * NORMS, rel=1e-9)  # lm_head only kept


def test_nvidias_gemma_4_31b_nvfp4_config_imports_at_its_published_size(catalog):
    spec = spec_from_import("tests/data/configs_2026/nvidia__Gemma-4-31B-IT-NVFP4.json")
    w = weight_bytes(spec, catalog.quantizations.records["nvfp4"])
    # the card's hand count (g4-hf-gemma-4-31b-nvfp4-config) less its vision encoder at 16 bits
    assert w.total_bytes == pytest.approx(32_631_963_232 - 2 * 575_743_536, rel=1e-6)


def test_catalogue_checkpoints_state_what_they_keep(catalog):
    gemma = spec_from_card(catalog, catalog.models.records["gemma-4-31b"])
    assert dict(gemma.kept("nvfp4").groups.shares) == {"attention": 1.0, "lm_head": 1.0}
    with pytest.raises(ValidationError):
        KeepsUnquantized.model_validate({"groups": ["self_attn"], "source": "x"})


def test_metas_405b_fp8_config_imports_near_the_vllm_load(tmp_path, catalog):
    # Meta's FBGEMM build lists every layer's self_attn projections and lm_head in modules_to_not_convert;
    # vLLM loaded it at 57.75 GiB per GPU at TP 8 (vllm-project/vllm issue #6746), all-FP8 would be 47.7
    config = json.loads((DATA_DIR / "hf_configs" / "llama-3.1-405b.json").read_text())
    layers = config["num_hidden_layers"]
    config["quantization_config"] = {"quant_method": "fbgemm_fp8", "modules_to_not_convert": [
        f"model.layers.{i}.self_attn.{p}_proj" for i in range(layers) for p in "qkvo"] + ["lm_head"]}
    path = tmp_path / "Llama-3.1-405B-Instruct-FP8.json"
    path.write_text(json.dumps(config))
    result = fit(Deployment(model=str(path), gpu="h100-sxm", tensor_parallel_size=8, max_model_len=4096), catalog)
    assert result.weights_bytes_per_gpu / 2**30 == pytest.approx(57.75, rel=0.04)


def test_a_kept_group_list_with_an_unknown_source_fails_to_load(tmp_path):
    data = yaml.safe_load((DATA_DIR / "models" / "reference_gemma4.yaml").read_text())
    for card in data["models"]:
        card.pop("ollama_tags", None)  # loaded alone: no Ollama runner, no tags
        for ckpt in card.get("checkpoints", ()):
            if ckpt.get("keeps_unquantized"):
                ckpt["keeps_unquantized"]["source"] = "nowhere"
    bad = tmp_path / "models" / "bad.yaml"
    bad.parent.mkdir()
    bad.write_text(yaml.safe_dump(data))
    with pytest.raises(CatalogError, match="keeps_unquantized: unknown source 'nowhere'"):
        load_files([bad, DATA_DIR / "quantizations.yaml"])
