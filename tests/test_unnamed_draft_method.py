"""Speculative decoding that names no method is priced as the engine's launch runs it, on the library path every
estimate takes (``memory.mtp.with_unnamed_drafts`` from ``ServingContext``), so the CLI, the API and the web page agree:
the model's MTP layers where planned, else ngram where the engine's launch flags list it (and ngram has no default
acceptance rate), else a refusal naming ``speculative_method`` and the methods the engine launches; an Ollama tag's
launch runs no draft, so its drafts are refused naming ``speculative_tokens``."""

import json

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from inferplan.catalog.flags_schema import flags_for
from inferplan.catalog.loader import load_catalog
from inferplan.errors import InferplanError
from inferplan.inputs.deployment import Deployment
from inferplan.inputs.workload import Workload
from inferplan.performance.serving import estimate
from inferplan.shells.api import create_app
from inferplan.shells.cli import app

CATALOG = load_catalog()
QWEN = {"model": "qwen3-8b", "gpu": "h100-sxm"}


@pytest.fixture(scope="module")
def client() -> TestClient:
    return TestClient(create_app())


def _cli(*args: str):
    return CliRunner().invoke(app, ["perf", *args, "--json"])


def test_cli_and_api_refuse_unstated_rate_alike_and_price_a_stated_one_alike(client):
    refused = _cli("--model", "qwen3-8b", "--gpu", "h100-sxm", "--speculative-tokens", "3")
    assert refused.exit_code == 2 and json.loads(refused.stdout)["error"]["field"] == "--acceptance-rate"
    body = {"deployment": QWEN, "workload": {"speculative_tokens": 3}}
    for route in ("/api/perf", "/api/frontier"):
        answer = client.post(route, json=body)
        assert answer.status_code == 422 and answer.json()["error"]["field"] == "workload.acceptance_rate", route
    priced = _cli("--model", "qwen3-8b", "--gpu", "h100-sxm", "--speculative-tokens", "3", "--acceptance-rate", "0.5")
    assert priced.exit_code == 0
    api = client.post("/api/perf", json={"deployment": QWEN, "workload": {"speculative_tokens": 3, "acceptance_rate": 0.5}})
    assert api.status_code == 200
    cli_est, api_est = json.loads(priced.stdout), api.json()
    for key in ("tokens_per_step", "acceptance_rate", "output_tokens_per_s_per_user", "ttft_s"):
        assert cli_est[key] == api_est[key], key
    assert api_est["tokens_per_step"] > 1


@pytest.mark.parametrize("engine, gpu", [("trtllm", "h100-sxm"), ("llamacpp", "rtx-4090"), ("mlx", "m4-max")])
def test_an_engine_whose_launch_has_no_ngram_refuses_naming_the_method_and_its_methods(client, engine, gpu):
    """Not a request for an acceptance rate: a stated one is refused alike, naming the methods the engine's launch
    flags list (engine_flags.yaml) that qwen3-8b (no MTP layers) can draft by."""
    methods = sorted(m for m in flags_for(CATALOG, engine).speculative.methods if m != "mtp")
    d = Deployment(model="qwen3-8b", gpu=gpu, engine=engine)
    for rate in (None, 0.5):
        with pytest.raises(InferplanError) as e:
            estimate(d, Workload(speculative_tokens=3, acceptance_rate=rate), CATALOG)
        assert e.value.field == "speculative_method"
        assert e.value.allowed == f"a method {engine} launches: {', '.join(methods)}"
        assert "acceptance_rate" not in str(e.value)
    answer = client.post("/api/perf", json={"deployment": {"model": "qwen3-8b", "gpu": gpu, "engine": engine},
                                            "workload": {"speculative_tokens": 3, "acceptance_rate": 0.5}})
    assert answer.status_code == 422 and answer.json()["error"]["field"] == "deployment.speculative_method"
    cli = _cli("--model", "qwen3-8b", "--gpu", gpu, "--engine", engine, "--speculative-tokens", "3",
               "--acceptance-rate", "0.5")
    assert cli.exit_code == 2 and json.loads(cli.stdout)["error"]["field"] == "--speculative-method"


def test_a_method_the_engine_does_not_launch_is_refused_as_deploy_refuses_it():
    d = Deployment(model="qwen3-8b", gpu="h100-sxm", engine="trtllm", speculative_method="ngram")
    with pytest.raises(InferplanError) as e:
        estimate(d, Workload(speculative_tokens=3, acceptance_rate=0.5), CATALOG)
    assert e.value.field == "speculative_method"
    assert e.value.allowed == ", ".join(sorted(flags_for(CATALOG, "trtllm").speculative.methods))


def test_an_mtp_model_on_an_engine_without_ngram_still_drafts_with_its_mtp_layers():
    d = Deployment(model="deepseek-v3", gpu="h200", gpus=8, engine="trtllm")
    assert estimate(d, Workload(speculative_tokens=1), CATALOG).tokens_per_step > 1


def test_an_ollama_tag_prices_no_drafts_its_launch_does_not_run(client):
    for method, rate in ((None, 0.5), ("draft_model", None)):
        d = Deployment(model="qwen3:8b", gpu="rtx-4090", speculative_method=method)
        with pytest.raises(InferplanError) as e:
            estimate(d, Workload(speculative_tokens=3, acceptance_rate=rate), CATALOG)
        assert e.value.field == "speculative_tokens" and "Ollama" in str(e.value) and "qwen3-8b" in e.value.allowed
    answer = client.post("/api/perf", json={"deployment": {"model": "qwen3:8b", "gpu": "rtx-4090"},
                                            "workload": {"speculative_tokens": 3, "acceptance_rate": 0.5}})
    assert answer.status_code == 422 and answer.json()["error"]["field"] == "workload.speculative_tokens"
    assert estimate(Deployment(model="qwen3:8b", gpu="rtx-4090"), Workload(), CATALOG).tokens_per_step == 1


def test_drafts_the_deployment_alone_states_are_refused_not_left_unpriced(client):
    """The workload's acceptance_rate is stated only beside its own speculative_tokens, so drafts only the deployment
    states could not be priced at a stated rate: refused naming the workload's field."""
    d = {**QWEN, "speculative_tokens": 3, "speculative_method": "ngram"}
    answer = client.post("/api/perf", json={"deployment": d})
    assert answer.status_code == 422 and answer.json()["error"]["field"] == "workload.speculative_tokens"
    both = client.post("/api/perf", json={"deployment": d, "workload": {"speculative_tokens": 3, "acceptance_rate": 0.5}})
    assert both.status_code == 200 and both.json()["tokens_per_step"] > 1
