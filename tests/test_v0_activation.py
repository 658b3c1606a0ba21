"""vLLM V0's start-up profile peaks at the larger of its two passes: the dummy forward's MLP or the
sampler's full-vocabulary sort over max_num_seqs rows (engine_memory_rules.yaml, model
forward_or_sampler). Each test fails when the mechanism is unwired from the data or the code."""

import pytest

from inferplan.catalog.memory_rules import memory_rule
from inferplan.memory.budget_parts import activation_bytes, mlp_width
from inferplan.memory.budget_settings import EngineSettings
from inferplan.memory.resolve import resolve_model
from inferplan.units import GiB
from inferplan.validation.memory import check_point

V0_RELEASES = ["0.3.0", "0.5.3.post1", "0.6.4", "0.6.5", "0.8.5 V0"]


def _settings(tokens: int, seqs: int = 256) -> EngineSettings:
    return EngineSettings(0.9, tokens, seqs, 16, tokens)


def _arch(catalog, model: str):
    return resolve_model(catalog, model).architecture


@pytest.mark.parametrize("release", V0_RELEASES)
def test_every_v0_rule_takes_the_larger_of_the_forward_and_the_sampler(catalog, release):
    activation = memory_rule(catalog, "vllm", release).activation
    assert activation.model == "forward_or_sampler"
    assert activation.forward_constant == "vllm-v0-forward-bytes-per-token-width"


def test_a_long_profile_batch_peaks_in_the_mlp(catalog):
    """Llama-3.1-8B at 29,000 profiled tokens: three [tokens, 4096] and three [tokens, 14336] 16-bit
    tensors live at the MLP, 2.99 GiB (issue #10517's RTX 3090 log: peak_torch_memory 17.98 − weights
    14.99), not the sum of a sampler term and a forward term."""
    arch = _arch(catalog, "llama-3.1-8b")
    rule = memory_rule(catalog, "vllm", "0.6.4")
    peak, note = activation_bytes(catalog, rule, arch, _settings(29_000), tp=1)
    assert peak == catalog.constant("vllm-v0-forward-bytes-per-token-width") * 29_000 * (4096 + 14336)
    assert peak / GiB == pytest.approx(2.9912, rel=0.01)
    assert "larger of" in note


def test_the_fitted_forward_coefficient_is_the_models_six_bytes(catalog):
    """Three 16-bit [tokens, hidden] and three [tokens, MLP width] tensors live at the MLP: 6 bytes; the
    fit on the development records may add small buffers, not a different mechanism."""
    assert catalog.constant("vllm-v0-forward-bytes-per-token-width") == pytest.approx(6.0, rel=0.02)


def test_a_short_chunked_batch_peaks_in_the_sampler(catalog):
    """Llama-3.1-405B at TP 8 with 0.5's 512-token chunked-prefill profile: the sampler's 256 rows of
    128,256 logits on the driver rank outweigh a 512-token forward."""
    arch = _arch(catalog, "llama-3.1-405b")
    rule = memory_rule(catalog, "vllm", "0.5.3.post1")
    peak, _ = activation_bytes(catalog, rule, arch, _settings(512), tp=8)
    assert peak == catalog.constant("vllm-v0-sampler-bytes-per-seq-vocab") * 256 * 128_256
    assert peak > 6 * 512 * (16384 + 53248 / 8)


def test_a_mixture_of_experts_is_as_wide_as_its_routed_experts_per_token(catalog):
    arch = _arch(catalog, "qwen3-30b-a3b")
    assert mlp_width(arch) == arch.moe.experts_per_token * arch.moe.expert_intermediate_size


@pytest.mark.parametrize("point_id", ["f01-llama31-8b-rtx3090-20k", "f03-llama3-8b-h100"])
def test_development_v0_records_keep_their_kv_within_two_percent(catalog, point_id):
    check = check_point(catalog.memory_points.records[point_id], catalog)
    assert abs(check.kv_error) < 0.02


def test_nccl_220_rounds_each_nvls_buffer_up_to_the_multicast_granularity(catalog):
    """vLLM 0.5-0.6.3 run NCCL 2.20, which rounds a communicator's NVLS buffer (8 ranks x 288 MiB) up to
    the 512 MiB multicast granularity: 2.5 GiB for each of vLLM's two communicators at TP 8, 1.5 at TP 4."""
    nvls = memory_rule(catalog, "vllm", "0.5.3.post1").collective_buffers
    assert nvls.bytes_per_gpu(catalog, "nvlink4", 8, 8) == 2 * 2.5 * GiB
    assert nvls.bytes_per_gpu(catalog, "nvlink4", 8, 4) == 2 * 1.5 * GiB


def test_the_405b_fp8_tp8_h100_start_up_at_131k_is_refused_as_at_053(catalog):
    """vLLM 0.5.3.post1 refused Llama-3.1-405B-FP8 at TP 8 and 131,072 tokens (KV for 79,392 tokens)."""
    check = check_point(catalog.memory_points.records["d20-llama31-405b-fp8-tp8-h100-128k-fails"], catalog)
    assert check.predicted_fits is False
