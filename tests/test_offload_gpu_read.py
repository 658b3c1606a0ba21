"""The weights a decode step reads from the GPU's memory when part of them is in host RAM, by hand from
the models' config.json: what the GPU holds less the embedding table (a lookup), each offloaded byte taken
off once. Linear layers at GGUF Q4_K_M's 4.8944 bits (or BF16's 16), norms and routers at 16 bits."""

from __future__ import annotations

import pytest

from inferplan.catalog.loader import load_catalog
from inferplan.inputs.deployment import Deployment
from inferplan.memory.fit import plan_memory
from inferplan.performance.work import model_work

GIB = 2**30
Q4 = 4.8944 / 8  # bytes per linear weight
# Qwen3-32B: hidden 5120, 64 layers, 64 query and 8 KV heads of 128, MLP 25600, q/k norms of 128
QWEN3_32B_LAYER = 5120 * (8192 + 2 * 1024) + 8192 * 5120 + 3 * 5120 * 25600
QWEN3_32B_NORMS = 2 * 5120 + 2 * 128
QWEN3_32B_HEAD = 151936 * 5120  # lm_head (untied; the embedding table is as large)
# Qwen's own Q4_K_M file is 19,762,149,024 bytes: each part takes its share of it, its bytes at the format's bits
# scaled by the file over the whole model at those bits (embedding table, layers, lm_head and final norm)
QWEN3_32B_Q4_SCALE = 19_762_149_024 / (64 * (QWEN3_32B_LAYER * Q4 + QWEN3_32B_NORMS * 2) + 2 * QWEN3_32B_HEAD * Q4
                                       + 5120 * 2)
# Llama 3.1 8B: hidden 4096, 32 layers, 32 query and 8 KV heads of 128, MLP 14336, vocabulary 128256
LLAMA_8B_LAYER = 4096 * (4096 + 2 * 1024) + 4096 * 4096 + 3 * 4096 * 14336 + 2 * 4096
LLAMA_8B_HEAD = 128256 * 4096 + 4096  # lm_head and the final norm
# Qwen3-30B-A3B: hidden 2048, 48 layers, 32 query and 4 KV heads of 128, 128 experts of 768, vocabulary 151936
QWEN3_30B_ATTENTION = 2048 * (4096 + 2 * 512) + 4096 * 2048
QWEN3_30B_SMALL = 2048 * 128 + 2 * 2048 + 2 * 128  # router and norms, 16-bit
QWEN3_30B_EXPERTS = 128 * 3 * 2048 * 768  # one layer's routed experts
# DeepSeek-V3: hidden 7168, 61 layers (3 dense, MLP 18432; 58 with 256 routed experts and one shared of 2048),
# MLA (q_lora 1536, kv_lora 512, 128 heads of 128 + 64 rope), vocabulary 129280
DSV3_ATTENTION = 61 * (7168 * 1536 + 1536 * 128 * 192 + 7168 * 576 + 512 * 128 * 256 + 128 * 128 * 7168)
DSV3_DENSE = DSV3_ATTENTION + 3 * 3 * 7168 * 18432 + 58 * 3 * 7168 * 2048 + 129280 * 7168
DSV3_SMALL = 58 * 7168 * 256 + (2 * 61 + 1) * 7168


@pytest.fixture(scope="module")
def catalog():
    return load_catalog()


def _read(d: Deployment, catalog) -> tuple[float, float]:
    work = model_work(plan_memory(d, catalog), catalog)
    return work.dense_bytes_per_gpu, work.expert_bytes_per_gpu


@pytest.mark.parametrize("build, layers, output_layer", [("b7437", 32, False), ("b7438", 31, True), (None, 31, True)])
def test_ngl_reads_the_gpu_layers_on_the_gpu(catalog, build, layers, output_layer):
    """Qwen3-32B -ngl 32: to b7437 the last 32 of 64 layers on the GPU (about 8.8 GiB) and the output layer on
    the CPU; from b7438 (llama.cpp PR #18148) the output layer and the last 31 (about 8.9 GiB)."""
    d = Deployment(model="qwen3-32b", gpu="rtx-3090", engine="llamacpp", quantization="gguf-q4_k_m",
                   host_memory_gb=64, max_model_len=32768, n_gpu_layers=32, engine_version=build)
    dense, experts = _read(d, catalog)
    output = (QWEN3_32B_HEAD * Q4 + 5120 * 2) if output_layer else 0.0  # lm_head and the final norm
    at_bits = layers * (QWEN3_32B_LAYER * Q4 + QWEN3_32B_NORMS * 2) + output
    assert dense == pytest.approx(QWEN3_32B_Q4_SCALE * at_bits, rel=1e-3)
    assert experts == 0


def test_cpu_offload_gb_reads_what_stays_on_the_gpu(catalog):
    """Llama 3.1 8B in BF16 with --cpu-offload-gb 8: all but the embedding table and the 8 GiB (about 6 GiB)."""
    d = Deployment(model="llama-3.1-8b", gpu="rtx-4090", engine="vllm", host_memory_gb=64, max_model_len=8192,
                   cpu_offload_gb=8)
    dense, _ = _read(d, catalog)
    assert dense == pytest.approx((32 * LLAMA_8B_LAYER + LLAMA_8B_HEAD) * 2 - 8 * GIB, rel=1e-3)


def test_n_cpu_moe_reads_the_dense_part_and_the_gpu_experts(catalog):
    """Qwen3-30B-A3B --n-cpu-moe 24: the experts of the last 24 layers and every layer's dense part (about 0.7 GiB).
    The model's Q4_K_M build is published at 18.6 GB, which the parts share out: each takes its share of the
    file, its bytes at the format's bits scaled by the file over the whole model at those bits."""
    d = Deployment(model="qwen3-30b-a3b", gpu="rtx-4090", engine="llamacpp", quantization="gguf-q4_k_m",
                   max_model_len=8192, n_cpu_moe=24, host_memory_gb=64)
    dense, experts = _read(d, catalog)
    lm_head = 151936 * 2048
    dense_at_bits = 48 * (QWEN3_30B_ATTENTION * Q4 + QWEN3_30B_SMALL * 2) + lm_head * Q4 + 2048 * 2
    scale = 18.6e9 / (dense_at_bits + 48 * QWEN3_30B_EXPERTS * Q4 + lm_head * Q4)  # + the embedding table at Q4_K_M
    assert dense == pytest.approx(scale * dense_at_bits, rel=1e-3)
    assert experts == pytest.approx(scale * 24 * QWEN3_30B_EXPERTS * Q4, rel=1e-6)


def test_ktransformers_reads_the_gpu_part_on_the_gpu(catalog):
    """DeepSeek-V3 on KTransformers with every routed expert on the CPU: attention, the dense and shared MLPs
    and the lm_head on the GPU. kt-kernel's LLAMAFILE method loads that part from the original checkpoint, not
    the GGUF (kt_cpu_paths.yaml), so the GPU reads the FP8 weights (the lm_head in BF16): about 16 GiB, the
    same read as the FP8 checkpoint's own plan."""
    q4 = Deployment(model="deepseek-v3", gpu="rtx-4090", engine="ktransformers", quantization="gguf-q4_k_m",
                    kt_num_gpu_experts=0, host_memory_gb=1024, host_memory_bandwidth_gb_per_s=614.4, max_model_len=2048)
    dense, experts = _read(q4, catalog)
    head = 129280 * 7168
    assert dense == pytest.approx((DSV3_DENSE - head) * (8 + 32 / 16384) / 8 + head * 2 + DSV3_SMALL * 2, rel=1e-2)
    assert (dense, experts) == _read(q4.model_copy(update={"quantization": "fp8-block"}), catalog)
    assert experts == 0
def test_ktransformers_gpu_experts_are_read_in_the_gpu_parts_format(catalog):
    """4 of DeepSeek-V3's 256 routed experts per layer on the GPU in block FP8: the GPU reads those, whatever
    smaller format (AMX INT4) the CPU's copy of the other 252 is converted to."""
    base = dict(model="deepseek-v3", gpu="h100-sxm", engine="ktransformers", quantization="fp8-block",
                kt_num_gpu_experts=4, host_memory_gb=1024, max_model_len=4096)
    int4 = _read(Deployment(**base, kt_method="AMXINT4"), catalog)
    int8 = _read(Deployment(**base, kt_method="AMXINT8"), catalog)
    whole = plan_memory(Deployment(**base, kt_method="AMXINT8"), catalog).weights.expert_bytes
    assert int4[1] == int8[1] == pytest.approx(whole * 4 / 256, rel=1e-9)
    assert int4[0] == int8[0] > 15 * GIB  # attention, dense and shared MLPs, lm_head at about a byte each
