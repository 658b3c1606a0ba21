"""A stored run is planned on as the deployment it measured was launched: perf takes it as an exact match only
when it ran with the engine settings the deployment is planned with (as the engine runs them), and the run's
engine release picks the memory rule its prediction and perf's scaling are made with."""

from __future__ import annotations

from pathlib import Path

import pytest

from inferplan.catalog.memory_rules import stated_release
from inferplan.inputs.deployment import Deployment
from inferplan.inputs.workload import Workload
from inferplan.measurements.compare import compare_run
from inferplan.measurements.records import RunProvenance, read_runs
from inferplan.memory.fit import plan_memory
from inferplan.performance.serving import estimate

DATA = Path(__file__).parent / "data" / "measurements"
GIVEN = RunProvenance(model="llama-3.1-8b", gpu="h100", engine="vllm", engine_version="0.11.0", measured_by="lab")
D = Deployment(model="llama-3.1-8b", gpu="h100", engine="vllm", engine_version="0.11.0")  # the runs' release
W = Workload(input_len=1024, output_len=256, concurrency=8)  # the c8 file's own load level: 8.41 ms TPOT


def runs(catalog, name="vllm_bench_serve_c8.json", **stated):
    (run,) = read_runs(catalog, [(name, (DATA / name).read_bytes())], GIVEN.model_copy(update=stated))
    return (run.model_copy(update={"id": 1}),)


@pytest.mark.parametrize("stated", [{"max_num_seqs": 8}, {"kv_cache_dtype": "fp8"}])
def test_a_run_launched_with_other_engine_settings_is_no_exact_match(catalog, stated):
    est = estimate(D, W, catalog, user_runs=runs(catalog, **stated))
    assert est.source == "measured-local" and est.bound != "measured"  # scaled, not interpolated across the run
    field = next(iter(stated))
    assert "nearly matching" in est.assumptions[-1] and f"launched with {field}" in est.assumptions[-1]
    assert not any("interpolated across" in a for a in est.assumptions)


@pytest.mark.parametrize("stated", [{"max_num_seqs": 8}, {"kv_cache_dtype": "fp8"}])
def test_the_same_run_matches_a_deployment_planned_with_its_settings(catalog, stated):
    est = estimate(D.model_copy(update=stated), W, catalog, user_runs=runs(catalog, **stated))
    assert est.source == "measured-local" and est.bound == "measured" and est.tpot_s == pytest.approx(0.00841)


def test_a_stated_setting_the_engine_takes_by_default_is_the_same_launch(catalog):
    planned = plan_memory(D.model_copy(update={"max_model_len": 1280}), catalog).settings
    est = estimate(D, W, catalog, user_runs=runs(catalog, max_num_seqs=planned.max_num_seqs))
    assert est.bound == "measured" and est.tpot_s == pytest.approx(0.00841)


def test_perf_scales_the_model_at_the_runs_own_release(catalog):
    """Other lengths: the model at the run's measured point is taken at the release it ran (vLLM 0.8.5's V0
    defaults to 256 sequences), so the same figures measured on another release scale the estimate otherwise."""
    w = Workload(input_len=2048, output_len=256, concurrency=8)
    v0 = estimate(D, w, catalog, user_runs=runs(catalog, engine_version="0.8.5 V0"))
    v1 = estimate(D, w, catalog, user_runs=runs(catalog, engine_version="0.31.0"))
    assert v0.source == v1.source == "measured-local" and v0.tpot_s != pytest.approx(v1.tpot_s, rel=1e-6)


@pytest.mark.parametrize(("text", "release"), [
    ("0.10.1", "0.10.1"), ("V1, v0.10.1", "0.10.1 V1"), ("0.8.5 V0", "0.8.5 V0"), ("unstated", None),
    ("nightly", None), ("0.99.0", None)])
def test_a_stated_engine_version_is_read_leniently(catalog, text, release):
    assert stated_release(catalog, "vllm", text) == release


@pytest.mark.parametrize(("text", "release"), [("b6935 (3f4fc97f)", "b6935"), ("8f1d81a", None)])
def test_a_llama_bench_build_names_its_release_and_a_commit_alone_none(catalog, text, release):
    assert stated_release(catalog, "llamacpp", text) == release


def test_validate_mine_predicts_the_kv_cache_at_the_runs_release(catalog):
    def compared(version):
        (run,) = runs(catalog, engine_version=version, kv_cache_tokens=400_000)
        return compare_run(run, catalog)

    old, unstated = compared("0.10.1"), compared("unstated")
    assert "0.8-0.10" in old.memory_rule and old.notes == ()
    assert old.kv_cache_tokens.predicted != unstated.kv_cache_tokens.predicted
    assert "current release" in unstated.memory_rule and "names no vllm release" in unstated.notes[0]
    assert all(m.predicted is not None for p in unstated.points for m in p.metrics)


def test_a_release_the_catalogue_says_cannot_run_the_model_is_predicted_at_the_default_one(catalog):
    """vLLM 0.6.4 predates Qwen3 (first loaded by 0.8.4): the run is compared at the default release, and says so."""
    (run,) = runs(catalog, model="qwen3-8b", engine_version="0.6.4", kv_cache_tokens=400_000)
    result = compare_run(run, catalog)
    assert result.kv_cache_tokens is not None and "current release" in result.memory_rule
    assert "0.6.4" in result.notes[0] and all(p.problem is None for p in result.points)
