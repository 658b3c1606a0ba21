"""--enforce-eager is taken wherever a vLLM deployment is stated (fit, perf, simulate, deploy, acceptance,
measurements import, the API bodies): memory counts no CUDA graphs, the speed figures still assume them and
say so (no speed effect of eager mode is modelled), and a stored eager run serves only an eager estimate."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

from fastapi.testclient import TestClient
from typer.testing import CliRunner

from inferplan.shells.api import create_app
from inferplan.shells.cli import app

DATA = Path(__file__).parent / "data" / "measurements"
QWEN = ["--model", "qwen3-8b", "--gpu", "h100"]
runner = CliRunner()


def cli(*args):
    r = runner.invoke(app, [str(a) for a in args])
    assert r.exit_code == 0, r.output
    return r


def _perf(*flags) -> dict:
    return json.loads(cli("perf", *flags, "--json").stdout)


def test_perf_takes_eager_for_memory_and_says_its_speed_assumes_cuda_graphs():
    graphs, eager = _perf(*QWEN, "--concurrency", 8), _perf(*QWEN, "--concurrency", 8, "--enforce-eager")
    assert eager["max_concurrency"] > graphs["max_concurrency"]  # no graphs reserved: more KV room
    assert eager["tpot_s"] == graphs["tpot_s"] and eager["ttft_s"] == graphs["ttft_s"]  # no invented factor
    said = [a for a in eager["assumptions"] if "speed figures assume CUDA graphs" in a]
    assert len(said) == 1 and "--enforce-eager" in said[0]
    assert not any("speed figures assume CUDA graphs" in a for a in graphs["assumptions"])


def test_simulate_takes_eager_and_notes_that_its_speeds_assume_cuda_graphs():
    args = ["simulate", *QWEN, "--request-rate", 2, "--requests", 500, "--json"]
    eager = json.loads(cli(*args, "--enforce-eager").stdout)
    graphs = json.loads(cli(*args).stdout)
    assert any("speed figures assume CUDA graphs" in n for n in eager["notes"])
    assert not any("CUDA graphs" in n for n in graphs["notes"])


def test_an_eager_acceptance_pack_launches_predicts_and_imports_an_eager_run(tmp_path):
    out = tmp_path / "pack"
    cli("acceptance", *QWEN, "--enforce-eager", "--workload", "chat-seat", "--out", out)
    assert "--enforce-eager" in shlex.split((out / "launch.sh").read_text().splitlines()[-1])
    predictions = json.loads((out / "predictions.json").read_text())
    assert predictions["deployment"]["enforce_eager"] is True
    readme = (out / "README.md").read_text().splitlines()
    imported = shlex.split(next(x for x in readme if "measurements import" in x))
    assert "--enforce-eager" in imported
    db = tmp_path / "runs.db"
    # the stored file is of llama-3.1-8b: imported with the pack's launch flags as an eager run
    at = imported.index("--gpu")
    stored = cli("measurements", "import", DATA / "vllm_bench_serve_c8.json", "--model", "llama-3.1-8b",
                 *[a for a in imported[at:] if a != "<version>" and a != "--engine-version"], "--engine-version", "0.11.0",
                 "--db", db, "--json")
    run = json.loads(stored.stdout)["imported"][0]
    assert run["enforce_eager"] is True
    shown = json.loads(cli("measurements", "show", run["id"], "--db", db, "--json").stdout)
    assert shown["points"][0]["problem"] is None
    # perf plans on the eager run for an eager launch only
    at = ["--model", "llama-3.1-8b", "--gpu", "h100", "--input-len", 1024, "--output-len", 256, "--concurrency", 8,
          "--max-model-len", run["max_model_len"], "--db", db]
    assert _perf(*at, "--enforce-eager")["source"] == "measured-local"
    assert _perf(*at)["source"] == "calibrated-model"


def test_the_api_takes_eager_in_perf_and_in_an_import(tmp_path):
    client = TestClient(create_app(tmp_path / "api.db"))
    body = {"deployment": {"model": "qwen3-8b", "gpu": "h100", "enforce_eager": True},
            "workload": {"input_len": 1024, "output_len": 256, "concurrency": 8}}
    got = client.post("/api/perf", json=body)
    assert got.status_code == 200, got.text
    assert any("speed figures assume CUDA graphs" in a for a in got.json()["assumptions"])
    files = [{"name": "c8.json", "content": (DATA / "vllm_bench_serve_c8.json").read_text()}]
    got = client.post("/api/measurements", json={"files": files, "provenance": {
        "model": "llama-3.1-8b", "gpu": "h100", "engine": "vllm", "engine_version": "0.11.0", "enforce_eager": True}})
    assert got.status_code == 201, got.text
    assert got.json()[0]["enforce_eager"] is True
