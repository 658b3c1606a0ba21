"""Engine releases as data (engine_memory_rules.yaml): a deployment that names no release is planned at
the engine's current release, the default memory fraction follows the release (vLLM's 0.92 from PR
#38284, SGLang's fixed table by TP size before PR #7054), a release newer than the current one is
refused, and the other processes' memory and the CUDA context are counted as each rule says."""

import pytest
from typer.testing import CliRunner

from inferplan.catalog.loader import load_catalog
from inferplan.catalog.memory_rules import current_release, memory_rule
from inferplan.errors import InvalidScenarioError
from inferplan.inputs.deployment import Deployment
from inferplan.memory.budget_settings import EngineSettings
from inferplan.memory.engine_budget import CUDA_CONTEXT, engine_budget
from inferplan.memory.fit import fit
from inferplan.memory.settings import engine_settings
from inferplan.shells.cli import app

GiB = 2**30
CATALOG = load_catalog()


def _fit(**kw):
    return fit(Deployment(model="llama-3.1-8b", **{"gpu": "H100", "max_model_len": 8192, **kw}), CATALOG)


def test_the_default_vllm_release_is_the_current_one_and_fit_says_so():
    current = current_release(CATALOG, "vllm")
    assert current.release == "0.34.0"  # sourced: mr-vllm-v034-release
    default, stated = _fit(), _fit(engine_version=current.release)
    assert default.memory_rule_id == stated.memory_rule_id == memory_rule(CATALOG, "vllm").id
    assert memory_rule(CATALOG, "vllm").covers(current.release)
    assert default.kv_cache_bytes_per_gpu == stated.kv_cache_bytes_per_gpu
    assert "planned at 0.34.0, the default: the current release" in default.memory_rule
    assert "the default" not in stated.memory_rule


@pytest.mark.parametrize(("release", "fraction"), [("0.19.0", 0.9), ("0.20.0", 0.92), ("0.21.0", 0.92), ("0.31.0", 0.92), ("0.33.0", 0.92),
                                                   ("0.11.0", 0.9)])
def test_vllm_default_gpu_memory_utilization_follows_the_release(release, fraction):
    r = _fit(engine_version=release)
    assert r.usable_bytes_per_gpu / r.gpu_memory_bytes == pytest.approx(fraction)


@pytest.mark.parametrize(("tp", "fraction"), [(1, 0.88), (2, 0.87), (4, 0.85), (8, 0.81)])
def test_sglang_before_pr7054_takes_a_fixed_fraction_by_tp_size(tp, fraction):
    r = fit(Deployment(model="llama-3.1-70b", system="hgx-h100", tensor_parallel_size=tp, engine="sglang",
                       engine_version="0.4.6", max_model_len=4096, quantization="fp8"), CATALOG)
    start = CATALOG.constant("cuda-context-bytes-per-gpu")
    assert r.memory_rule_id == "sglang-tp-fraction-table"
    assert r.usable_bytes_per_gpu == pytest.approx((r.gpu_memory_bytes - start) * fraction)


def test_sglang_current_release_uses_the_pr10975_heuristic():
    old, new = _fit(engine="sglang", engine_version="0.4.6"), _fit(engine="sglang")
    assert new.memory_rule_id == "sglang-static-fraction" and "planned at 0.5.23" in new.memory_rule
    assert old.usable_bytes_per_gpu != new.usable_bytes_per_gpu


def _sglang_fraction(release: str | None, accel_id: str = "rtx-4090", **kw) -> float:
    from inferplan.memory.settings import engine_settings
    d = Deployment(model="llama-3.1-8b", gpu=accel_id, engine="sglang", engine_version=release, **kw)
    accel, engine = CATALOG.accelerators.records[accel_id], CATALOG.engine("sglang")
    return engine_settings(d, engine, accel, 24 * GiB, memory_rule(CATALOG, "sglang", release)).memory_fraction


@pytest.mark.parametrize("release", ["0.5.22", "0.5.23", None])
def test_sglang_from_0522_caps_the_graph_batch_its_fraction_reserves_for_at_the_running_requests(release):
    engine = CATALOG.engine("sglang")
    rule = memory_rule(CATALOG, "sglang", release)
    tiers = rule.gpu_memory_defaults.tiers_at(rule.planned_release(release), engine.defaults_by_gpu_memory)
    tier = next(t for t in tiers if t.below_gib and 24 < t.below_gib)
    assert tier.graph_batch(1) > 4  # the 24 GiB tier captures past 4 requests
    # SGLang's mem_fraction_static on a 24 GiB GPU (24,576 MiB) from 0.5.20's 20-35 GiB tier (4,096-token chunk,
    # mr-sglang-wheels-tiers-v0520), the graph batch capped at the 4 running requests (mr-sglang-wheels-graph-cap-v0522),
    # TP1: reserved = 512 + 1.5 x 4,096 + 2 x 4 + 1,024 x 1 / 8 = 6,792 MiB (eng-sglang-gpu-memory-defaults-v056),
    # round((24,576 - 6,792) / 24,576, 3) = round(0.72363, 3)
    capped = 0.724
    assert _sglang_fraction(release, max_num_seqs=4) == capped > _sglang_fraction(release)
    assert _sglang_fraction(release, max_num_seqs=tier.graph_batch(1) + 8) == _sglang_fraction(release)
    # whole data-parallel ranks: the flag may be the total over them, so the tier's batch is kept
    assert _sglang_fraction(release, max_num_seqs=4, data_parallel_size=2) == _sglang_fraction(release)


def test_sglang_before_0522_reserves_for_the_tier_graph_batch_whatever_the_running_requests():
    assert not memory_rule(CATALOG, "sglang", "0.5.21").gpu_memory_defaults.caps_graph_batch("0.5.21")
    assert _sglang_fraction("0.5.21", max_num_seqs=4) == _sglang_fraction("0.5.21")


def test_vllm_034_sizes_the_kv_cache_from_the_memory_free_at_start_up_less_its_margin():
    # extensible KV cache (mr-vllm-wheel-0340-extensible-kv): the fraction is 1.0, and the memory free at start-up
    # (total - CUDA context - other processes) less max(1 GiB, 0.75 x the activation peak) caps it
    new, old = _fit(engine_version="0.34.0"), _fit(engine_version="0.33.0")
    free = new.gpu_memory_bytes - CATALOG.constant(CUDA_CONTEXT)
    margin = max(GiB, 0.75 * new.activation_bytes_per_gpu)
    assert new.memory_rule_id == "vllm-extensible-kv-cache" != old.memory_rule_id
    assert new.usable_bytes_per_gpu == pytest.approx(free - margin)
    assert old.usable_bytes_per_gpu == pytest.approx(0.92 * old.gpu_memory_bytes)
    busy = _fit(engine_version="0.34.0", other_gpu_memory_gb=2.0)
    assert busy.usable_bytes_per_gpu == pytest.approx(free - 2 * GiB - margin)
    stated = _fit(engine_version="0.34.0", gpu_memory_utilization=0.8)
    assert stated.usable_bytes_per_gpu == pytest.approx(0.8 * stated.gpu_memory_bytes)


def _qwen_moe(release: str, **kw):
    return fit(Deployment(model="qwen3-30b-a3b", gpu="H100", engine="vllm", engine_version=release, max_model_len=2500,
                          host_memory_gb=256, **kw), CATALOG)


def test_vllm_034_with_the_lmcache_connector_sizes_the_kv_cache_as_0_33_does():
    # mr-vllm-wheel-0340-extensible-off: LMCacheMPConnector shares the cache through legacy CUDA IPC, so vLLM 0.34 turns
    # the extensible KV cache off and sizes at 0.92 from the profile; the native backend keeps it on
    lmcache = dict(kv_offloading_size=64, kv_offloading_backend="lmcache")
    off, before = _qwen_moe("0.34.0", **lmcache), _qwen_moe("0.33.0", **lmcache)
    on, native = _qwen_moe("0.34.0"), _qwen_moe("0.34.0", kv_offloading_size=64, kv_offloading_backend="native")
    assert off.memory_rule_id == "vllm-extensible-kv-cache"
    assert off.usable_bytes_per_gpu == pytest.approx(0.92 * off.gpu_memory_bytes)
    assert off.kv_cache_bytes_per_gpu == pytest.approx(before.kv_cache_bytes_per_gpu)
    assert off.kv_cache_bytes_per_gpu < on.kv_cache_bytes_per_gpu == pytest.approx(native.kv_cache_bytes_per_gpu)
    assert any("kv_offloading_backend lmcache switches the extensible KV cache off" in a for a in off.assumptions)


def test_the_inputs_that_switch_the_measured_sizing_off_are_deployment_fields():
    sized = memory_rule(CATALOG, "vllm", "0.34.0").measured_sizing
    assert [o.field for o in sized.off_with] == ["enable_extensible_kv_cache", "kv_offloading_backend"]
    for off in sized.off_with:
        assert {off.field, *off.also_stated} <= set(Deployment.model_fields)
    # without kv_offloading_size vLLM makes no connector: the backend alone leaves the cache on
    assert sized.switched_off_by(Deployment(model="llama-3.1-8b", gpu="H100", kv_offloading_backend="lmcache")) is None


def test_vllm_034_keeps_a_3_gib_margin_floor_on_rocm():
    # KV_CACHE_MARGIN_FLOOR_BYTES = 3 GiB on ROCm, 1 GiB on CUDA (mr-vllm-wheel-0340-extensible-kv)
    r = fit(Deployment(model="llama-3.1-8b", gpu="mi300x", engine="vllm", engine_version="0.34.0", max_model_len=8192),
            CATALOG)
    free = r.gpu_memory_bytes - CATALOG.constant(CUDA_CONTEXT)
    assert 0.75 * r.activation_bytes_per_gpu < 3 * GiB
    assert r.usable_bytes_per_gpu == pytest.approx(free - 3 * GiB)
    assert any("the larger of 3 GiB" in a for a in r.assumptions)


def engine_settings_block(**kw):
    d = Deployment(model="llama-3.1-8b", gpu="H100", max_model_len=8192, **kw)
    rule = memory_rule(CATALOG, "vllm", kw["engine_version"])
    accel = CATALOG.accelerators.records["h100-sxm"]
    return engine_settings(d, CATALOG.engines.records["vllm"], accel, 80 * GiB, rule).block_tokens


def test_vllm_034_has_no_model_runner_v1_and_blocks_of_64_tokens():
    with pytest.raises(InvalidScenarioError) as e:
        _fit(engine_version="0.34.0", model_runner="V1")
    assert e.value.field == "model_runner"
    assert _fit(engine_version="0.34.0", model_runner="V2").fits
    assert memory_rule(CATALOG, "vllm", "0.34.0").block_tokens == 64
    assert engine_settings_block(engine_version="0.34.0") == 64 and engine_settings_block(engine_version="0.33.0") == 16


@pytest.mark.parametrize(("engine", "release"), [("sglang", "99.9"), ("sglang", "0.5.24"), ("sglang", "0.5.0"), ("sglang", "0.1.13"),
                                                 ("vllm", "0.40"), ("vllm", "99.9")])
def test_a_release_no_rule_states_is_refused(engine, release):
    with pytest.raises(InvalidScenarioError) as e:
        memory_rule(CATALOG, engine, release)
    assert e.value.field == "engine_version"


def _budget(rule, *, other_gib=0.0, fraction=0.9, total_gib=24.0):
    settings = EngineSettings(fraction, 2048, 256, 16, 2048, other_gpu_memory_bytes=other_gib * GiB)
    return engine_budget(CATALOG, CATALOG.engine("vllm"), total_bytes=total_gib * GiB, weights_bytes_per_gpu=10 * GiB,
                         arch=None, settings=settings, tp=1, gpus_in_instance=1, rule=rule)


def _without(rule, part):
    return rule.model_copy(update={"counted": tuple(p for p in rule.counted if p != part)})


def test_other_processes_count_against_the_fraction_where_the_rule_counts_them():
    rule = memory_rule(CATALOG, "vllm", "0.6.4")  # total - free after the profile: a display counts
    assert "other_processes" in rule.counted
    assert _budget(rule).kv_bytes_per_gpu - _budget(rule, other_gib=1.5).kv_bytes_per_gpu == pytest.approx(1.5 * GiB)
    # unwired, the display would be free: the same rule without the entry keeps its KV cache
    assert _budget(_without(rule, "other_processes"), other_gib=1.5).kv_bytes_per_gpu == _budget(rule).kv_bytes_per_gpu


def test_other_processes_only_limit_free_memory_where_the_rule_measures_growth():
    rule = memory_rule(CATALOG, "vllm", "0.5.3")  # free at worker start - free after: a display is outside
    assert "other_processes" not in rule.counted
    assert _budget(rule, other_gib=1.0).kv_bytes_per_gpu == _budget(rule).kv_bytes_per_gpu  # inside the headroom
    short = _budget(rule, other_gib=6.0)  # more than total x (1 - 0.9) beside the CUDA context
    free = 24 * GiB - 6 * GiB - CATALOG.constant(CUDA_CONTEXT)
    assert short.usable_bytes_per_gpu == pytest.approx(free)
    assert short.kv_bytes_per_gpu < _budget(rule).kv_bytes_per_gpu


def test_the_cuda_context_is_inside_the_fraction_only_where_the_rule_counts_it():
    rule = memory_rule(CATALOG, "vllm", "0.6.4")  # counts both: the display comes off the KV cache, not the usable
    assert "cuda_context" in rule.counted
    growth = memory_rule(CATALOG, "vllm", "0.5.3")  # counts neither: beside a display, the context must fit too
    assert "cuda_context" not in growth.counted
    with_context = growth.model_copy(update={"counted": (*growth.counted, "cuda_context")})
    outside, inside = _budget(growth, other_gib=6.0), _budget(with_context, other_gib=6.0)
    assert inside.usable_bytes_per_gpu - outside.usable_bytes_per_gpu == pytest.approx(CATALOG.constant(CUDA_CONTEXT))
    assert _budget(rule, other_gib=6.0, fraction=1.0).usable_bytes_per_gpu == 24 * GiB


def test_a_display_fails_start_up_where_it_fills_the_headroom():
    rule = memory_rule(CATALOG, "vllm", "0.31.0")
    assert rule.startup is not None and "other_processes" not in rule.counted
    free, busy = _fit(gpu="4090", engine_version="0.31.0"), _fit(gpu="4090", engine_version="0.31.0", other_gpu_memory_gb=2.0)
    assert free.fits and not busy.fits and busy.startup_shortfall_bytes_per_gpu > 0


def test_the_other_gpu_memory_flag_reaches_the_plan():
    runner = CliRunner()
    args = ["fit", "--model", "llama-3.1-8b", "--gpu", "4090", "--engine-version", "0.6.4", "--max-model-len", "8192",
            "--explain"]
    plain, busy = runner.invoke(app, args), runner.invoke(app, [*args, "--other-gpu-memory-gb", "2"])
    assert plain.exit_code == busy.exit_code == 0, busy.output
    flat = " ".join(busy.output.split())
    assert "other processes hold 2.00 GiB" in flat and "other processes hold" not in plain.output
    bad = runner.invoke(app, [*args, "--other-gpu-memory-gb", "-1"])
    assert bad.exit_code == 2 and "--other-gpu-memory-gb" in bad.output


@pytest.mark.parametrize("held_gib", [24.0, 200.0])
def test_other_processes_holding_the_whole_gpu_are_refused_not_planned(held_gib):
    with pytest.raises(InvalidScenarioError) as info:  # an RTX 4090 has under 24 GiB
        _fit(gpu="4090", other_gpu_memory_gb=held_gib)
    assert info.value.field == "other_gpu_memory_gb" and info.value.allowed.startswith("less than 23.")


def test_records_without_a_release_are_planned_at_the_stated_fallback():
    from inferplan.validation.memory import deployment_for
    point = CATALOG.memory_points.records["m04-gptoss-20b-l4-128k"]
    assert deployment_for(point, CATALOG).engine_version == current_release(CATALOG, "vllm").records_without_release


def test_the_api_takes_other_gpu_memory_gb_and_refuses_an_unknown_release(tmp_path):
    from fastapi.testclient import TestClient

    from inferplan.shells.api import create_app
    client = TestClient(create_app(tmp_path / "api.db"))
    body = {"model": "llama-3.1-8b", "gpu": "4090", "engine_version": "0.6.4", "max_model_len": 8192}
    plain, busy = client.post("/api/fit", json=body), client.post("/api/fit", json={**body, "other_gpu_memory_gb": 2})
    assert plain.json()["kv_cache_bytes_per_gpu"] - busy.json()["kv_cache_bytes_per_gpu"] == pytest.approx(2 * GiB)
    refused = client.post("/api/fit", json={**body, "engine": "sglang", "engine_version": "99.9"})
    assert refused.status_code == 422 and refused.json()["error"]["field"] == "engine_version"
