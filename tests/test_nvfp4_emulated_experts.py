"""vLLM's emulated NVFP4 experts on ROCm dequantize every expert of a layer the GPU holds into bf16 in the
start-up profile's forward (engine_memory_rules.yaml moe_buffers, shapes dequantized_experts): in PyTorch ops
at 0.20 (23 B per weight while one tensor converts), by a Triton kernel in 0.21-0.24 (the 2-byte copies of
w13 and w2 together), inside a fused product from 0.25.0 (no copy)."""

import pytest
import yaml

from inferplan.catalog.loader import DATA_DIR, load_catalog, load_files
from inferplan.inputs.deployment import Deployment
from inferplan.memory.fit import fit
from inferplan.memory.moe_buffers import moe_profile_bytes
from inferplan.memory.resolve import resolve_model

CATALOG = load_catalog()
RULE = CATALOG.memory_rules.records["vllm-v1-graphs-after-kv"]
QWEN_MOE = resolve_model(CATALOG, "qwen3-30b-a3b").architecture
MI300X, H100, B200 = (CATALOG.accelerators.records[g] for g in ("mi300x", "h100-sxm", "b200"))
# Qwen3-30B-A3B: 128 experts, intermediate 768, hidden 2048, gated (w13 holds 2 x 768 rows)
W13, W2 = 128 * 2 * 768 * 2048, 128 * 768 * 2048


def _catalog_without_dequantized_experts(tmp_path):
    name = "engine_memory_rules.yaml"
    data = yaml.safe_load((DATA_DIR / name).read_text())
    for rule in data["memory_rules"]:
        for entry in rule.get("activation", {}).get("moe_buffers", ()):
            entry["kernels"] = [k for k in entry["kernels"] if k.get("shapes") != "dequantized_experts"]
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data))
    return load_files([*(p for p in DATA_DIR.glob("**/*.yaml") if p.name != name), path])


def _profile(accel, release, tp=1, expert_parallel=False):
    return moe_profile_bytes(RULE, QWEN_MOE, accel=accel, tokens=8192, tp=tp, release=release, quant_id="nvfp4",
                             expert_parallel=expert_parallel)


def test_0_20_peaks_while_w13_is_dequantized_in_pytorch_ops():
    size, note, kept = _profile(MI300X, "0.20.0")
    assert size == 23 * W13  # larger than 2 x W13 + 23 x W2
    assert not kept and "128 experts' weights dequantized per forward" in note
    assert _profile(MI300X, "0.20.2")[0] == size


def test_0_21_to_0_24_hold_the_bf16_copies_of_w13_and_w2_together():
    for release in ("0.21.0", "0.22.1", "0.24.0"):
        assert _profile(MI300X, release)[0] == 2 * (W13 + W2)
    # tensor parallel splits each expert's intermediate size; expert parallel holds whole experts
    assert _profile(MI300X, "0.21.0", tp=2)[0] == (W13 + W2)
    assert _profile(MI300X, "0.21.0", tp=8, expert_parallel=True)[0] == 2 * (W13 + W2) / 8


def test_no_copy_from_0_25_nor_on_cuda():
    assert _profile(MI300X, "0.25.0") == (0.0, None, False)
    for accel in (H100, B200):
        assert _profile(accel, "0.20.0") == (0.0, None, False)


def test_the_copies_shrink_the_kv_cache_of_an_nvfp4_moe_on_mi300x(tmp_path):
    d = Deployment(model="nemotron-3.5-lightning", gpu="mi300x", quantization="nvfp4", engine_version="0.20.0")
    wired, unwired = fit(d, CATALOG), fit(d, _catalog_without_dequantized_experts(tmp_path))
    assert wired.activation_bytes_per_gpu > unwired.activation_bytes_per_gpu + 10 * 2**30
    assert wired.kv_cache_bytes_per_gpu < unwired.kv_cache_bytes_per_gpu
    assert any("NVFP4 emulation experts (dequantized in PyTorch ops)" in a for a in wired.assumptions)


@pytest.mark.parametrize("model, gpu", [("gemma-4-31b", "mi300x"), ("nemotron-3.5-lightning", "b200")])
def test_dense_nvfp4_and_native_fp4_experts_are_unchanged(tmp_path, model, gpu):
    d = Deployment(model=model, gpu=gpu, quantization="nvfp4", engine_version="0.20.0")
    other = _catalog_without_dequantized_experts(tmp_path)
    assert fit(d, CATALOG).activation_bytes_per_gpu == pytest.approx(fit(d, other).activation_bytes_per_gpu)
