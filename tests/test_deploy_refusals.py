"""``inferplan deploy`` and ``POST /api/deploy`` refuse what ``fit`` and ``perf`` refuse: an engine
that does not run on the accelerator, a context past the model's, a deployment that does not fit.
The CLI exits 2 naming the flag, the API answers 422 naming the JSON field."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from inferplan.shells.api import create_app
from inferplan.shells.cli import app

runner = CliRunner()

# (CLI arguments, the flag the CLI names, the deployment the API takes, the JSON field it names, words of the reason)
REFUSED = [
    (["--model", "qwen3-8b", "--gpu", "mi300x", "--engine", "trtllm"], "--engine",
     {"model": "qwen3-8b", "gpu": "mi300x", "engine": "trtllm"}, "deployment.engine", "does not run on"),
    (["--model", "llama-3.1-70b", "--gpu", "rtx-4090"], "--gpus",
     {"model": "llama-3.1-70b", "gpu": "rtx-4090"}, "deployment.gpus", "does not fit"),
    (["--model", "qwen3-8b", "--gpu", "h100-sxm", "--max-model-len", "1000000"], "--max-model-len",
     {"model": "qwen3-8b", "gpu": "h100-sxm", "max_model_len": 1000000}, "deployment.max_model_len", "40,960"),
]


@pytest.fixture
def client(tmp_path):
    return TestClient(create_app(tmp_path / "test.db"))


@pytest.mark.parametrize("args, flag, deployment, field, reason", REFUSED)
def test_cli_refuses_what_fit_and_perf_refuse(args, flag, deployment, field, reason):
    r = runner.invoke(app, ["deploy", *args])
    assert r.exit_code == 2, r.output
    assert r.stdout == ""  # no command is printed
    assert r.stderr.startswith(f"error: {flag}:") and reason in r.stderr


@pytest.mark.parametrize("args, flag, deployment, field, reason", REFUSED)
def test_api_refuses_what_fit_and_perf_refuse(client, args, flag, deployment, field, reason):
    r = client.post("/api/deploy", json={"deployment": deployment})
    assert r.status_code == 422, r.text
    error = r.json()["error"]
    assert error["field"] == field and reason in error["message"]


def test_a_deployment_that_fits_still_gets_its_command():
    r = runner.invoke(app, ["deploy", "--model", "llama-3.1-70b", "--gpu", "rtx-4090", "--gpus", "8", "-q", "int4-awq"])
    assert r.exit_code == 0, r.output
    assert r.stdout.startswith("vllm serve ")
