"""``inferplan simulate`` and ``POST /api/simulate``: one library call, errors naming the input."""

from __future__ import annotations

import json

from fastapi.testclient import TestClient
from typer.testing import CliRunner

from inferplan.shells.api import create_app
from inferplan.shells.cli import app

DEPLOY = ["--model", "llama-3.3-70b", "--gpu", "H100", "-q", "fp8", "-tp", "2"]


def invoke(*args):
    return CliRunner().invoke(app, list(args))


def test_simulate_json_carries_both_answers():
    r = invoke("simulate", *DEPLOY, "--request-rate", "2", "--requests", "2000", "--output-scv", "1", "--json")
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    sim, approx = out["simulation"], out["approximation"]
    assert sim["requests"] == 2000 and approx["stable"] is True
    for metric in ("ttft", "tpot", "e2e"):
        assert sim[f"{metric}_p50_s"] <= sim[f"{metric}_p95_s"] <= sim[f"{metric}_p99_s"]
        assert approx[f"{metric}_p50_s"] <= approx[f"{metric}_p95_s"] <= approx[f"{metric}_p99_s"]


def test_simulate_refuses_two_loads_and_a_bad_trace_row(tmp_path):
    r = invoke("simulate", *DEPLOY, "--request-rate", "2", "--clients", "4")
    assert r.exit_code == 2 and "one of" in r.output
    trace = tmp_path / "t.csv"
    trace.write_text("arrival_s,input_tokens,output_tokens\n0,100,10\n1,abc,10\n")
    r = invoke("simulate", *DEPLOY, "--trace", str(trace))
    assert r.exit_code == 2 and "row 2 (line 3), column input_tokens" in " ".join(r.output.split())
    r = invoke("simulate", *DEPLOY, "--request-rate", "-1")
    assert r.exit_code == 2 and "--request-rate" in r.output


def test_api_simulate_answers_and_addresses_errors(tmp_path):
    client = TestClient(create_app(tmp_path / "db.sqlite"))
    body = {"deployment": {"model": "llama-3.3-70b", "gpu": "H100", "quantization": "fp8", "tensor_parallel_size": 2},
            "workload": {"input_len": 512, "output_len": 128}, "clients": 8, "requests": 500}
    r = client.post("/api/simulate", json=body)
    assert r.status_code == 200 and r.json()["load"].startswith("closed loop of 8 clients")
    r = client.post("/api/simulate", json={**body, "deployment": {**body["deployment"], "quantization": "nope"}})
    assert r.status_code == 422 and r.json()["detail"][0]["loc"] == ["body", "deployment", "quantization"]
    rows = [{"arrival_s": 2, "input_tokens": 10, "output_tokens": 5}, {"arrival_s": 1, "input_tokens": 10, "output_tokens": 5}]
    r = client.post("/api/simulate", json={**body, "clients": None, "trace": rows})
    assert r.status_code == 422 and r.json()["detail"][0]["loc"] == ["body", "trace", "1", "arrival_s"]
