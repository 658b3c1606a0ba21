"""A plan at a variant its release does not run by default launches that variant: vLLM 0.8.0-0.10.2 run V1
unless VLLM_USE_V1=0, so a plan at "0.8.5 V0" (the V0 memory rule) starts with it, in the shell line and
in the pod's environment; a release that runs the planned variant by default gets no variable."""

from __future__ import annotations

import pytest
import yaml

from inferplan.catalog.memory_rules import memory_rule
from inferplan.deploy import launch_plan
from inferplan.inputs.deployment import Deployment

QWEN = dict(model="qwen3-32b", gpu="H100", gpus=2, engine="vllm", max_model_len=8192)


def _env(plan) -> dict[str, str]:
    deployment = [doc for doc in yaml.safe_load_all(plan.manifest) if doc["kind"] == "Deployment"][0]
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    return {e["name"]: e["value"] for e in container.get("env", []) if "value" in e}  # not the token's secretKeyRef


@pytest.mark.parametrize("release", ["0.8.5 V0", "0.10.1 V0"])
def test_a_v0_plan_at_a_v1_release_launches_v0(catalog, release):
    number = release.split()[0]
    assert memory_rule(catalog, "vllm", number).variant == "V1"  # the release's bare number plans V1
    assert memory_rule(catalog, "vllm", release).variant == "V0"
    plan = launch_plan(Deployment(**QWEN, engine_version=release), catalog, output_format="k8s")
    assert plan.command.env == {"VLLM_USE_V1": "0"}
    assert plan.command.script.startswith("VLLM_USE_V1=0 vllm serve ")
    assert _env(plan) == {"VLLM_USE_V1": "0"}
    assert plan.image == f"vllm/vllm-openai:v{number}"


@pytest.mark.parametrize("release", ["0.8.5", "0.7.3 V0", "0.7.3", "0.6.4"])
def test_a_release_running_the_planned_variant_gets_no_variable(catalog, release):
    llama = {**QWEN, "model": "llama-3.1-8b"}  # Qwen3 loads from vLLM 0.8.4 (engine_support.yaml)
    plan = launch_plan(Deployment(**llama, engine_version=release), catalog, output_format="k8s")
    assert "VLLM_USE_V1" not in plan.command.script and _env(plan) == {}


def test_a_v0_plan_over_hosts_starts_its_engine_with_the_variable_where_the_engine_runs(catalog):
    from inferplan.deploy.command import launch_command

    command = launch_command(Deployment(model="qwen3-32b", gpu="H100", engine="vllm", tensor_parallel_size=8,
                                        pipeline_parallel_size=2, engine_version="0.8.5 V0"), catalog)
    head, worker = command.host_commands  # a Ray cluster: the head alone starts vLLM
    assert "VLLM_USE_V1=0 vllm serve " in head.script and "VLLM_USE_V1" not in worker.script
    assert "VLLM_USE_V1=0 vllm serve " in command.script
