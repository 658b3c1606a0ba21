"""Every real config.json in tests/data/configs_2026 either imports (its KV cache per token equal to
the hand computation EXPECTED.yaml spells out, its parameter count within the tolerance of the
published count EXPECTED.yaml cites, its weight bytes consistent with that count) or is refused
naming the key SOURCES.yaml expects. And a config that states an expert or attention key the
importer does not know is refused naming it, never planned as a dense model."""

from __future__ import annotations

import ast
import json
import operator
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
EXPECTED = {e["file"]: e for e in yaml.safe_load((HERE / "EXPECTED.yaml").read_text())["expected"]}
IMPORTED = [e for e in ENTRIES if e.get("imports")]
_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv}


def arithmetic(text: str) -> float:
    """The value of a hand computation written as numbers, + - * / and parentheses (nothing else)."""
    def value(node: ast.AST) -> float:
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
            return node.value
        if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
            return _OPS[type(node.op)](value(node.left), value(node.right))
        raise ValueError(f"not plain arithmetic: {text!r}")
    return value(ast.parse(str(text), mode="eval").body)


def test_the_matrix_holds_every_file_once_and_at_least_sixty():
    files = [e["file"] for e in ENTRIES]
    assert len(files) == len(set(files))
    assert sorted(files) == sorted(p.name for p in HERE.glob("*.json"))
    assert len(files) >= 60


def test_every_imported_config_has_its_expected_values():
    assert sorted(EXPECTED) == sorted(e["file"] for e in IMPORTED)


@pytest.mark.parametrize("entry", IMPORTED, ids=lambda e: e["file"])
def test_config_imports_with_the_kv_cache_worked_out_by_hand_and_consistent_weights(entry, catalog):
    expected = EXPECTED[entry["file"]]
    path = HERE / entry["file"]
    arch = architecture_from_config(json.loads(path.read_bytes()))
    layout = kv_layout(arch, kv_bits=16)
    assert layout.growing_bytes_per_token == pytest.approx(arithmetic(expected["kv_growing_bytes_per_token"]), abs=0.01)
    assert layout.window_bytes_per_token == pytest.approx(arithmetic(expected.get("kv_window_bytes_per_token", 0)), abs=0.01)
    assert layout.window_tokens == expected.get("window_tokens")
    params = count_params(arch)
    spec = spec_from_import(str(path))
    weights = weight_bytes(spec, catalog.quantization(spec.native_quantization))
    bits = catalog.quantization(spec.native_quantization).bits_per_weight.value
    # at least the count times the format's bits, at most 16 bits a weight (what a format keeps
    # unquantized stays at 16)
    assert params.total * bits / 8 * 0.99 <= weights.total_bytes <= params.total * 16 / 8 * 1.01
    if "weight_bytes" in expected:  # a format per module: the bytes worked out by hand from its listing
        assert weights.total_bytes == pytest.approx(arithmetic(expected["weight_bytes"]), rel=expected["weight_rel_tol"])


COUNTS = {"total": lambda p: p.total, "total_with_mtp": lambda p: p.total + p.mtp,
          "non_embedding": lambda p: p.total - p.embedding}


@pytest.mark.parametrize("entry", [e for e in IMPORTED if EXPECTED[e["file"]]["total_params"]], ids=lambda e: e["file"])
def test_config_imports_with_its_published_size(entry, catalog):
    published = EXPECTED[entry["file"]]["total_params"]
    if "source" in published:
        assert published["source"] in catalog.sources
    else:
        assert published["url"].startswith("https://") and published["title"] and published["checked"]
    assert 0 < published["rel_tol"] <= 0.02
    arch = architecture_from_config(json.loads((HERE / entry["file"]).read_bytes()))
    assert COUNTS[published.get("counts", "total")](count_params(arch)) == pytest.approx(published["value"], rel=published["rel_tol"])


def test_most_imported_configs_have_a_published_size():
    sized = [f for f, e in EXPECTED.items() if e["total_params"]]
    assert len(sized) >= 59


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
    assert {e["refused"] for e in refused} >= {"swa_num_attention_heads", "block_configs", "share_expert_dim"}
