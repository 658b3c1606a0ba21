"""Host RAM per platform: one pool on unified memory, the system card's RAM and DRAM bandwidth, the
share kept for the OS and the engine, SGLang HiCache's host-pool rules, the host link of a KV tier."""

import pytest

from inferplan.catalog.loader import load_catalog
from inferplan.errors import InvalidScenarioError
from inferplan.inputs.deployment import Deployment
from inferplan.inputs.workload import Workload
from inferplan.memory.fit import fit, plan_memory
from inferplan.performance.context import ServingContext
from inferplan.performance.offload import host_offload
from inferplan.units import GiB

CATALOG = load_catalog()
GB10 = dict(model="qwen3-235b-a22b", gpu="gb10", engine="llamacpp", quantization="q4_k_m", max_model_len=32768)


def test_unified_memory_counts_the_gpu_side_and_the_offload_in_one_pool():
    r = fit(Deployment(**GB10, n_gpu_layers=80), CATALOG)  # 113.8 GiB of weights on the GPU side plus 21 GiB offloaded
    assert r.host_memory_origin == "unified" and not r.fits
    pool = 0.935 * 128 * GiB - CATALOG.constant("host-memory-reserve-bytes")
    assert r.host_memory_budget_bytes == pytest.approx(pool)
    assert r.host_memory_bytes_used > r.weights_bytes_per_gpu + 20 * GiB  # GPU side and offload together


def test_unified_memory_refuses_a_second_host_ram_figure():
    with pytest.raises(InvalidScenarioError) as err:
        fit(Deployment(**GB10, n_gpu_layers=80, host_memory_gb=64), CATALOG)
    assert err.value.field == "host_memory_gb" and "unified memory" in str(err.value)


def test_a_small_model_offloaded_on_unified_memory_still_fits():
    r = fit(Deployment(model="qwen3-30b-a3b", gpu="gb10", engine="llamacpp", quantization="q4_k_m",
                       max_model_len=32768, n_cpu_moe=10), CATALOG)
    assert r.fits and r.host_memory_origin == "unified"


def test_apple_offload_is_checked_against_the_macs_memory():
    r = fit(Deployment(**{**GB10, "gpu": "apple-m4-max"}, n_cpu_moe=30), CATALOG)
    assert not r.fits and r.host_memory_budget_bytes < 128 * GiB


def test_a_system_card_gives_the_host_ram_and_a_bare_gpu_asks_for_it():
    on_system = fit(Deployment(model="llama-3.1-70b", system="hgx-h100", cpu_offload_gb=4), CATALOG)
    assert on_system.host_memory_origin == "system"
    card = CATALOG.systems.records["hgx-h100"].host_memory_bytes.capacity_gib * GiB
    assert on_system.host_memory_budget_bytes == card - CATALOG.constant("host-memory-reserve-bytes")
    assert any("system card" in a for a in on_system.assumptions)
    with pytest.raises(InvalidScenarioError) as err:
        fit(Deployment(model="llama-3.1-70b", gpu="h100-sxm", gpus=8, cpu_offload_gb=4), CATALOG)
    assert err.value.field == "host_memory_gb"


def test_host_ram_filled_to_the_last_byte_does_not_fit():
    base = dict(model="qwen3-30b-a3b", gpu="rtx-4090", engine="llamacpp", quantization="gguf-q4_k_m",
                max_model_len=8192, n_gpu_layers=0)
    used = fit(Deployment(**base, host_memory_gb=1000), CATALOG).host_memory_bytes_used
    exact = fit(Deployment(**base, host_memory_gb=used / GiB), CATALOG)
    assert not exact.fits  # nothing left for the OS and the engine process
    assert exact.host_memory_total_bytes == pytest.approx(used)
    assert exact.host_memory_reserved_bytes == CATALOG.constant("host-memory-reserve-bytes")
    assert fit(Deployment(**base, host_memory_gb=used / GiB + 4.01), CATALOG).fits


SGL = dict(model="llama-3.1-8b", gpu="h100-sxm", engine="sglang", host_memory_gb=256)


def test_hicache_host_pool_not_larger_than_the_gpu_pool_is_refused():
    with pytest.raises(InvalidScenarioError) as err:
        fit(Deployment(**SGL, hicache_ratio=0.5), CATALOG)
    assert err.value.field == "hicache_ratio"
    with pytest.raises(InvalidScenarioError) as err:
        fit(Deployment(**SGL, hicache_size=10), CATALOG)
    assert err.value.field == "hicache_size"
    assert fit(Deployment(**SGL, hicache_ratio=2), CATALOG).fits


def test_hicache_keeps_sglangs_own_reserve_back():
    r = fit(Deployment(**SGL, hicache_ratio=2), CATALOG)
    assert r.host_memory_budget_bytes == 256 * GiB - 10 * GiB
    vllm = fit(Deployment(**{**SGL, "engine": "vllm"}, kv_offloading_size=20), CATALOG)
    assert vllm.host_memory_budget_bytes == 256 * GiB - CATALOG.constant("host-memory-reserve-bytes")


def test_offloaded_reads_use_the_platforms_bandwidth():
    gb10 = plan_memory(Deployment(model="qwen3-30b-a3b", gpu="gb10", engine="llamacpp", quantization="q4_k_m",
                                  max_model_len=32768, n_cpu_moe=10), CATALOG)
    host = host_offload(gb10, 1, CATALOG)
    read = CATALOG.constant("host-memory-read-efficiency")
    assert host.read_bytes_per_s == pytest.approx(273e9 * read)
    assert host.copy_bytes_per_s == pytest.approx(273e9 * read)  # no PCIe copy: the GPU reads it in place
    server = plan_memory(Deployment(model="llama-3.1-70b", system="hgx-h100", cpu_offload_gb=4), CATALOG)
    host = host_offload(server, 8, CATALOG)
    assert host.read_bytes_per_s == pytest.approx(614.4e9 * read)
    assert host.copy_bytes_per_s == pytest.approx(63e9 * CATALOG.constant("pcie-copy-efficiency"))  # PCIe 5.0
    assert "614.4 GB/s" in host.note and "read per decoded token" in host.note


def test_a_host_kv_tier_reloads_at_the_slower_of_the_link_and_the_host():
    d = Deployment(model="llama-3.1-8b", gpu="h100-sxm", kv_offloading_size=20, host_memory_gb=256)
    w = Workload(input_len=16000, prefix_cache_hit_rate=0.8, prefix_cache_host_share=1.0)
    fast = ServingContext(CATALOG, d, w).host_kv_load_s
    slow = ServingContext(CATALOG, d.model_copy(update={"host_memory_bandwidth_gb_per_s": 20}), w).host_kv_load_s
    assert slow > 1.5 * fast
    pcie4 = ServingContext(CATALOG, d.model_copy(update={"gpu": "a100-80gb"}), w)
    assert pcie4.host_kv_load_s > fast  # an A100's PCIe 4.0 link against the H100's 5.0


def test_an_offloaded_estimate_quotes_the_offload_track_record():
    from inferplan.performance.serving import estimate

    d = Deployment(model="qwen3-30b-a3b", gpu="rtx-4090", engine="llamacpp", quantization="gguf-q4_k_m",
                   n_cpu_moe=20, host_memory_gb=64)
    est = estimate(d, Workload(input_len=512, output_len=128, concurrency=1), CATALOG)
    kinds = {r.kind for r in est.validated}
    assert kinds and kinds <= {"offload-decode", "offload-prefill"}
    gpu_only = estimate(d.model_copy(update={"n_cpu_moe": None, "host_memory_gb": None, "model": "qwen3-8b"}),
                        Workload(input_len=512, output_len=128, concurrency=1), CATALOG)
    assert not {r.kind for r in gpu_only.validated} & {"offload-decode", "offload-prefill"}


def test_fit_shows_the_ram_kept_for_the_os_and_the_unified_pool():
    from typer.testing import CliRunner

    from inferplan.shells.cli import app

    args = ["fit", "--model", "qwen3-30b-a3b", "--gpu", "rtx-4090", "--engine", "llamacpp", "-q", "gguf-q4_k_m",
            "--n-gpu-layers", "0", "--host-memory-gb", "64"]
    out = " ".join(CliRunner().invoke(app, args, terminal_width=200).stdout.split())
    assert "of 60.00 GiB (64.00 GiB less 4.00 GiB kept for the OS and the engine)" in out
    unified = ["fit", "--model", "qwen3-235b-a22b", "--gpu", "gb10", "--engine", "llamacpp", "-q", "q4_k_m",
               "--n-gpu-layers", "80", "--max-model-len", "32768"]
    assert "unified memory (GPU and CPU)" in CliRunner().invoke(app, unified, terminal_width=200).stdout
