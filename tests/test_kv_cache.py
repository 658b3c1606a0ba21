from pathlib import Path

import pytest
import yaml

from inferplan.catalog.architecture import LayerKind
from inferplan.memory.kv_cache import kv_layout
from inferplan.memory.resolve import resolve_model

CASES = yaml.safe_load((Path(__file__).parent / "data" / "golden_kv.yaml").read_text())["cases"]


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_golden_kv_sizes(catalog, case):
    arch = resolve_model(catalog, case["model"]).architecture
    bits = catalog.kv_cache_dtype(case["kv_cache_dtype"]).bits_per_element.value
    layout = kv_layout(arch, kv_bits=bits)
    got = layout.sequence_bytes_per_gpu(case["tokens"])
    assert got == pytest.approx(case["expected_bytes"], rel=case["rel_tol"] or 1e-12), case["citation"]


def test_tp_splits_kv_heads_then_replicates(catalog):
    arch = resolve_model(catalog, "llama-3.1-8b").architecture  # 8 KV heads
    per_gpu = {tp: kv_layout(arch, kv_bits=16, tp=tp).bytes_per_token_per_gpu for tp in (1, 2, 8, 16)}
    assert per_gpu[2] == per_gpu[1] / 2
    assert per_gpu[8] == per_gpu[1] / 8
    assert per_gpu[16] == per_gpu[8]  # one replicated head per GPU
    assert kv_layout(arch, kv_bits=16, tp=16).bytes_per_token == 2 * per_gpu[1]


def test_mla_latent_is_replicated_across_tp(catalog):
    arch = resolve_model(catalog, "deepseek-v3").architecture
    one = kv_layout(arch, kv_bits=16, tp=1).bytes_per_token_per_gpu
    assert kv_layout(arch, kv_bits=16, tp=8).bytes_per_token_per_gpu == one


def test_pipeline_parallel_splits_layers(catalog):
    arch = resolve_model(catalog, "qwen3-32b").architecture
    assert kv_layout(arch, kv_bits=16, pp=4).bytes_per_token_per_gpu == kv_layout(arch, kv_bits=16).bytes_per_token_per_gpu / 4


def test_hybrid_models_hold_constant_state(catalog):
    arch = resolve_model(catalog, "qwen3-next-80b-a3b").architecture
    layout = kv_layout(arch, kv_bits=16)
    assert layout.state_bytes_per_seq > 0
    short, long = layout.sequence_bytes_per_gpu(1), layout.sequence_bytes_per_gpu(100_001)
    assert long - short == pytest.approx(100_000 * layout.growing_bytes_per_token)
    assert layout.growing_bytes_per_token == 12 * 2 * 2 * 256 * 2  # 12 full-attention layers, 2 KV heads x 256


def test_kivi_keeps_a_full_precision_residual_window(catalog):
    arch = resolve_model(catalog, "llama-3.1-8b").architecture
    kivi = catalog.kv_cache_dtype("int2-kivi")
    layout = kv_layout(arch, kv_bits=kivi.bits_per_element.value, residual_tokens=kivi.residual_tokens)
    full = kv_layout(arch, kv_bits=16)
    assert kivi.residual_tokens == 128
    # the first 128 tokens cost 16 bits each
    assert layout.sequence_bytes_per_gpu(128) == pytest.approx(full.sequence_bytes_per_gpu(128))
    # beyond the window each token costs the quantized rate
    extra = layout.sequence_bytes_per_gpu(10_128) - layout.sequence_bytes_per_gpu(128)
    assert extra == pytest.approx(10_000 * full.bytes_per_token * kivi.bits_per_element.value / 16)


def test_block_rounding_rounds_up(catalog):
    arch = resolve_model(catalog, "llama-3.1-8b").architecture
    layout = kv_layout(arch, kv_bits=16)
    assert layout.sequence_bytes_per_gpu(1, block_tokens=16) == 16 * layout.bytes_per_token


def test_largest_context_is_inverse_of_sequence_bytes(catalog):
    arch = resolve_model(catalog, "gpt-oss-20b").architecture
    layout = kv_layout(arch, kv_bits=16)
    budget = 10 * 2**30
    t = layout.max_tokens_per_sequence(budget, 4)
    assert layout.sequence_bytes_per_gpu(t) <= budget / 4 < layout.sequence_bytes_per_gpu(t + 1)


def test_pipeline_stages_are_sized_by_the_fullest_stage_at_each_length(catalog):
    """DeepSeek-V4-Flash at PP 2: layers 0-21 (2 window-only, 10 CSA, 10 HCA) and 22-42 (11 CSA, 10 HCA);
    at a long context the second stage holds more, though the first has more bytes per token (its
    windows); Kimi-K3 at PP 4: at a short context the stage with the most KDA state holds the most."""
    from inferplan.memory import compressed

    v4 = resolve_model(catalog, "deepseek-v4-flash").architecture
    layout = kv_layout(v4, kv_bits=8, pp=2)
    entry, state = compressed.entry_bytes(v4, 8), compressed.state_bytes
    csa, hca = (entry + compressed.indexer_key_bytes(v4)) / 4, entry / 128
    second = 21 * 128 * entry + 1_000_000 * (11 * csa + 10 * hca) + 11 * state(v4, LayerKind.CSA) + 10 * state(v4, LayerKind.HCA)
    assert layout.sequence_bytes_per_gpu(1_000_000) == pytest.approx(second)
    k3 = resolve_model(catalog, "kimi-k3").architecture
    layout = kv_layout(k3, kv_bits=16, pp=4)
    per_stage = [kv_layout(k3, kv_bits=16, pp=4).stages[i].sequence_bytes_per_gpu(100) for i in range(4)]
    assert layout.sequence_bytes_per_gpu(100) == max(per_stage) > min(per_stage)
