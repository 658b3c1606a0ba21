"""Weight offload to host RAM: llama.cpp -ngl / --n-cpu-moe, vLLM --cpu-offload-gb."""

import pytest

from inferplan.errors import InvalidScenarioError
from inferplan.inputs.deployment import Deployment
from inferplan.inputs.workload import Workload
from inferplan.memory.fit import fit
from inferplan.performance.serving import estimate

BASE = dict(model="qwen3-30b-a3b", gpu="rtx-4090", engine="llamacpp", quantization="gguf-q4_k_m", max_model_len=8192)
W = Workload(input_len=512, output_len=128, concurrency=1)


def test_ngl_moves_weights_and_kv_to_host():
    full = fit(Deployment(**BASE))
    half = fit(Deployment(**BASE, n_gpu_layers=24, host_memory_gb=64))
    moved = full.weights_bytes_per_gpu - half.weights_bytes_per_gpu
    assert moved > 0.4 * full.weights_bytes_per_gpu
    assert half.host_memory_bytes_used >= moved  # the weights plus the CPU layers' KV cache
    assert half.host_memory_budget_bytes == 60 * 2**30  # 64 GiB less the 4 GiB kept for the OS and the engine
    assert half.sequence_bytes_per_gpu < 0.6 * full.sequence_bytes_per_gpu  # the GPU holds half the layers' KV
    assert half.fits


def test_short_host_memory_does_not_fit_and_names_it():
    short = fit(Deployment(**BASE, n_gpu_layers=0, host_memory_gb=4))
    assert not short.fits
    assert any("host_memory_gb" in note for note in short.assumptions)


def test_a_llamacpp_split_on_unknown_host_ram_says_what_it_needs():
    """As for the split llama-server's --fit chooses: planned, the host RAM it needs said and not assumed there."""
    unknown = fit(Deployment(**BASE, n_cpu_moe=10))
    known = fit(Deployment(**BASE, n_cpu_moe=10, host_memory_gb=64))
    assert unknown.fits and unknown.host_memory_origin == "unstated" and unknown.host_memory_budget_bytes is None
    assert unknown.host_memory_bytes_used == known.host_memory_bytes_used > 0
    assert any("not stated (host_memory_gb): check it has that much" in a for a in unknown.assumptions)


def test_other_offloads_need_the_host_memory_stated():
    """A weight stream (vLLM --cpu-offload-gb), KTransformers' experts and a host KV tier are not planned against
    RAM nobody stated: they ask for it."""
    for d in (Deployment(model="llama-3.1-70b", gpu="h100-sxm", gpus=8, cpu_offload_gb=4),
              Deployment(model="qwen3-30b-a3b", gpu="rtx-4090", engine="ktransformers", kt_num_gpu_experts=0),
              Deployment(model="llama-3.1-8b", gpu="h100-sxm", engine="vllm", kv_offloading_size=8)):
        with pytest.raises(InvalidScenarioError) as err:
            fit(d)
        assert err.value.field == "host_memory_gb", d


@pytest.mark.parametrize("field, engine", [("n_gpu_layers", "vllm"), ("n_cpu_moe", "sglang"), ("cpu_offload_gb", "llamacpp")])
def test_an_engine_refuses_a_flag_it_does_not_take(field, engine):
    d = Deployment(**{**BASE, "engine": engine, "quantization": None}, **{field: 4}, host_memory_gb=64)
    with pytest.raises(InvalidScenarioError) as err:
        fit(d)
    assert err.value.field == field


@pytest.mark.parametrize("layers", [0, 10])
def test_n_cpu_moe_on_a_dense_model_is_refused_naming_it(layers):
    """A dense model has no routed experts: --n-cpu-moe would keep nothing in host RAM, so fit, perf and
    deploy refuse it (before asking for the host RAM) instead of repeating it in their suggestions."""
    from inferplan.deploy import launch_plan
    from inferplan.memory.suggest import fit_or_suggest

    dense = Deployment(**{**BASE, "model": "qwen3-32b"}, n_cpu_moe=layers)
    for call in (lambda: fit_or_suggest(dense), lambda: fit_or_suggest(dense.model_copy(update={"host_memory_gb": 64})),
                 lambda: estimate(dense.model_copy(update={"host_memory_gb": 64}), W), lambda: launch_plan(dense)):
        with pytest.raises(InvalidScenarioError) as err:
            call()
        assert err.value.field == "n_cpu_moe"
        assert "routed experts" in err.value.allowed and "n_gpu_layers" in err.value.allowed


def test_offload_decodes_slower_than_all_gpu_and_faster_than_all_cpu():
    tps = [estimate(Deployment(**BASE, **extra), W, use_profiles=False).output_tokens_per_s_per_user
           for extra in ({}, dict(n_cpu_moe=24, host_memory_gb=64), dict(n_gpu_layers=0, host_memory_gb=64))]
    assert tps[0] > tps[1] > tps[2]


def test_vllm_cpu_offload_streams_weights_every_step():
    d = dict(model="qwen3-8b", gpu="rtx-4090", max_model_len=4096)
    plain = estimate(Deployment(**d), W, use_profiles=False)
    streamed = estimate(Deployment(**d, cpu_offload_gb=4, host_memory_gb=64), W, use_profiles=False)
    # 4 GiB over PCIe 4.0 x16 at 80 %: about 0.17 s a step, so at most about 6 tokens/s
    assert streamed.output_tokens_per_s_per_user < 7 < plain.output_tokens_per_s_per_user


def test_the_offload_points_are_each_predicted_and_only_offload_constants_fit_on_them():
    from inferplan.catalog.loader import load_catalog
    from inferplan.validation.speed import check_point

    catalog = load_catalog()
    points = [p for p in catalog.speed_points if p.offloaded]
    assert len(points) >= 10
    fitted = {i for c in catalog.calibration for i in c.fitted_on}
    held_out = {p.id for p in points if p.split == "holdout"}
    assert fitted & {p.id for p in points} and not fitted & held_out, "a constant fitted on a held-out offload point"
    checks = [check_point(p, catalog) for p in points]
    assert all(c.kind.startswith("offload-") and c.predicted for c in checks), [c.note for c in checks if not c.predicted]


def test_offload_points_stay_out_of_the_all_medians():
    from inferplan.validation.speed import SpeedCheck, summarise

    plain = SpeedCheck(id="a", kind="decode", split="holdout", metric="m", measured=1, predicted=1.1, error=0.1,
                       bound=None, note=None)
    offload = plain.model_copy(update={"id": "b", "kind": "offload-decode", "error": 5.0})
    medians, _ = summarise((plain, offload))
    assert medians["all/all"] == pytest.approx(0.1) and medians["offload-decode/all"] == pytest.approx(5.0)


KV_TIER = dict(model="qwen3-8b", gpu="rtx-4090", max_model_len=32768)


@pytest.mark.parametrize("engine, tier", [("vllm", dict(kv_offloading_size=32)), ("sglang", dict(hicache_ratio=2)),
                                          ("sglang", dict(hicache_size=20))])
def test_a_host_kv_tier_adds_capacity_and_counts_against_host_memory(engine, tier):
    plain = fit(Deployment(**KV_TIER, engine=engine))
    tiered = fit(Deployment(**KV_TIER, engine=engine, **tier, host_memory_gb=64))
    assert plain.host_kv_cache_tokens == 0 < tiered.host_kv_cache_tokens
    assert tiered.host_memory_bytes_used == pytest.approx(tiered.host_kv_cache_tokens * tiered.kv_cache_bytes_per_token,
                                                          rel=1e-3)
    assert tiered.kv_cache_tokens == plain.kv_cache_tokens  # the GPU tier is unchanged
    assert not fit(Deployment(**KV_TIER, engine=engine, **tier, host_memory_gb=4)).fits


def test_host_tier_hits_cost_a_pcie_load_and_need_a_tier():
    d = Deployment(**KV_TIER, kv_offloading_size=32, host_memory_gb=64)

    def ttft(share: float) -> float:
        w = Workload(input_len=30000, output_len=100, prefix_cache_hit_rate=0.9, prefix_cache_host_share=share)
        return estimate(d, w, use_profiles=False).ttft_s

    # 27,000 tokens x 147,456 bytes of KV over PCIe 4.0 x16 at 80 %: about 0.16 s
    assert ttft(1.0) - ttft(0.0) == pytest.approx(27000 * 147456 / (31.5e9 * 0.8), rel=0.02)
    with pytest.raises(InvalidScenarioError) as err:
        estimate(Deployment(**KV_TIER), Workload(input_len=3000, prefix_cache_hit_rate=0.5, prefix_cache_host_share=1),
                 use_profiles=False)
    assert err.value.field == "prefix_cache_host_share"
