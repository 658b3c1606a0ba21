"""A closed loop of clients sending one-length requests together: the simulation says when its clients
stayed in step (each round admitted in one step), ``measurements show`` then names the approximation as
the figure to compare, and a token budget that splits a round's prompts over steps breaks the step."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from inferplan.inputs.deployment import Deployment
from inferplan.inputs.workload import Workload
from inferplan.measurements.compare import compare_runs
from inferplan.report.measured_chart import run_text
from inferplan.search.simulation import SimulationQuery, simulate_deployment
from inferplan.shells.cli import app
from inferplan.store import Store

DATA = Path(__file__).parent / "data" / "measurements"
C8 = {"model": "llama-3.1-8b", "gpu": "h100-sxm"}  # the c8 fixture's run: 8 clients, 1024/256 tokens


def _closed_loop(**deployment):
    return simulate_deployment(SimulationQuery(deployment=Deployment(**C8, **deployment), clients=8, requests=400,
                                               workload=Workload(input_len=1024, output_len=256)))


def test_a_round_the_budget_holds_whole_stays_in_step_and_says_so():
    report = _closed_loop()  # 8 x 1024 prompt tokens: vLLM's 8,192-token budget on an H100 holds the round
    assert report.simulation.in_step
    assert report.simulation.ttft_p50_s == pytest.approx(report.simulation.ttft_p99_s)
    assert any("stayed in step" in n and "approximation is the figure" in n for n in report.notes)


def test_a_budget_that_splits_the_round_spreads_the_clients_near_the_steady_state():
    report = _closed_loop(max_num_batched_tokens=2048)
    sim, approx = report.simulation, report.approximation
    assert not sim.in_step
    assert sim.ttft_p50_s < sim.ttft_p99_s
    assert sim.ttft_p50_s < 2 * approx.ttft_p50_s  # no whole round's prefill in every first token
    assert not any("stayed in step" in n for n in report.notes)


def test_open_arrivals_are_never_in_step():
    report = simulate_deployment(SimulationQuery(deployment=Deployment(**C8), request_rate_per_s=3.0, requests=400,
                                                 workload=Workload(input_len=1024, output_len=256)))
    assert not report.simulation.in_step


def test_measurements_show_names_the_figure_to_compare_on_the_c8_run(tmp_path):
    runner, db = CliRunner(), str(tmp_path / "runs.db")
    imported = runner.invoke(app, ["measurements", "import", str(DATA / "vllm_bench_serve_c8.json"), "--gpu", "h100-sxm",
                                   "--db", db])
    assert imported.exit_code == 0, imported.output
    shown = runner.invoke(app, ["measurements", "show", "1", "--db", db, "--json"])
    assert shown.exit_code == 0, shown.output
    tails = [p["tails"] for p in json.loads(shown.stdout)["points"] if p.get("tails")]
    assert tails and tails[0]["trust"].startswith("compare the approximation")
    text = " ".join(runner.invoke(app, ["measurements", "show", "1", "--db", db], env={"COLUMNS": "200"}).output.split())
    assert "compare the approximation: the simulated clients stayed in step" in text


def test_a_lone_client_is_not_in_step_with_anyone():
    report = simulate_deployment(SimulationQuery(deployment=Deployment(**C8), clients=1, requests=50,
                                                 workload=Workload(input_len=1024, output_len=256)))
    assert not report.simulation.in_step



def test_the_pages_run_line_names_the_figure_to_compare(tmp_path):
    db = tmp_path / "runs.db"
    imported = CliRunner().invoke(app, ["measurements", "import", str(DATA / "vllm_bench_serve_c8.json"), "--gpu",
                                        "h100-sxm", "--db", str(db)])
    assert imported.exit_code == 0, imported.output
    (run,) = compare_runs(Store(db).list_measurements())
    assert "; compare the approximation: the simulated clients stayed in step" in run_text(run)
