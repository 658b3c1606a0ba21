"""A deployment stating its data-parallel size over a whole number of TP × PP × DP instances runs that many
copies: deploy checks one copy as fit does, prints one copy's command with the copies note, and the
Kubernetes manifest runs them as replicas, as a search pick with replicas says (deploy.checks.one_instance)."""

from __future__ import annotations

import yaml
from typer.testing import CliRunner

from inferplan.deploy import launch_plan
from inferplan.deploy.checks import one_instance
from inferplan.inputs.deployment import Deployment
from inferplan.shells.cli import app

DSV3 = ["deploy", "--model", "deepseek-v3", "--gpu", "b200", "-dp", "8", "--enable-expert-parallel"]


def test_deploy_runs_whole_copies_of_a_stated_data_parallel_instance_as_k8s_replicas():
    r = CliRunner().invoke(app, [*DSV3, "--gpus", "40", "--format", "k8s"])
    assert r.exit_code == 0, r.output
    deployment = next(doc for doc in yaml.safe_load_all(r.stdout) if doc["kind"] == "Deployment")
    assert deployment["spec"]["replicas"] == 5
    limits = deployment["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]
    assert limits["nvidia.com/gpu"] == 8
    assert "5 replicas" in r.stderr


def test_the_copies_note_and_the_command_agree(catalog):
    d = Deployment(model="deepseek-v3", gpu="b200", gpus=40, data_parallel_size=8, enable_expert_parallel=True)
    plan = launch_plan(d, catalog)
    assert any("one of 5 copies" in note for note in plan.command.notes)
    assert plan.command.argv[plan.command.argv.index("--data-parallel-size") + 1] == "8"


def test_gpus_that_are_not_whole_copies_are_still_refused():
    r = CliRunner().invoke(app, [*DSV3, "--gpus", "42"])
    assert r.exit_code == 2 and "--data-parallel-size" in r.output


def test_one_instance_leaves_an_exact_or_unstated_layout_alone():
    d = Deployment(model="qwen3-8b", gpu="h100", gpus=8, data_parallel_size=8)
    assert one_instance(d) == d
    assert one_instance(d.model_copy(update={"data_parallel_size": None})).gpus == 8
    assert one_instance(d.model_copy(update={"gpus": 24, "data_parallel_size": 4,
                                             "tensor_parallel_size": 2})).gpus == 8


def test_one_instance_takes_tp_times_pp_times_a_stated_dp():
    """memory.layout.instance_gpus: the GPUs one launch command drives and one search cell takes, with the
    data-parallel ranks counted only where the deployment states them."""
    from inferplan.memory.layout import instance_gpus

    base = dict(model="deepseek-v3", gpu="b200", tensor_parallel_size=2, pipeline_parallel_size=3)
    assert instance_gpus(Deployment(**base)) == 6
    assert instance_gpus(Deployment(**base, data_parallel_size=4)) == 24
