"""The image a manifest runs is the engine release the deployment is planned at, and deploy's JSON
names that release apart from the release its flag names were checked against."""

from __future__ import annotations

import json

import pytest
import yaml
from typer.testing import CliRunner

from inferplan.catalog.memory_rules import current_release
from inferplan.deploy import launch_plan
from inferplan.deploy.command import engine_flags
from inferplan.inputs.deployment import Deployment
from inferplan.shells.cli import app

QWEN = dict(model="qwen3-32b", gpu="H100", quantization="fp8", max_model_len=8192)


def _image(plan) -> str:
    deployment = [doc for doc in yaml.safe_load_all(plan.manifest) if doc["kind"] == "Deployment"][0]
    return deployment["spec"]["template"]["spec"]["containers"][0]["image"]


@pytest.mark.parametrize("engine, image", [("vllm", "vllm/vllm-openai:v{}"), ("sglang", "lmsysorg/sglang:v{}")])
def test_the_image_is_the_engines_current_release_by_default(catalog, engine, image):
    plan = launch_plan(Deployment(**QWEN, engine=engine), catalog, output_format="k8s")
    release = current_release(catalog, engine).release
    assert plan.command.engine_version == release
    assert _image(plan) == plan.image == image.format(release)
    assert plan.notes == ()


@pytest.mark.parametrize("stated, tag", [("0.8.5", "v0.8.5"), ("0.11", "v0.11.0"), ("0.8.5 V0", "v0.8.5")])
def test_the_image_follows_the_stated_engine_version(catalog, stated, tag):
    plan = launch_plan(Deployment(**QWEN, engine_version=stated), catalog, output_format="k8s")
    assert _image(plan) == f"vllm/vllm-openai:{tag}"


def test_a_vendor_without_an_image_per_release_runs_the_recorded_image_with_a_note(catalog):
    plan = launch_plan(Deployment(**{**QWEN, "gpu": "MI300X"}), catalog, output_format="k8s")
    release = current_release(catalog, "vllm").release
    assert _image(plan) == engine_flags(catalog, "vllm").images["amd"]
    assert any(release in note and _image(plan) in note for note in plan.notes)


def test_an_engine_with_no_release_planned_says_so(catalog):
    plan = launch_plan(Deployment(model="qwen3-32b", gpu="H100", engine="trtllm", max_model_len=8192), catalog,
                       output_format="k8s")
    assert plan.command.engine_version is None
    assert _image(plan) == engine_flags(catalog, "trtllm").images["nvidia"]
    assert any("names no trtllm release" in note for note in plan.notes)


def test_deploy_json_names_the_planned_release_and_the_flag_tables_apart(catalog):
    flags = engine_flags(catalog, "vllm")
    for stated, release in ((None, current_release(catalog, "vllm").release), ("0.8.5", "0.8.5")):
        argv = ["deploy", "--model", "qwen3-32b", "--gpu", "H100", "-q", "fp8", "--max-model-len", "8192", "--json"]
        result = CliRunner().invoke(app, argv + (["--engine-version", stated] if stated else []))
        assert result.exit_code == 0, result.output
        command = json.loads(result.stdout)["command"]
        assert command["engine_version"] == release
        assert command["flags_checked_against"] == flags.version != release
