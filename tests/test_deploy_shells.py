"""``inferplan deploy`` and ``POST /api/deploy``: thin shells over inferplan.deploy.launch_plan."""

from __future__ import annotations

import json

import pytest
import yaml
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from inferplan.shells.api import create_app
from inferplan.shells.cli import app

runner = CliRunner()
BASE = ["deploy", "--model", "llama-3.1-8b", "--gpu", "H100"]


def test_cli_prints_the_launch_command():
    r = runner.invoke(app, [*BASE, "--tensor-parallel-size", "2", "--kv-cache-dtype", "fp8", "--max-num-seqs", "64"])
    assert r.exit_code == 0, r.output
    assert r.stdout.strip() == ("vllm serve meta-llama/Llama-3.1-8B-Instruct --tensor-parallel-size 2 "
                                "--kv-cache-dtype fp8 --max-num-seqs 64 --host 0.0.0.0 --port 8000")


def test_cli_json_has_argv_text_and_engine():
    r = runner.invoke(app, [*BASE, "--engine", "sglang", "--speculative-tokens", "3", "--speculative-method", "ngram",
                            "--role", "decode", "--json"])
    assert r.exit_code == 0, r.output
    command = json.loads(r.stdout)["command"]
    assert command["engine"] == "sglang" and command["role"] == "decode"
    assert command["argv"][:3] == ["python3", "-m", "sglang.launch_server"]
    assert "--disaggregation-mode" in command["argv"] and "NGRAM" in command["argv"]
    assert command["text"].startswith("python3 -m sglang.launch_server --model-path ")


def test_cli_k8s_is_two_yaml_documents():
    r = runner.invoke(app, [*BASE, "--gpus", "8", "--tensor-parallel-size", "4", "--format", "k8s"])
    assert r.exit_code == 0, r.output
    deployment, service = yaml.safe_load_all(r.stdout)
    assert (deployment["kind"], service["kind"]) == ("Deployment", "Service")
    assert deployment["spec"]["replicas"] == 2
    assert deployment["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"] == {"nvidia.com/gpu": 4}


@pytest.mark.parametrize(("args", "flag"), [
    (["--engine", "llamacpp", "--enable-expert-parallel"], "--enable-expert-parallel"),
    (["--engine", "trtllm", "--speculative-tokens", "2"], "--speculative-method"),
    (["--speculative-method", "draft_model", "--speculative-tokens", "2"], "--draft-model"),
    (["--speculative-tokens", "500"], "--speculative-tokens"),
    (["--engine", "mlx", "--format", "k8s"], "--format"),
    (["--format", "pdf"], "--format"),
    (["--role", "router"], "--role"),
    (["--kv-offloading-backend", "lmcache"], "--kv-offloading-backend"),
    (["--engine", "sglang", "--kv-offloading-size", "8"], "--kv-offloading-size"),
    (["--n-cpu-moe", "4"], "--n-cpu-moe"),
])
def test_cli_errors_name_the_flag(args, flag):
    r = runner.invoke(app, [*BASE, *args, "--json"])
    assert r.exit_code == 2
    assert json.loads(r.stdout)["error"]["field"] == flag


@pytest.fixture
def client(tmp_path):
    return TestClient(create_app(tmp_path / "test.db"))


def test_api_deploy_returns_the_command_and_manifest(client):
    r = client.post("/api/deploy", json={"deployment": {"model": "llama-3.1-8b", "gpu": "H100", "tensor_parallel_size": 2},
                                         "format": "k8s"})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["command"]["argv"][:2] == ["vllm", "serve"]
    assert [d["kind"] for d in yaml.safe_load_all(body["manifest"])] == ["Deployment", "Service"]


@pytest.mark.parametrize(("body", "loc"), [
    ({"deployment": {"model": "llama-3.1-8b", "gpu": "H100", "engine": "llamacpp", "enable_expert_parallel": True}},
     ["body", "deployment", "enable_expert_parallel"]),
    ({"deployment": {"model": "qwen2.5-7b", "gpu": "H100"}, "speculative": {"method": "eagle3", "tokens": 3}},
     ["body", "speculative", "draft_model"]),  # no catalogued EAGLE-3 draft to default to
    ({"deployment": {"model": "llama-3.1-8b", "gpu": "H100", "engine": "llamacpp"}, "role": "decode"}, ["body", "role"]),
    ({"deployment": {"model": "llama-3.1-8b", "gpu": "H100"}, "format": "pdf"}, ["body", "format"]),
    # drafts with no method, refused as perf refuses them: the engine's launch has no n-gram drafting ...
    ({"deployment": {"model": "qwen3-8b", "gpu": "H100", "engine": "trtllm"}, "speculative": {"tokens": 3}},
     ["body", "speculative", "method"]),
    # ... and an Ollama tag's runner takes no draft
    ({"deployment": {"model": "qwen3:8b", "gpu": "RTX 4090"}, "speculative": {"tokens": 3}},
     ["body", "speculative", "tokens"]),
])
def test_api_deploy_errors_name_the_body_path(client, body, loc):
    r = client.post("/api/deploy", json=body)
    assert r.status_code == 422
    assert r.json()["detail"][0]["loc"] == loc


def test_cli_prints_the_offload_flags_and_names_the_release_they_need():
    r = runner.invoke(app, [*BASE, "--cpu-offload-gb", "8", "--kv-offloading-size", "40", "--kv-offloading-backend",
                            "lmcache", "--host-memory-gb", "256"])
    assert r.exit_code == 0, r.output
    assert r.stdout.strip() == ("vllm serve meta-llama/Llama-3.1-8B-Instruct --cpu-offload-gb 8.0 --kv-offloading-size 40.0 "
                                "--kv-offloading-backend lmcache --host 0.0.0.0 --port 8000")
    assert "--kv-offloading-size" in r.stderr and "2026" in r.stderr


def test_api_deploy_carries_llamacpp_offload_flags(client):
    r = client.post("/api/deploy", json={"deployment": {"model": "qwen3-30b-a3b", "gpu": "RTX 4090", "engine": "llamacpp",
                                                        "quantization": "gguf-q4_k_m", "n_cpu_moe": 20,
                                                        "host_memory_gb": 64}, "format": "k8s"})
    assert r.status_code == 200, r.text
    args = next(yaml.safe_load_all(r.json()["manifest"]))["spec"]["template"]["spec"]["containers"][0]["args"]
    assert args[args.index("--n-cpu-moe") + 1] == "20" and args[args.index("--n-gpu-layers") + 1] == "999"


def test_cli_and_api_draft_as_perf_plans_when_no_method_is_given(client):
    """deepseek-r1 ships MTP layers: perf with --speculative-tokens plans an MTP draft, and so does deploy."""
    args = ["deploy", "--model", "deepseek-r1", "--gpu", "h200", "--gpus", "8", "--speculative-tokens", "2", "--json"]
    r = runner.invoke(app, args)
    assert r.exit_code == 0, r.output
    assert '"method":"mtp"' in json.loads(r.stdout)["command"]["text"]
    body = {"deployment": {"model": "deepseek-r1", "gpu": "h200", "gpus": 8}, "speculative": {"tokens": 2}}
    api = client.post("/api/deploy", json=body)
    assert api.status_code == 200, api.text
    assert api.json()["command"]["argv"] == json.loads(r.stdout)["command"]["argv"]


def test_an_mtp_draft_of_a_model_without_mtp_layers_names_the_method():
    """The memory layer's refusal (field mtp_draft) is deploy's --speculative-method and the body's
    speculative.method: where the user asked for it."""
    r = runner.invoke(app, [*BASE, "--speculative-method", "mtp", "--speculative-tokens", "2", "--json"])
    assert r.exit_code == 2
    assert json.loads(r.stdout)["error"]["field"] == "--speculative-method"


@pytest.mark.parametrize(("body", "loc"), [
    ({"deployment": {"model": "llama-3.1-8b", "gpu": "H100"}, "speculative": {"method": "mtp", "tokens": 2}},
     ["body", "speculative", "method"]),
    ({"deployment": {"model": "llama-3.1-8b", "gpu": "H100", "mtp_draft": True}, "speculative": {"method": "mtp", "tokens": 2}},
     ["body", "deployment", "mtp_draft"]),
])
def test_api_names_the_mtp_field_the_body_gave(client, body, loc):
    r = client.post("/api/deploy", json=body)
    assert r.status_code == 422
    assert r.json()["detail"][0]["loc"] == loc
