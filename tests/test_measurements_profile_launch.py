"""A stored run becomes a measured profile that states how it was launched, so plan and search take it only for a
deployment launched the same way: its tensor parallel size, CUDA graphs, offload and engine settings (as the engine
runs them). Launched otherwise, the calibrated model plans and the estimate says which profile was not used, and why."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from inferplan.inputs.deployment import Deployment
from inferplan.inputs.workload import Workload
from inferplan.measurements.records import RunProvenance, read_runs
from inferplan.performance.local_catalog import with_user_profiles
from inferplan.catalog.points_schema import ProfileLaunch
from inferplan.performance.launch_match import layout_differs
from inferplan.performance.local_runs import as_profiles
from inferplan.performance.serving import estimate
from inferplan.shells.cli import app

DATA = Path(__file__).parent / "data" / "measurements"
GIVEN = RunProvenance(model="llama-3.1-8b", gpu="h100", engine="vllm", engine_version="0.11.0", measured_by="lab")
D = Deployment(model="llama-3.1-8b", gpu="h100", engine="vllm", engine_version="0.11.0")  # the runs' release
W = Workload(input_len=1024, output_len=256, concurrency=8)  # the c8 file's own load level: 8.41 ms TPOT
H100 = ["--model", "llama-3.1-8b", "--gpu", "h100", "--engine", "vllm"]
CSV = ("concurrency,input_tokens,output_tokens,ttft_ms,tpot_ms,output_tokens_per_s\n"
       "1,2000,500,40,4,240\n4,2000,500,45,5,780\n16,2000,500,60,8,1900\n64,2000,500,120,20,3000\n")
runner = CliRunner()


def cli(*args):
    return runner.invoke(app, [str(a) for a in args])


def runs(catalog, name="vllm_bench_serve_c8.json", id_=1, **stated):
    (run,) = read_runs(catalog, [(name, (DATA / name).read_bytes())], GIVEN.model_copy(update=stated))
    return (run.model_copy(update={"id": id_}),)


@pytest.mark.parametrize("stated", [{"max_num_seqs": 8}, {"enforce_eager": True}, {"kv_cache_dtype": "fp8"}])
def test_a_profile_from_a_run_of_another_launch_does_not_drive_the_estimate(catalog, stated):
    """search's cells and plan's estimates read profiles from the catalogue: a run launched otherwise is none of theirs."""
    mine = with_user_profiles(catalog, runs(catalog, **stated))
    est = estimate(D, W, mine)
    assert est.source != "measured"
    assert est == estimate(D, W, catalog).model_copy(update={"assumptions": est.assumptions})
    said = {"max_num_seqs": "launched with max_num_seqs", "enforce_eager": "launched without CUDA graphs (enforce_eager)",
            "kv_cache_dtype": "launched with kv_cache_dtype"}[next(iter(stated))]
    assert any("user-run-1-1024-256 is not used" in a and said in a for a in est.assumptions)


@pytest.mark.parametrize("stated", [{}, {"max_num_seqs": 8}, {"enforce_eager": True}, {"kv_cache_dtype": "fp8"}])
def test_the_same_profile_drives_a_deployment_launched_as_it_was(catalog, stated):
    est = estimate(D.model_copy(update=stated), W, with_user_profiles(catalog, runs(catalog, **stated)))
    assert est.source == "measured" and est.tpot_s == pytest.approx(0.00841)
    assert any("user-run-1-1024-256" in a for a in est.assumptions)


def test_a_profile_at_another_tensor_parallel_size_is_not_used(catalog):
    """Two GPUs as TP 2, or as two pipeline stages of TP 1: the run at TP 2 is the profile of the first alone."""
    mine = with_user_profiles(catalog, runs(catalog, gpus=2, tensor_parallel_size=2))
    tp2 = estimate(D.model_copy(update={"gpus": 2, "tensor_parallel_size": 2}), W, mine)
    pp2 = estimate(D.model_copy(update={"gpus": 2, "tensor_parallel_size": 1, "pipeline_parallel_size": 2}), W, mine)
    assert tp2.source == "measured" and tp2.tpot_s == pytest.approx(0.00841)
    assert pp2.source != "measured"
    assert any("launched at tensor parallel size 2, planned at 1" in a for a in pp2.assumptions)


def test_a_launch_with_experts_in_host_ram_is_another_launch(catalog):
    """--n-cpu-moe keeps experts in host RAM: a profile measured so is of another launch than one on the GPUs alone."""
    launch = ProfileLaunch(tensor_parallel_size=1, n_cpu_moe=20)
    d = Deployment(model="qwen3-30b-a3b", gpu="rtx-4090", engine="llamacpp", quantization="q4_k_m")
    assert layout_differs(catalog, launch, d, 1) == {"n_cpu_moe": (20, None)}
    assert layout_differs(catalog, launch, d.model_copy(update={"n_cpu_moe": 20}), 1) == {}


def test_runs_of_two_launches_make_two_profiles_each_stating_its_launch(catalog):
    plain = runs(catalog)
    capped = runs(catalog, "vllm_bench_serve_c32.json", id_=2, max_num_seqs=8)
    profiles = {p.id: p for p in as_profiles(plain + capped, catalog)}
    assert set(profiles) == {"user-run-1-1024-256", "user-run-2-1024-256"}
    assert profiles["user-run-1-1024-256"].launch.max_num_seqs is None
    assert profiles["user-run-2-1024-256"].launch.max_num_seqs == 8
    assert {p.concurrency for p in profiles["user-run-1-1024-256"].points} == {8}  # not pooled with run 2's 32


def test_the_shipped_profiles_state_no_launch(catalog):
    assert all(p.launch is None for p in catalog.serving_profiles)


def _plan(tmp_path, db, cell=""):
    scenario = tmp_path / "s.yaml"
    scenario.write_text("name: chat on H100s\nmodel: llama-3.1-8b\nplatform: {gpu: h100-sxm, gpus: 2, "
                        f"quote_usd_per_system: 60000}}\n{cell}workload: {{preset: chat-seat, cache_hit_rate: 0}}\n"
                        "target_users: 100\n")
    out = cli("plan", scenario, "--draws", "0", "--db", db, "--json")
    assert out.exit_code == 0, out.stdout
    return json.loads(out.stdout)["capacity"]["cell"]


def test_plan_sizes_a_cell_on_a_run_only_at_the_runs_tensor_parallel_size(tmp_path):
    db, csv = tmp_path / "runs.db", tmp_path / "chat.csv"
    csv.write_text(CSV)
    assert cli("measurements", "import", csv, *H100, "--gpus", 2, "-tp", 2, "--db", db).exit_code == 0
    tp2, pp2 = "cell: {tensor_parallel_size: 2}\n", "cell: {tensor_parallel_size: 1, pipeline_parallel_size: 2}\n"
    same, other = _plan(tmp_path, db, tp2), _plan(tmp_path, db, pp2)
    model_tp2, model_pp2 = _plan(tmp_path, tmp_path / "empty.db", tp2), _plan(tmp_path, tmp_path / "empty.db", pp2)
    # TP 2: anchored on the run (the target's concurrency is above its 64), so the figures move
    assert any("measured profile user-run-1-2000-500 covers" in a for a in same["assumptions"])
    assert same["output_tokens_per_s_per_user"] != pytest.approx(model_tp2["output_tokens_per_s_per_user"], rel=1e-6)
    # TP 1 in two stages on the same GPUs: the model's figures, and the run named as not used
    assert other["output_tokens_per_s_per_user"] == pytest.approx(model_pp2["output_tokens_per_s_per_user"], rel=1e-9)
    assert other["concurrency_at_target"] == model_pp2["concurrency_at_target"]
    (note,) = other["own_runs"]  # said once, beside the headline figures, not again among the assumptions
    assert "user-run-1-2000-500 is not used" in note and "launched at tensor parallel size 2, planned at 1" in note
    assert not any("user-run-1-2000-500 is not used" in a for a in other["assumptions"])


@pytest.mark.parametrize("flags", [["--max-num-seqs", 8], ["--enforce-eager"]])
def test_search_takes_no_run_launched_otherwise_for_its_cells(tmp_path, flags):
    db, csv = tmp_path / "runs.db", tmp_path / "fast.csv"
    csv.write_text(CSV)
    assert cli("measurements", "import", csv, *H100, *flags, "--db", db).exit_code == 0
    ask = ["search", "--model", "llama-3.1-8b", "--request-rate", "2", "--input-len", "2000", "--output-len", "500",
           "--accelerators", "h100-sxm", "--engines", "vllm", "--quantizations", "bf16", "--kv-cache-dtypes", "auto",
           "--max-gpus", "1", "--no-speculative", "--no-disaggregated", "--json"]

    def fastest(db_path):
        out = cli(*ask, "--db", db_path)
        assert out.exit_code == 0, out.stdout
        return max(r["output_tokens_per_s_per_user"] for r in json.loads(out.stdout)["results"])

    assert fastest(db) == pytest.approx(fastest(tmp_path / "empty.db"), rel=1e-9)
