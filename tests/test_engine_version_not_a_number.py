"""An engine_version that names no release number ("latest", "nightly", "main") is refused naming the
field and the releases allowed, on every path a plan takes (a weight format the GPU runs through a
fallback reads the release before the memory rule does)."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from inferplan.errors import InvalidScenarioError
from inferplan.inputs.deployment import Deployment
from inferplan.memory.fit import fit
from inferplan.shells.api import create_app
from inferplan.shells.cli import app

CASES = [("vllm", "nvfp4", "nightly"), ("vllm", "gguf-q4_k_m", "latest"), ("sglang", "gguf-q4_k_m", "main"),
         ("vllm", "bf16", "latest")]


@pytest.mark.parametrize("engine, quantization, version", CASES)
def test_the_library_refuses_it_naming_engine_version(catalog, engine, quantization, version):
    d = Deployment(model="qwen3-30b-a3b", gpu="rtx-4090", engine=engine, quantization=quantization,
                   engine_version=version)
    with pytest.raises(InvalidScenarioError) as err:
        fit(d, catalog)
    assert err.value.field == "engine_version" and version in str(err.value)
    assert ("0.20.0" if engine == "vllm" else "0.5.3") in err.value.allowed  # the releases with a memory rule


@pytest.mark.parametrize("engine, quantization, version", CASES[:3])
def test_the_cli_names_the_flag_and_does_not_crash(engine, quantization, version):
    out = CliRunner().invoke(app, ["fit", "--model", "qwen3-30b-a3b", "--gpu", "rtx-4090", "-q", quantization,
                                   "--engine", engine, "--engine-version", version])
    assert out.exit_code == 2 and isinstance(out.exception, SystemExit), out.output  # a usage error, not a crash
    assert "--engine-version" in out.output and "allowed:" in out.output and "Traceback" not in out.output


def test_the_api_answers_422_naming_the_json_field(tmp_path):
    client = TestClient(create_app(tmp_path / "test.db"))
    got = client.post("/api/fit", json={"model": "qwen3-30b-a3b", "gpu": "rtx-4090", "quantization": "gguf-q4_k_m",
                                        "engine": "vllm", "engine_version": "latest"})
    assert got.status_code == 422, got.text
    error = got.json()["error"]
    assert error["field"] == "engine_version" and "latest" in error["message"] and "0.20.0" in error["allowed"]
