"""Every real config.json in tests/data/configs_2026 either imports (its parameter count within 2 % of
the published total where one is published, its weight bytes consistent with that count, and a KV
cache per token for its attention layers) or is refused naming the key SOURCES.yaml expects. And a
config that states an expert or attention key the importer does not know is refused naming it,
never planned as a dense model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from inferplan.catalog.architecture import LayerKind
from inferplan.catalog.hf_import import architecture_from_config
from inferplan.errors import ConfigImportError
from inferplan.memory.kv_cache import kv_layout
from inferplan.memory.params import count_params
from inferplan.memory.resolve import spec_from_import
from inferplan.memory.weights import weight_bytes

HERE = Path(__file__).parent / "data" / "configs_2026"
ENTRIES = yaml.safe_load((HERE / "SOURCES.yaml").read_text())["configs"]
ATTENTION = {LayerKind.FULL, LayerKind.SLIDING, LayerKind.MLA, LayerKind.SPARSE, LayerKind.CSA, LayerKind.HCA}


def test_the_matrix_holds_every_file_once_and_at_least_sixty():
    files = [e["file"] for e in ENTRIES]
    assert len(files) == len(set(files))
    assert sorted(files) == sorted(p.name for p in HERE.glob("*.json"))
    assert len(files) >= 60


@pytest.mark.parametrize("entry", [e for e in ENTRIES if e.get("imports")], ids=lambda e: e["file"])
def test_config_imports_with_its_published_size(entry, catalog):
    path = HERE / entry["file"]
    arch = architecture_from_config(json.loads(path.read_bytes()))
    params = count_params(arch)
    if "total_params" in entry:
        assert entry["total_params_source"] in catalog.sources
        assert params.total == pytest.approx(entry["total_params"], rel=0.02)
    spec = spec_from_import(str(path))
    weights = weight_bytes(spec, catalog.quantization(spec.native_quantization))
    bits = catalog.quantization(spec.native_quantization).bits_per_weight.value
    # at least the count times the format's bits, at most 16 bits a weight (what a format keeps
    # unquantized stays at 16)
    assert params.total * bits / 8 * 0.99 <= weights.total_bytes <= params.total * 16 / 8 * 1.01
    attention_layers = [k for k in arch.layer_kinds if k in ATTENTION]
    if attention_layers:
        assert kv_layout(arch, kv_bits=16).bytes_per_token > 0


@pytest.mark.parametrize("entry", [e for e in ENTRIES if e.get("refused")], ids=lambda e: e["file"])
def test_config_is_refused_naming_the_key(entry):
    with pytest.raises(ConfigImportError) as err:
        architecture_from_config(json.loads((HERE / entry["file"]).read_bytes()))
    assert err.value.field == entry["refused"]
    assert entry["refused"] in str(err.value)


DENSE = HERE / "meta-llama__Llama-3.1-8B-Instruct.json"
UNKNOWN_KEYS = [
    ("top_k_experts_per_group", 8), ("num_experts_total", 64), ("num_experts_per_tok_per_group", 2),
    ("moe_num_experts", 16), ("moe_topk_groups", 2), ("router_top_k", 4), ("n_routed_expert", 8),
    ("local_head_dim", 128), ("num_local_key_value_heads", 2), ("attention_q_eq_k", True),
    ("kv_shared_layer_map", [0, 1]), ("attention_chunk_size", 8192), ("attn_type", "chunked"),
    ("sliding_window_pattern_v2", [1, 0]), ("block_configs", [{"attention": {"no_op": True}}]),
]


@pytest.mark.parametrize(("key", "value"), UNKNOWN_KEYS)
def test_an_unknown_expert_or_attention_key_is_refused_naming_it(key, value):
    config = {**json.loads(DENSE.read_bytes()), key: value}
    with pytest.raises(ConfigImportError) as err:
        architecture_from_config(config)
    assert err.value.field == key
    assert repr(key) in str(err.value)


def test_an_unknown_key_inside_text_config_is_refused_too():
    text = json.loads(DENSE.read_bytes())
    wrapper = {"architectures": ["Gemma4ForConditionalGeneration"], "text_config": {**text, "router_top_k": 8}}
    with pytest.raises(ConfigImportError) as err:
        architecture_from_config(wrapper)
    assert err.value.field == "router_top_k"


def test_a_router_key_read_without_experts_is_refused_not_planned_dense():
    wrapper = {"architectures": ["Gemma4ForConditionalGeneration"],
               "text_config": {**json.loads(DENSE.read_bytes()), "top_k_experts": 8}}
    with pytest.raises(ConfigImportError) as err:
        architecture_from_config(wrapper)
    assert err.value.field == "num_experts"


def test_the_dense_config_itself_imports_dense():
    arch = architecture_from_config(json.loads(DENSE.read_bytes()))
    assert arch.moe is None


def test_minimax_attn_type_list_imports_full_attention_and_refuses_lightning_layers():
    m27 = json.loads((HERE / "MiniMaxAI__MiniMax-M2.7.json").read_bytes())
    assert set(architecture_from_config(m27).layer_kinds) == {LayerKind.FULL}
    lightning = {**m27, "attn_type_list": [0] + m27["attn_type_list"][1:]}
    with pytest.raises(ConfigImportError) as err:
        architecture_from_config(lightning)
    assert err.value.field == "attn_type_list"


def test_counts_of_the_matrix():
    imported = [e for e in ENTRIES if e.get("imports")]
    refused = [e for e in ENTRIES if e.get("refused")]
    assert len(imported) + len(refused) == len(ENTRIES)
    assert {e["refused"] for e in refused} >= {"attention_chunk_size", "block_configs"}
