"""A stored run answers only a deployment laid out as it was on the same GPUs: its tensor parallel size, pipeline
stages and experts spread or not (which, on the same GPUs, fix its data-parallel ranks). A run measured with the
experts spread over eight data-parallel ranks says nothing of eight pipeline stages, nor of eight ranks sharing
unsplit experts."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from inferplan.shells.cli import app

runner = CliRunner()
MOE = ["--model", "qwen3-30b-a3b", "--gpu", "h100", "--engine", "vllm"]
CSV = ("concurrency,input_tokens,output_tokens,ttft_ms,tpot_ms,output_tokens_per_s\n"
       "8,1024,256,300,40,190\n32,1024,256,500,50,600\n")


def cli(*args):
    return runner.invoke(app, [str(a) for a in args])


@pytest.fixture
def db(tmp_path):
    path, csv = tmp_path / "runs.db", tmp_path / "ep.csv"
    csv.write_text(CSV)
    r = cli("measurements", "import", csv, *MOE, "--gpus", 2, "-dp", 2, "--enable-expert-parallel", "--db", path)
    assert r.exit_code == 0, r.output
    return path


def perf(db, *layout):
    r = cli("perf", *MOE, "--gpus", 2, *layout, "--input-len", 1024, "--output-len", 256, "--concurrency", 16,
            "--db", db, "--json")
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


def test_the_run_answers_its_own_layout(db):
    assert perf(db, "-dp", 2, "--enable-expert-parallel")["source"] == "measured-local"


@pytest.mark.parametrize("layout", [("-pp", 2), ("-dp", 2)])
def test_the_run_does_not_answer_another_layout_on_the_same_gpus(db, layout):
    assert perf(db, *layout)["source"] != "measured-local"


def test_experts_spread_on_a_dense_model_are_refused_at_import_as_fit_refuses_them(tmp_path):
    csv = tmp_path / "dense.csv"
    csv.write_text(CSV)
    r = cli("measurements", "import", csv, "--model", "llama-3.1-8b", "--gpu", "h100", "--gpus", 2, "-dp", 2,
            "--enable-expert-parallel", "--db", tmp_path / "runs.db", "--json")
    assert r.exit_code == 2
    error = json.loads(r.stdout)["error"]
    assert error["field"] == "--enable-expert-parallel" and "dense model" in error["message"]


def test_vllms_expert_parallel_flag_on_one_gpu_is_the_launch_without_it(tmp_path):
    """vLLM spreads experts only where TP x DP > 1 (engines.yaml expert_parallel_needs_ranks): a run on one GPU
    launched with --enable-expert-parallel answers the one-GPU deployment without it, and the other way round."""
    path, csv = tmp_path / "runs.db", tmp_path / "ep.csv"
    csv.write_text(CSV)
    r = cli("measurements", "import", csv, *MOE, "--gpus", 1, "--enable-expert-parallel", "--db", path)
    assert r.exit_code == 0, r.output
    for layout in ((), ("--enable-expert-parallel",)):
        r = cli("perf", *MOE, "--gpus", 1, *layout, "--input-len", 1024, "--output-len", 256, "--concurrency", 16,
                "--db", path, "--json")
        assert r.exit_code == 0, r.output
        assert json.loads(r.stdout)["source"] == "measured-local"


@pytest.mark.parametrize("cell, said", [
    ("{tensor_parallel_size: 1, pipeline_parallel_size: 2}", "launched in 1 pipeline stage, planned in 2"),
    ("{tensor_parallel_size: 1, data_parallel_size: 2}", "launched with expert parallelism, planned without it")])
def test_plan_names_the_layout_a_run_was_launched_with(db, tmp_path, cell, said):
    scenario = tmp_path / "s.yaml"
    scenario.write_text("name: two ranks\nmodel: qwen3-30b-a3b\nplatform: {gpu: h100-sxm, gpus: 2, quote_usd_per_system: 60000}\n"
                        f"cell: {cell}\n"
                        "workload: {preset: chat-seat, cache_hit_rate: 0, input_tokens_per_request: 1024, "
                        "output_tokens_per_request: 256, output_share: 0.2}\ntarget_users: 100\n")
    r = cli("plan", scenario, "--draws", 0, "--db", db, "--json")
    assert r.exit_code == 0, r.output
    cell = json.loads(r.stdout)["capacity"]["cell"]
    assert cell["source"] != "measured"
    assert any(said in n for n in cell["own_runs"])  # in words a user reads, once
    assert not any("is not used" in a for a in cell["assumptions"])
