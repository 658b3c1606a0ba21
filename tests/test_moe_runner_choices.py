"""SGLang's --moe-runner-backend: its default (auto, engine_flags.yaml engine_default) stated is the same launch as
none stated, and a value its parser does not accept (choices) is refused naming the field and the values it takes,
on import, perf and deploy (exit 2, HTTP 422); an engine without the setting refuses it whatever the value."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from inferplan.catalog.flags_schema import flags_for
from inferplan.errors import InvalidScenarioError
from inferplan.inputs.deployment import Deployment
from inferplan.inputs.workload import Workload
from inferplan.measurements.records import RunProvenance, read_runs
from inferplan.performance.serving import estimate
from inferplan.shells.api import create_app
from inferplan.shells.cli import app

DATA = Path(__file__).parent / "data" / "measurements"
QWEN = ["--model", "qwen3-30b-a3b", "--gpu", "h100-sxm", "--engine", "sglang"]
runner = CliRunner()


def run(catalog, **stated):
    given = RunProvenance(model="qwen3-30b-a3b", gpu="h100-sxm", engine="sglang", measured_by="lab", **stated)
    name = "sglang_bench_serving.jsonl"
    (r,) = read_runs(catalog, [(name, (DATA / name).read_bytes())], given)
    return r.model_copy(update={"id": 1})


def test_the_flag_data_lists_sglangs_choices_and_its_default(catalog):
    rule = flags_for(catalog, "sglang").settings["moe_runner_backend"]
    assert rule.engine_default == "auto" and {"auto", "marlin", "flashinfer_mxfp4", "deep_gemm"} <= set(rule.choices)


def test_a_run_that_states_the_default_runner_is_the_same_launch_as_one_that_states_none(catalog):
    d = Deployment(model="qwen3-30b-a3b", gpu="h100-sxm", engine="sglang")
    w = Workload(input_len=1024, output_len=256, concurrency=4)
    plain, auto = (estimate(d, w, catalog, user_runs=(run(catalog, **s),)) for s in ({}, {"moe_runner_backend": "auto"}))
    assert plain.bound == auto.bound == "measured"
    assert auto.tpot_s == pytest.approx(plain.tpot_s, rel=1e-12)
    marlin = estimate(d, w, catalog, user_runs=(run(catalog, moe_runner_backend="marlin"),))
    assert "launched with moe_runner_backend marlin, planned with the engine's default" in marlin.assumptions[-1]


def test_a_runner_sglang_does_not_accept_is_refused_on_import(catalog):
    with pytest.raises(InvalidScenarioError) as exc:
        run(catalog, moe_runner_backend="bogus")
    assert exc.value.field == "moe_runner_backend" and "marlin" in exc.value.allowed


@pytest.mark.parametrize("command", [["perf", "--concurrency", "4"], ["deploy"], ["fit"]])
def test_the_cli_refuses_it_naming_the_flag_and_the_values(command):
    out = runner.invoke(app, [*command, *QWEN, "--moe-runner-backend", "bogus"])
    assert out.exit_code == 2
    assert "--moe-runner-backend" in out.output and "bogus" in out.output and "flashinfer_mxfp4" in out.output


def test_the_api_refuses_it_with_422(tmp_path):
    client = TestClient(create_app(tmp_path / "api.db"))
    r = client.post("/api/fit", json={"model": "qwen3-30b-a3b", "gpu": "h100-sxm", "engine": "sglang",
                                      "moe_runner_backend": "bogus"})
    assert r.status_code == 422 and "marlin" in r.json()["error"]["allowed"]
    assert client.post("/api/fit", json={"model": "qwen3-30b-a3b", "gpu": "h100-sxm", "engine": "sglang",
                                         "moe_runner_backend": "marlin"}).status_code == 200
