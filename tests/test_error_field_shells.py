"""A library refusal names the input at fault as the domain spells it (max_model_len), never as a CLI flag:
the CLI says it as its flag (--max-model-len), the HTTP API as the key it sits at in the body."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from inferplan.errors import InvalidScenarioError
from inferplan.inputs.deployment import Deployment
from inferplan.inputs.workload import Workload
from inferplan.memory.fit import fit
from inferplan.performance.serving import estimate
from inferplan.shells.api import create_app
from inferplan.shells.cli import app

NEXT = {"model": "qwen3-next-80b-a3b", "gpu": "h100-sxm", "engine": "sglang", "tensor_parallel_size": 4,
        "max_model_len": 32768, "max_mamba_cache_size": 4}  # 4 state slots, 5 a running request holds
OLLAMA = {"model": "qwen3:32b", "gpu": "rtx-4090", "host_memory_gb": 4}  # too little host RAM for --fit to split


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    return TestClient(create_app(tmp_path_factory.mktemp("fields") / "a.db"))


def _cli(*args: str) -> str:
    out = CliRunner().invoke(app, list(args), env={"COLUMNS": "250"})
    assert out.exit_code == 2, out.output
    return out.output


def test_a_state_pool_that_runs_no_request_names_its_field(catalog, client):
    with pytest.raises(InvalidScenarioError) as err:
        fit(Deployment(**NEXT))
    assert str(err.value).startswith("max_mamba_cache_size 4 leaves 4 state slot(s)") and "--" not in str(err.value)
    assert "error: --max-mamba-cache-size: --max-mamba-cache-size 4 leaves 4 state slot(s)" in _cli(
        "fit", "--model", NEXT["model"], "--gpu", NEXT["gpu"], "--engine", "sglang", "-tp", "4",
        "--max-model-len", "32768", "--max-mamba-cache-size", "4")
    answer = client.post("/api/fit", json=NEXT)
    assert answer.status_code == 422 and answer.json()["error"]["field"] == "max_mamba_cache_size"
    assert answer.json()["error"]["message"].startswith("max_mamba_cache_size 4 leaves")


def test_a_refusal_at_ollamas_context_names_the_context_field(catalog, client):
    with pytest.raises(InvalidScenarioError) as err:
        estimate(Deployment(**OLLAMA), Workload(), catalog)
    said = "at max_model_len 32,768, the context Ollama gives qwen3:32b on these GPUs (max_model_len states another)"
    assert said in str(err.value) and "--" not in str(err.value)
    assert said.replace("max_model_len", "--max-model-len") in _cli(
        "perf", "--model", "qwen3:32b", "--gpu", "rtx-4090", "--host-memory-gb", "4")
    answer = client.post("/api/perf", json={"deployment": OLLAMA})
    assert answer.status_code == 422 and answer.json()["error"]["field"] == "deployment.max_model_len"
    assert said in answer.json()["error"]["message"]
