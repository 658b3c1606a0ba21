"""A ModelOpt MIXED_PRECISION quantization_config is read module by module (each listed module in its
own quant_algo, what it does not list at 16 bits), and a ModelOpt config the importer cannot count is
refused naming its key. Byte counts worked out by hand from the small config of test_quant_keep:
attention 2 x 4 x 1024 x 1024 = 8,388,608; MLP 2 x 3 x 1024 x 4096 = 25,165,824; embeddings =
lm_head = 1,024,000; norms 5,120."""

from __future__ import annotations

import json

import pytest

from inferplan.catalog.hf_import import architecture_from_config
from inferplan.errors import ConfigImportError
from inferplan.memory.fit_weights import mixed_release_notes
from inferplan.memory.resolve import spec_from_import
from inferplan.memory.weights import weight_bytes

ATTENTION, MLP, TABLE, NORMS = 8_388_608, 25_165_824, 1_024_000, 5_120
SMALL = {
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 1024, "intermediate_size": 4096,
    "num_hidden_layers": 2, "num_attention_heads": 8, "num_key_value_heads": 8, "head_dim": 128,
    "vocab_size": 1000, "max_position_embeddings": 4096, "tie_word_embeddings": False, "torch_dtype": "bfloat16",
}
# attention FP8 in both layers, the MLP NVFP4 in layer 0 only, lm_head NVFP4
LAYERS = {
    **{f"model.layers.{i}.self_attn.{p}_proj": {"quant_algo": "FP8"} for i in range(2) for p in "qkvo"},
    **{f"model.layers.0.mlp.{p}_proj": {"quant_algo": "W4A16_NVFP4", "group_size": 16} for p in ("gate", "up", "down")},
    "lm_head": {"quant_algo": "NVFP4", "group_size": 16},
}
MIXED = {"quant_method": "modelopt", "quant_algo": "MIXED_PRECISION", "quantized_layers": LAYERS, "ignore": ["mtp*"]}
# attention 1 byte; layer 0's MLP and lm_head 4.5 bits; layer 1's MLP, embeddings and norms 2 bytes
MIXED_BYTES = ATTENTION + MLP / 2 * 4.5 / 8 + MLP / 2 * 2 + TABLE * 4.5 / 8 + TABLE * 2 + NORMS * 2


def _config(qc: dict) -> dict:
    return {**SMALL, "quantization_config": qc}


def test_a_mixed_config_counts_each_module_in_its_listed_format(tmp_path, catalog):
    path = tmp_path / "mixed.json"
    path.write_text(json.dumps(_config(MIXED)))
    spec = spec_from_import(str(path), catalog)
    assert spec.native_quantization == "nvfp4"  # the narrowest format listed
    w = weight_bytes(spec, catalog.quantization("nvfp4"))
    assert w.total_bytes == pytest.approx(MIXED_BYTES, rel=1e-9)
    assert any("attention fp8" in a and "not listed at 16 bits" in a for a in w.assumptions)


def test_the_sidecar_spelling_nests_the_mapping_under_quantization():
    nested = {"quant_method": "modelopt", "quantization": {"quant_algo": "MIXED_PRECISION", "quantized_layers": LAYERS}}
    quant = architecture_from_config(_config(nested)).quant
    assert quant.quantization == "nvfp4"
    assert dict(((g, q), s) for g, q, s in quant.layer_formats) == {
        ("attention", "fp8"): 1.0, ("mlp", "nvfp4"): 0.5, ("lm_head", "nvfp4"): 1.0}


def test_nvidias_qwen36_35b_nvfp4_is_nvfp4_experts_and_fp8_attention_not_fp8_throughout():
    config = json.loads(open("tests/data/configs_2026/nvidia__Qwen3.6-35B-A3B-NVFP4.json").read())
    quant = architecture_from_config(config).quant
    assert quant.quantization == "nvfp4"
    assert quant.layer_formats == (("attention", "fp8", 1.0), ("experts", "nvfp4", 1.0), ("lm_head", "nvfp4", 1.0),
                                   ("shared_experts", "nvfp4", 1.0))


def test_modelopt_fp4_without_an_algorithm_is_nvfp4_by_its_name():
    assert architecture_from_config(_config({"quant_method": "modelopt_fp4"})).quant.quantization == "nvfp4"


@pytest.mark.parametrize(("qc", "field"), [
    ({"quant_method": "modelopt", "quant_algo": "MIXED_PRECISION"}, "quantization_config.quantized_layers"),
    ({**MIXED, "quantized_layers": {}}, "quantization_config.quantized_layers"),
    ({**MIXED, "quantized_layers": ["lm_head"]}, "quantization_config.quantized_layers"),
    ({**MIXED, "quantized_layers": {**LAYERS, "lm_head": {"quant_algo": "W4A8_AWQ"}}},
     "quantization_config.quantized_layers.lm_head.quant_algo"),
    ({"quant_method": "modelopt", "quant_algo": "W4A8_AWQ"}, "quantization_config.quant_algo"),
    ({"quant_method": "modelopt"}, "quantization_config.quant_algo"),
], ids=["no mapping", "empty mapping", "a list", "unknown layer algorithm", "unknown algorithm", "no algorithm"])
def test_a_modelopt_config_it_cannot_count_is_refused_naming_the_key(qc, field):
    with pytest.raises(ConfigImportError) as err:
        architecture_from_config(_config(qc))
    assert err.value.field == field
    assert "FP8" in err.value.allowed and "NVFP4" in err.value.allowed


@pytest.mark.parametrize(("algo", "qid"), [("MXFP8", "mxfp8"), ("FP8_PB_WO", "fp8-block"), ("fp8_pb_wo", "fp8-block")])
def test_modelopt_mxfp8_and_per_block_fp8_are_read_alone(algo, qid):
    # vLLM 0.16.0 modelopt.py QUANT_ALGOS accepts both (ModelOpt may write FP8_PB_WO in lower case)
    assert architecture_from_config(_config({"quant_method": "modelopt", "quant_algo": algo})).quant.quantization == qid


def test_modelopt_mxfp8_and_per_block_fp8_are_read_inside_a_mixed_config():
    layers = {**{f"model.layers.{i}.self_attn.{p}_proj": {"quant_algo": "FP8_PB_WO"} for i in range(2) for p in "qkvo"},
              **{f"model.layers.{i}.mlp.{p}_proj": {"quant_algo": "MXFP8"} for i in range(2) for p in ("gate", "up", "down")}}
    quant = architecture_from_config(_config({**MIXED, "quantized_layers": layers})).quant
    assert quant.quantization == "mxfp8"
    assert quant.layer_formats == (("attention", "fp8-block", 1.0), ("mlp", "mxfp8", 1.0))


@pytest.mark.parametrize(("release", "unbuilt"), [("0.25.0", ["fp8-block", "mxfp8"]), ("0.26.0", ["fp8-block"]),
                                                  ("0.34.0", []), (None, [])])
def test_a_release_that_builds_no_module_of_a_listed_format_says_it_runs_unquantized(tmp_path, catalog, release, unbuilt):
    # vLLM's mixed config builds MXFP8 modules from 0.26.0, FP8_PB_WO modules from 0.34.0
    layers = {**{f"model.layers.{i}.self_attn.{p}_proj": {"quant_algo": "FP8_PB_WO"} for i in range(2) for p in "qkvo"},
              **{f"model.layers.{i}.mlp.{p}_proj": {"quant_algo": "MXFP8"} for i in range(2) for p in ("gate", "up", "down")}}
    path = tmp_path / "mixed.json"
    path.write_text(json.dumps(_config({**MIXED, "quantized_layers": layers})))
    spec = spec_from_import(str(path), catalog)
    notes = mixed_release_notes(catalog, spec, catalog.quantization("mxfp8"), "vllm", release)
    assert [n.split(" module")[0].split()[-1] for n in notes] == unbuilt
    assert all("run unquantized there" in n for n in notes)
    assert mixed_release_notes(catalog, spec, catalog.quantization("mxfp8"), "sglang", "0.5.4") == []
