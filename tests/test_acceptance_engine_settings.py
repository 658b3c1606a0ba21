"""An acceptance pack's launch command states engine settings that change what is predicted — the KV cache dtype,
the sequence and step caps, the memory fraction, llama.cpp's micro-batch, SGLang's MoE runner — and its import line
carries them, so ``measurements import`` records them and ``validate --mine`` predicts the run as the pack did."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest
from typer.testing import CliRunner

from inferplan.shells.cli import app

from acceptance_runs import compared, predicted, run_the_import_line

runner = CliRunner()
DATA = Path(__file__).parent / "data" / "measurements"


def cli(*args):
    return runner.invoke(app, [str(a) for a in args])


def _pack(out: Path, *flags) -> tuple[dict, list[str], list[str]]:
    r = cli("acceptance", *flags, "--workload", "chat-seat", "--out", out)
    assert r.exit_code == 0, r.output
    line = next(x for x in (out / "README.md").read_text().splitlines() if "measurements import" in x)
    return (json.loads((out / "predictions.json").read_text()), shlex.split(line),
            shlex.split((out / "launch.sh").read_text().splitlines()[-1]))


VLLM = (["--model", "qwen3-30b-a3b", "--gpu", "h100", "--engine", "vllm"],
        {"--kv-cache-dtype": "fp8", "--max-num-seqs": "16", "--max-num-batched-tokens": "1024",
         "--gpu-memory-utilization": "0.85"})
LLAMACPP = (["--model", "qwen3-8b", "--gpu", "rtx-4090", "--engine", "llamacpp", "-q", "gguf-q4_k_m"],
            {"--kv-cache-dtype": "q8_0", "--max-num-seqs": "4", "--max-num-batched-tokens": "1024", "--ubatch-size": "128"})
SGLANG = (["--model", "qwen3-30b-a3b", "--gpu", "h100", "--engine", "sglang", "-q", "awq"],
          {"--kv-cache-dtype": "fp8", "--max-num-seqs": "16", "--gpu-memory-utilization": "0.8",
           "--moe-runner-backend": "marlin"})


@pytest.mark.parametrize(("deployment", "settings"), [VLLM, LLAMACPP, SGLANG], ids=["vllm", "llamacpp", "sglang"])
def test_a_pack_that_sets_engine_settings_is_imported_and_compared_with_them(tmp_path, deployment, settings):
    stated = [x for flag, value in settings.items() for x in (flag, value)]
    predictions, line, launch = _pack(tmp_path / "pack", *deployment, *stated)
    for flag, value in settings.items():
        assert line[line.index(flag) + 1] == value  # the import line states what the launch command does
    plain, plain_line, _ = _pack(tmp_path / "plain", *deployment)
    assert "--kv-cache-dtype" not in plain_line  # auto: left to the engine
    assert predicted(plain) != predicted(predictions)  # the settings change what is predicted
    run = run_the_import_line(tmp_path / "pack", predictions, line, tmp_path / "runs.db")
    for flag, value in settings.items():
        assert str(run[flag[2:].replace("-", "_")]) == value
    assert compared(tmp_path / "runs.db") == predicted(predictions)
    shown = " ".join(cli("measurements", "show", run["id"], "--db", tmp_path / "runs.db").stdout.split())
    assert all(f"{flag} {value}" in shown for flag, value in settings.items())


RUN = [DATA / "measured.csv", "--model", "qwen3-30b-a3b", "--gpu", "h100"]


@pytest.mark.parametrize(("flags", "flag", "allowed"), [
    (["--gpu-memory-utilization", 1.5], "--gpu-memory-utilization", "1"),
    (["--max-num-seqs", 0], "--max-num-seqs", "1"),
    (["--kv-cache-dtype", "q4_0"], "--kv-cache-dtype", "fp8"),
    (["--kv-cache-dtype", "fp7"], "--kv-cache-dtype", "fp8"),
    (["--ubatch-size", 128], "--ubatch-size", "llamacpp"),
    (["--moe-runner-backend", "marlin"], "--moe-runner-backend", "sglang"),
    (["--engine", "llamacpp", "-q", "gguf-q4_k_m", "--gpu-memory-utilization", 0.9], "--gpu-memory-utilization", "vllm"),
])
def test_a_setting_the_engine_cannot_have_run_is_refused_naming_its_flag(tmp_path, flags, flag, allowed):
    r = cli("measurements", "import", *RUN, *flags, "--db", tmp_path / "runs.db", "--json")
    assert r.exit_code == 2, r.output
    error = json.loads(r.stdout)["error"]
    assert error["field"] == flag and allowed in error["allowed"]
    assert json.loads(cli("measurements", "list", "--db", tmp_path / "runs.db", "--json").stdout)["measurements"] == []


def test_a_kv_cache_dtype_of_auto_is_stored_as_the_engines_default(tmp_path):
    r = cli("measurements", "import", *RUN, "--kv-cache-dtype", "auto", "--db", tmp_path / "runs.db", "--json")
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["imported"][0]["kv_cache_dtype"] is None


def test_export_writes_the_settings_a_speed_point_states_and_the_rest_as_a_caveat(tmp_path):
    from inferplan.catalog.points_schema import SpeedPoint

    r = cli("measurements", "import", *RUN, "--kv-cache-dtype", "fp8", "--max-num-seqs", 16, "--gpu-memory-utilization",
            0.8, "--db", tmp_path / "runs.db", "--json")
    assert r.exit_code == 0, r.output
    exported = cli("measurements", "export", "--db", tmp_path / "runs.db", "--json")
    (run,) = json.loads(exported.stdout)
    point = run["speed_points"][0]
    assert (point["kv_cache_dtype"], point["max_num_seqs"]) == ("fp8", 16)
    assert "--gpu-memory-utilization 0.8" in point["caveats"][0]
    assert SpeedPoint.model_validate(point).kv_cache_dtype == "fp8"


def test_the_api_lists_the_choices_of_a_runs_upload_and_stores_the_settings(tmp_path):
    from fastapi.testclient import TestClient

    from inferplan.memory.mtp import SPECULATIVE_METHODS
    from inferplan.shells.api import create_app

    client = TestClient(create_app(tmp_path / "api.db"))
    choices = client.get("/api/measurements/choices").json()
    assert choices["speculative_methods"] == list(SPECULATIVE_METHODS)
    assert choices["kv_offloading_backends"] == ["native", "lmcache"]
    assert "q8_0" in choices["kv_cache_dtypes"]["llamacpp"] and "q8_0" not in choices["kv_cache_dtypes"]["vllm"]
    assert "kt-kernel" in choices["kt_releases"] and "vllm" in choices["engines"]
    body = {"files": [{"name": "measured.csv", "content": (DATA / "measured.csv").read_text()}],
            "provenance": {"model": "qwen3-30b-a3b", "gpu": "h100", "kv_cache_dtype": "fp8", "max_num_seqs": 32,
                           "max_num_batched_tokens": 2048, "gpu_memory_utilization": 0.85}}
    r = client.post("/api/measurements", json=body)
    assert r.status_code == 201, r.text
    (run,) = r.json()
    assert (run["kv_cache_dtype"], run["max_num_seqs"], run["max_num_batched_tokens"], run["gpu_memory_utilization"]) == \
        ("fp8", 32, 2048, 0.85)
    bad = client.post("/api/measurements", json={**body, "provenance": {**body["provenance"], "kv_cache_dtype": "q4_0"}})
    assert bad.status_code == 422 and bad.json()["detail"][0]["loc"] == ["body", "provenance", "kv_cache_dtype"]
