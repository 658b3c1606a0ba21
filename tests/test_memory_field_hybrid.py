"""The hybrid models' start-up records (measurements/memory_field_hybrid.yaml) and the card they need:
Kimi Linear 48B-A3B imports from its published config.json to the cache a hand count gives (7 MLA
layers grow per token, 20 KDA layers hold a fixed state per sequence), and its vLLM record loads and
is scored, with what one request takes of the pool agreeing with the log."""

import hashlib
import json
from pathlib import Path

import pytest
import yaml

from inferplan.catalog.hf_import import architecture_from_config
from inferplan.catalog.loader import DATA_DIR
from inferplan.memory.kv_cache import kv_layout
from inferplan.memory.params import count_params
from inferplan.memory.resolve import resolve_model
from inferplan.validation.memory import validate_memory

HYBRID = Path(DATA_DIR) / "measurements" / "memory_field_hybrid.yaml"
CONFIG = Path(DATA_DIR) / "hf_configs" / "kimi-linear-48b-a3b.json"
RECORD = "h01-kimi-linear-48b-awq-tp2-rtx3090-120k"


def _config():
    return json.loads(CONFIG.read_bytes())


def test_the_config_is_the_published_file():
    # the digest a public pin of revision e1df551a records for the whole file (kl-hf-config)
    assert hashlib.sha256(CONFIG.read_bytes()).hexdigest() == \
        "a6ac3c2c4b5aa72370f9727f49ffa4432715d20061889acdb37c688be853096e"


def test_the_cache_is_the_mla_latent_per_token_and_the_kda_state_per_sequence():
    cfg = _config()
    layout = kv_layout(architecture_from_config(cfg), kv_bits=16)
    kda = cfg["linear_attn_config"]
    mla_layers, kda_layers = len(kda["full_attn_layers"]), len(kda["kda_layers"])
    assert (mla_layers, kda_layers) == (7, 20)
    # MLA keeps one latent + the shared rope key per token and layer, at 2 bytes
    assert layout.growing_bytes_per_token == mla_layers * (cfg["kv_lora_rank"] + cfg["qk_rope_head_dim"]) * 2 == 8064
    # KDA: a heads x head_dim x head_dim state in float32, and q, k, v convolution windows of kernel - 1 at 2 bytes
    width = kda["num_heads"] * kda["head_dim"]
    per_layer = kda["num_heads"] * kda["head_dim"] ** 2 * 4 + 3 * width * (kda["short_conv_kernel_size"] - 1) * 2
    assert layout.state_bytes_per_seq == kda_layers * per_layer == 43_417_600


def test_the_parameters_count_to_the_published_48b():
    cfg = _config()
    p = count_params(architecture_from_config(cfg))
    h, vocab, layers = cfg["hidden_size"], cfg["vocab_size"], cfg["num_hidden_layers"]
    moe_layers = layers - cfg["first_k_dense_replace"]
    expert = 3 * h * cfg["moe_intermediate_size"]
    assert p.embedding == p.lm_head == vocab * h
    assert p.experts == moe_layers * cfg["num_experts"] * expert
    assert p.shared_experts == moe_layers * cfg["num_shared_experts"] * expert
    assert p.dense_mlp == 3 * h * cfg["intermediate_size"]
    # KDA layer (vLLM 0.11.1 layers/kda.py): q, k, v, o; decay f and output gate g through head_dim
    # (f_a/f_b, g_a/g_b); b per head; q/k/v short convolutions; A_log per head, dt_bias per channel, o_norm
    kda, heads = cfg["linear_attn_config"], cfg["num_attention_heads"]
    d, width, kernel = kda["head_dim"], kda["num_heads"] * kda["head_dim"], kda["short_conv_kernel_size"]
    kda_layer = (4 * h * width + 2 * (h * d + d * width) + h * kda["num_heads"] + 3 * width * kernel
                 + kda["num_heads"] + width + d)
    mla_layer = (h * heads * (cfg["qk_nope_head_dim"] + cfg["qk_rope_head_dim"])
                 + h * (cfg["kv_lora_rank"] + cfg["qk_rope_head_dim"]) + cfg["kv_lora_rank"]
                 + cfg["kv_lora_rank"] * heads * (cfg["qk_nope_head_dim"] + cfg["v_head_dim"]) + heads * cfg["v_head_dim"] * h)
    assert p.attention == len(kda["kda_layers"]) * kda_layer + len(kda["full_attn_layers"]) * mla_layer
    assert p.router == moe_layers * cfg["num_experts"] * h
    assert p.total == 49_122_675_072
    assert p.total == pytest.approx(48e9, rel=0.03)  # the README's "48B total parameters"


def test_the_card_resolves_by_its_hugging_face_names(catalog):
    for name in ("kimi-linear-48b-a3b", "moonshotai/Kimi-Linear-48B-A3B-Instruct",
                 "cyankiwi/Kimi-Linear-48B-A3B-Instruct-AWQ-4bit"):
        assert catalog.model(name).id == "kimi-linear-48b-a3b"
    assert resolve_model(catalog, "kimi-linear-48b-a3b").context_tokens == 1_048_576


def test_the_held_out_split_follows_the_rule_declared_in_the_file():
    points = yaml.safe_load(HYBRID.read_text())["memory_points"]
    assert len(points) >= 1
    assert [p["split"] for p in points] == ["development" if i % 2 == 0 else "holdout" for i in range(len(points))]


def test_the_record_is_scored_and_one_request_takes_what_the_log_printed(catalog):
    check = {c.id: c for c in validate_memory(catalog).checks}[RECORD]
    assert check.split == "development" and check.refused is None
    assert check.measured_kv_bytes == pytest.approx(2.30 * 2**30)
    assert check.kv_error is not None and check.concurrency_error is not None
    # pool / concurrency: 2.30 GiB / 2.48 = 0.93 GiB a 120k request, the MLA latent and the KDA state
    # (per GPU at TP 2); without the state the plan would charge 0.90
    assert check.request_error == pytest.approx(0.0, abs=0.02)


def test_docs_memory_states_the_pool_h01_is_planned(catalog):
    # the hybrid paragraph of docs/memory.md quotes the planned pool; it must be the one the code plans
    check = {c.id: c for c in validate_memory(catalog).checks}[RECORD]
    text = " ".join((Path(__file__).parents[1] / "docs" / "memory.md").read_text().split())
    assert "h01: Kimi Linear" in text
    assert f"plans {check.predicted_kv_bytes / 2**30:.2f} GiB of pool where the log printed 2.30" in text
