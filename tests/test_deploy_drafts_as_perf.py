"""Draft tokens with no method named are drafted as ``perf`` plans them (``memory.mtp.with_unnamed_drafts``, the one
rule): ``deploy`` launches the same method, and where that rule refuses (an engine whose launch has no n-gram
drafting, an Ollama tag whose runner takes no draft) ``deploy`` refuses with the same field and allowed list."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from inferplan.catalog.loader import load_catalog
from inferplan.deploy import launch_command
from inferplan.deploy.command import Speculative, planned_speculative
from inferplan.errors import InferplanError
from inferplan.inputs.deployment import Deployment
from inferplan.inputs.workload import Workload
from inferplan.memory.hardware import with_default_engine
from inferplan.performance.context import ServingContext
from inferplan.performance.serving import estimate
from inferplan.shells.cli import app

CATALOG = load_catalog()
DRAFTS = Workload(input_len=1000, output_len=200, concurrency=1, speculative_tokens=3, acceptance_rate=0.6)


def _perf_method(d: Deployment) -> str:
    planned = ServingContext(CATALOG, with_default_engine(d, CATALOG), DRAFTS).d
    return "mtp" if planned.mtp_draft else planned.speculative_method


@pytest.mark.parametrize(("d", "method"), [
    (Deployment(model="qwen3-8b", gpu="h100"), "ngram"),  # vLLM: no MTP layers, so n-gram
    (Deployment(model="qwen3-8b", gpu="h100", engine="sglang"), "ngram"),
    (Deployment(model="glm-4.5-air", gpu="h100", gpus=4), "mtp"),  # the model's MTP layers
])
def test_deploy_launches_the_method_perf_plans(d, method):
    assert _perf_method(d) == method
    spec = planned_speculative(with_default_engine(d, CATALOG), CATALOG, Speculative(tokens=3))
    assert spec.method == method
    assert method in launch_command(d, CATALOG, speculative=Speculative(tokens=3)).text.lower()


@pytest.mark.parametrize("d", [
    Deployment(model="qwen3-8b", gpu="h100", engine="trtllm"),  # no n-gram drafting in its launch
    Deployment(model="qwen3-8b", gpu="h100", engine="llamacpp"),
    Deployment(model="qwen3:8b", gpu="rtx-4090"),  # an Ollama tag: its runner takes no draft
])
def test_deploy_refuses_as_perf_refuses(d):
    with pytest.raises(InferplanError) as perf:
        estimate(d, DRAFTS, CATALOG)
    with pytest.raises(InferplanError) as deploy:
        launch_command(d, CATALOG, speculative=Speculative(tokens=3))
    assert (deploy.value.field, deploy.value.allowed) == (perf.value.field, perf.value.allowed)
    assert str(deploy.value) == str(perf.value)


@pytest.mark.parametrize("method", ["ngram", "mtp", "eagle3", "draft_model"])
def test_deploy_refuses_a_named_method_on_an_ollama_tag_as_perf_refuses(method):
    d = Deployment(model="qwen3:8b", gpu="rtx-4090", speculative_method=method)
    with pytest.raises(InferplanError) as perf:
        estimate(d, DRAFTS, CATALOG)
    with pytest.raises(InferplanError) as deploy:
        launch_command(d, CATALOG, speculative=Speculative(tokens=3, method=method))
    assert (deploy.value.field, deploy.value.allowed) == (perf.value.field, perf.value.allowed)
    assert str(deploy.value) == str(perf.value) and perf.value.field == "speculative_tokens"


def test_the_cli_deploy_refuses_a_named_method_as_perf_does():
    flags = ["--model", "qwen3:8b", "--gpu", "rtx-4090", "--speculative-tokens", "3", "--speculative-method", "ngram"]
    perf, deploy = (CliRunner().invoke(app, [command, *flags]) for command in ("perf", "deploy"))
    assert (perf.exit_code, deploy.exit_code) == (2, 2), deploy.output
    assert "runs without one" not in deploy.output
