"""Gemma 4 (26B-A4B MoE and 31B dense) imports with its full-attention layers' own head width and
key/value heads, keys that double as values on those layers (no value projection, yet K and V both
cached: transformers' Gemma4TextAttention and vLLM's Gemma4Attention keep a normed, rotated K and a
normed V), and the dense MLP that runs beside the experts. Every expected number is worked out here
by hand from the config values."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from inferplan.catalog.architecture import LayerKind
from inferplan.catalog.hf_import import architecture_from_config
from inferplan.errors import ConfigImportError
from inferplan.memory.kv_cache import kv_layout
from inferplan.memory.params import count_params

HERE = Path(__file__).parent / "data" / "configs_2026"
MOE = json.loads((HERE / "google__gemma-4-26B-A4B.json").read_bytes())
DENSE = json.loads((HERE / "nvidia__Gemma-4-31B-IT-NVFP4.json").read_bytes())
BF16_BYTES = 2


def _hand(cfg: dict) -> dict:
    """Parameters and BF16 KV bytes per token of a Gemma 4 text config, from its values."""
    t = cfg["text_config"]
    h, heads, d, kv = t["hidden_size"], t["num_attention_heads"], t["head_dim"], t["num_key_value_heads"]
    gd, gkv = t["global_head_dim"], t["num_global_key_value_heads"]
    kinds = t["layer_types"]
    n_full, n_sliding = kinds.count("full_attention"), kinds.count("sliding_attention")
    sliding_attn = h * heads * d + 2 * h * kv * d + heads * d * h  # q, k, v, o
    full_attn = h * heads * gd + h * gkv * gd + heads * gd * h  # q, k (serving as v), o
    return {
        "attention": n_sliding * sliding_attn + n_full * full_attn,
        "window_kv": n_sliding * 2 * kv * d * BF16_BYTES,  # K and V, capped at the window
        "growing_kv": n_full * 2 * gkv * gd * BF16_BYTES,  # K and V, both cached though one projection
        "layers": len(kinds),
    }


@pytest.mark.parametrize("cfg", [MOE, DENSE], ids=["26B-A4B", "31B"])
def test_attention_weights_and_kv_per_token_match_the_hand_count(cfg):
    arch = architecture_from_config(cfg)
    hand = _hand(cfg)
    assert count_params(arch).attention == hand["attention"]
    layout = kv_layout(arch, kv_bits=16)
    assert layout.window_bytes_per_token == hand["window_kv"]
    assert layout.growing_bytes_per_token == hand["growing_kv"]
    assert layout.window_tokens == cfg["text_config"]["sliding_window"]


def test_the_hand_counted_kv_per_token_is_220_and_880_kib():
    # 26B-A4B: 25 sliding layers x 2 x 8 x 256 x 2 B + 5 full x 2 x 2 x 512 x 2 B = 225,280 B
    # 31B: 50 x 2 x 16 x 256 x 2 + 10 x 2 x 4 x 512 x 2 = 901,120 B
    assert kv_layout(architecture_from_config(MOE), kv_bits=16).bytes_per_token == 220 * 1024
    assert kv_layout(architecture_from_config(DENSE), kv_bits=16).bytes_per_token == 880 * 1024


def test_the_full_attention_layers_keep_their_own_shape():
    arch = architecture_from_config(MOE)
    assert (arch.layer_head_dim(LayerKind.FULL), arch.layer_kv_heads(LayerKind.FULL)) == (512, 2)
    assert (arch.layer_head_dim(LayerKind.SLIDING), arch.layer_kv_heads(LayerKind.SLIDING)) == (256, 8)
    assert not arch.layer_value_projection(LayerKind.FULL)
    assert arch.layer_value_projection(LayerKind.SLIDING)


def test_without_k_eq_v_the_full_layers_have_a_value_projection_and_the_sliding_kv_heads():
    text = {**DENSE["text_config"], "attention_k_eq_v": False}
    arch = architecture_from_config({**DENSE, "text_config": text})
    assert arch.layer_value_projection(LayerKind.FULL)
    assert arch.layer_kv_heads(LayerKind.FULL) == 16  # num_global_key_value_heads applies to K = V layers only
    assert arch.layer_head_dim(LayerKind.FULL) == 512


def test_the_moe_counts_the_dense_mlp_beside_the_experts():
    t = MOE["text_config"]
    arch = architecture_from_config(MOE)
    params = count_params(arch)
    h, layers = t["hidden_size"], t["num_hidden_layers"]
    assert arch.moe is not None and arch.moe.experts_per_token == t["top_k_experts"] == 8
    assert params.shared_experts == layers * 3 * h * t["intermediate_size"]  # gate, up, down
    assert params.experts == layers * t["num_experts"] * 3 * h * t["moe_intermediate_size"]
    assert params.experts_active == layers * t["top_k_experts"] * 3 * h * t["moe_intermediate_size"]
    assert params.router == layers * h * t["num_experts"]


# Google's Gemma 4 model card (as quoted by Fireworks and in NVIDIA's card): 25.2B total with 3.8B
# active, and 30.7B; the vision encoder (about 0.55B) is not in these counts, as here
@pytest.mark.parametrize(("cfg", "total"), [(MOE, 25.2e9), (DENSE, 30.7e9)], ids=["26B-A4B", "31B"])
def test_the_total_is_within_one_percent_of_the_published_one(cfg, total):
    assert count_params(architecture_from_config(cfg)).total == pytest.approx(total, rel=0.01)


def test_the_active_count_with_the_tied_embedding_is_the_published_3_8b():
    params = count_params(architecture_from_config(MOE))
    # the published figure counts the embedding table once (tied: it is also the lm_head every token reads)
    assert params.active + params.embedding == pytest.approx(3.8e9, rel=0.01)


def test_the_dense_31b_has_no_experts():
    assert architecture_from_config(DENSE).moe is None


@pytest.mark.parametrize(("key", "value"), [("num_kv_shared_layers", 20), ("hidden_size_per_layer_input", 256)])
def test_kv_sharing_and_per_layer_embeddings_are_refused_naming_the_key(key, value):
    text = {**MOE["text_config"], key: value}
    with pytest.raises(ConfigImportError) as err:
        architecture_from_config({**MOE, "text_config": text})
    assert err.value.field == key


def test_k_eq_v_without_its_head_count_is_refused_naming_it():
    text = {k: v for k, v in DENSE["text_config"].items() if k != "num_global_key_value_heads"}
    with pytest.raises(ConfigImportError) as err:
        architecture_from_config({**DENSE, "text_config": text})
    assert err.value.field == "num_global_key_value_heads"


def test_experts_switched_on_without_a_count_are_refused():
    text = {**MOE["text_config"], "num_experts": None}
    with pytest.raises(ConfigImportError) as err:
        architecture_from_config({**MOE, "text_config": text})
    assert err.value.field == "num_experts"


def test_tensor_parallel_beyond_the_full_layers_kv_heads_replicates_them_only():
    # TP 4: the sliding layers' 8 KV heads split 2 per GPU; the full layers' 2 heads are one per GPU, replicated
    layout = kv_layout(architecture_from_config(MOE), kv_bits=16, tp=4)
    assert layout.bytes_per_token_per_gpu == 25 * 2 * 2 * 256 * BF16_BYTES + 5 * 2 * 1 * 512 * BF16_BYTES
