"""The fused-MoE kernels' intermediate caches in vLLM's start-up profile (engine_memory_rules.yaml
activation.moe_buffers, memory/moe_buffers.py): Marlin sizes them for every token of the dummy batch,
the Triton path for a chunk of VLLM_FUSED_MOE_CHUNK_SIZE; they meet the sampler pass in the larger of the two."""

import pytest
import yaml

from inferplan.catalog.loader import DATA_DIR, load_catalog, load_files
from inferplan.inputs.deployment import Deployment
from inferplan.memory.fit import fit
from inferplan.memory.moe_buffers import moe_profile_bytes
from inferplan.memory.resolve import resolve_model

CATALOG = load_catalog()
RULE = CATALOG.memory_rules.records["vllm-v1-graphs-after-kv"]
KIMI = resolve_model(CATALOG, "kimi-linear-48b-a3b").architecture
QWEN_MOE = resolve_model(CATALOG, "qwen3-30b-a3b").architecture
A100, H100, MI300X = (CATALOG.accelerators.records[g] for g in ("a100-80gb", "h100-sxm", "mi300x"))


def _catalog_without_moe_buffers(tmp_path):
    name = "engine_memory_rules.yaml"
    data = yaml.safe_load((DATA_DIR / name).read_text())
    for rule in data["memory_rules"]:
        rule.get("activation", {}).pop("moe_buffers", None)
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data))
    return load_files([*(p for p in DATA_DIR.glob("**/*.yaml") if p.name != name), path])


def test_marlin_sizes_its_caches_for_every_token_of_the_dummy_batch():
    # fused_marlin_moe (0.11.1): M x topk x max(2N, K) + M x topk x N, then empty_like(hidden_states);
    # Kimi Linear: hidden 2304, 8 experts of 1024 per token, N = 1024 / TP 2 = 512, M = 64000, bf16
    assert (KIMI.hidden_size, KIMI.moe.experts_per_token, KIMI.moe.expert_intermediate_size) == (2304, 8, 1024)
    size, note, _ = moe_profile_bytes(RULE, KIMI, accel=A100, tokens=64000, tp=2, release="0.11.1", quant_id="int4-w4a16")
    assert size == 2 * (64000 * 8 * (max(2 * 512, 2304) + 512) + 64000 * 2304)  # 3,178,496,000 B, 2.96 GiB
    assert note.startswith("Marlin MoE caches for 64,000 tokens at once")


def test_the_triton_path_takes_a_chunk_of_32768_tokens_and_writes_in_place():
    # fused_experts_impl: M = min(num_tokens, 32768); cache13 M x topk x max(N, K), cache2 M x topk x N / 2,
    # N = w13's 2 x 768; Qwen3-30B-A3B: hidden 2048, 8 experts of 768 per token, TP 1
    size, note, _ = moe_profile_bytes(RULE, QWEN_MOE, accel=A100, tokens=40000, tp=1, release="0.11.0", quant_id="bf16")
    assert size == 2 * 32768 * 8 * (max(2 * 768, 2048) + 768)
    assert "a chunk of 32,768 of 40,000 tokens" in note


def test_under_pytorch_2_9_the_triton_path_returns_a_new_output():
    # 0.11.1 pins torch 2.9.0, where disable_inplace() holds: fused_experts_impl takes empty_like(hidden_states)
    size, *_ = moe_profile_bytes(RULE, QWEN_MOE, accel=A100, tokens=8192, tp=1, release="0.11.1", quant_id="bf16")
    assert size == 2 * (8192 * 8 * (2048 + 768) + 8192 * 2048)


def test_marlin_keeps_its_unchunked_caches_through_0_16():
    # 0.14.1 and 0.16.0: the WNA16 Marlin method still calls fused_marlin_moe for every token, output not in place
    rule = CATALOG.memory_rules.records["vllm-v1-graphs-after-kv"]
    for release in ("0.14.1", "0.16.0"):
        size, *_ = moe_profile_bytes(rule, KIMI, accel=A100, tokens=16384, tp=1, release=release, quant_id="int4-awq")
        assert size == 2 * (16384 * 8 * (max(2048, 2304) + 1024) + 16384 * 2304)


def test_no_caches_outside_the_releases_read_or_for_kernels_not_described():
    for release, quant in (("0.8.5", "int4-w4a16"), ("0.35.0", "int4-w4a16"), ("0.11.1", "fp8"), ("0.14.1", "bf16"),
                           (None, "bf16")):
        assert moe_profile_bytes(RULE, KIMI, accel=H100, tokens=64000, tp=2, release=release, quant_id=quant) == (0.0, None, False)


def test_kimi_linears_marlin_caches_raise_its_profile_peak_above_the_sampler_pass(tmp_path):
    # record h01: 64,000 batched tokens and 8 sequences on two RTX 3090s; the sampler pass (8 rows) is far
    # smaller than one MoE layer's caches, so the peak is the held hidden states plus those caches
    d = Deployment(model="kimi-linear-48b-a3b", gpu="rtx-3090", gpus=2, tensor_parallel_size=2, quantization="int4-w4a16",
                   max_model_len=120000, max_num_batched_tokens=64000, max_num_seqs=8, gpu_memory_utilization=0.95,
                   engine_version="0.11.1")
    wired, unwired = fit(d, CATALOG), fit(d, _catalog_without_moe_buffers(tmp_path))
    caches = 2 * (64000 * 8 * (2304 + 512) + 64000 * 2304)
    sampler = CATALOG.constant("vllm-sampler-bytes-per-seq-vocab") * 8 * KIMI.vocab_size
    assert wired.activation_bytes_per_gpu - unwired.activation_bytes_per_gpu == pytest.approx(caches - sampler)
    assert any("one MoE layer's caches in place of the smaller sampler pass" in a for a in wired.assumptions)


def test_the_sampler_pass_stays_the_peak_where_it_is_larger(tmp_path):
    # at 1,024 sequences of Qwen3's 151,936-entry vocabulary the sampler pass (5.5 GiB) exceeds the
    # 8,192-token Triton caches (0.44 GiB): the peak is unchanged
    d = Deployment(model="qwen3-30b-a3b", gpu="h100-sxm", quantization="bf16", engine_version="0.11.0")
    wired = fit(d, CATALOG)
    assert wired.activation_bytes_per_gpu == pytest.approx(fit(d, _catalog_without_moe_buffers(tmp_path)).activation_bytes_per_gpu)
    assert any("freed before the sampler pass, which is larger" in a for a in wired.assumptions)


def test_fp8_experts_below_compute_capability_8_9_take_marlins_caches():
    # 0.11.1 get_fp8_moe_backend: MARLIN where not has_device_capability(89), never on ROCm; FP8 on
    # Hopper takes other kernels (not described)
    marlin, note, _ = moe_profile_bytes(RULE, QWEN_MOE, accel=A100, tokens=32768, tp=1, release="0.11.1", quant_id="fp8")
    int4, *_ = moe_profile_bytes(RULE, QWEN_MOE, accel=A100, tokens=32768, tp=1, release="0.11.1", quant_id="int4-gptq")
    assert marlin == int4 == 2 * (32768 * 8 * (2048 + 768) + 32768 * 2048)
    assert note.startswith("Marlin MoE caches")
    assert moe_profile_bytes(RULE, QWEN_MOE, accel=H100, tokens=32768, tp=1, release="0.11.1", quant_id="fp8") == (0.0, None, False)


def test_nvfp4_experts_without_native_fp4_take_marlins_caches():
    size, *_ = moe_profile_bytes(RULE, QWEN_MOE, accel=H100, tokens=8192, tp=1, release="0.11.1", quant_id="nvfp4")
    assert size == 2 * (8192 * 8 * (2048 + 768) + 8192 * 2048)
    b200 = CATALOG.accelerators.records["b200"]
    assert moe_profile_bytes(RULE, QWEN_MOE, accel=b200, tokens=8192, tp=1, release="0.11.1", quant_id="nvfp4") == (0.0, None, False)


def test_marlin_is_not_charged_on_rocm():
    # compressed_tensors_moe.py: INT4 experts take the Triton WNA16 method on ROCm
    for release in ("0.11.0", "0.11.1", "0.16.0"):
        assert moe_profile_bytes(RULE, KIMI, accel=MI300X, tokens=8192, tp=1, release=release,
                                 quant_id="int4-w4a16") == (0.0, None, False)


def test_fp8_on_an_a100_plans_the_same_activations_as_int4():
    # qwen3-30b-a3b on an A100 at 32,768 batched tokens, fp8 and int4-gptq share Marlin
    plans = [fit(Deployment(model="qwen3-30b-a3b", gpu="a100-80gb", quantization=q, engine_version="0.11.1",
                            max_num_batched_tokens=32768, max_num_seqs=16), CATALOG) for q in ("fp8", "int4-gptq")]
    assert plans[0].activation_bytes_per_gpu == pytest.approx(plans[1].activation_bytes_per_gpu)
