"""A fit's smallest instance, and the "more GPUs" suggestion built from it, is a split the engine's
launcher starts (engine_flags.yaml): ``deploy`` launches every layout ``fit`` suggests."""

from __future__ import annotations

import pytest

from inferplan.catalog.flags_schema import flags_for
from inferplan.catalog.loader import load_catalog
from inferplan.deploy import launch_command
from inferplan.inputs.deployment import Deployment
from inferplan.memory.suggest import fit_or_suggest

CATALOG = load_catalog()


@pytest.mark.parametrize(("engine", "tp", "pp", "launches"), [
    ("mlx", 2, 1, False), ("mlx", 1, 2, False),  # mlx_lm.server: no tensor or pipeline flag
    ("ktransformers", 2, 1, True), ("ktransformers", 1, 2, False),  # --tp-size only
    ("llamacpp", 2, 1, True), ("llamacpp", 1, 2, True), ("llamacpp", 2, 2, False),  # one --split-mode
    ("vllm", 4, 2, True), ("sglang", 4, 2, True), ("trtllm", 4, 2, True), ("mlx", 1, 1, True),
])
def test_which_splits_each_launcher_starts(engine, tp, pp, launches):
    assert flags_for(CATALOG, engine).launches_split(tp, pp) is launches


@pytest.mark.parametrize("d", [
    Deployment(model="llama-3.1-70b", gpu="apple-m4-max", engine="mlx"),  # held by 2 × M4 Max only pipelined
    Deployment(model="qwen3-235b-a22b", gpu="rtx-4090", engine="ktransformers", host_memory_gb=512,
               kt_num_gpu_experts=64),  # held by TP 8 × PP 2, which sglang-kt cannot start
])
def test_no_more_gpus_suggestion_the_engine_cannot_launch(d):
    r = fit_or_suggest(d, CATALOG)
    assert not r.fits and r.smallest_fit is None
    assert "gpus" not in {s.kind for s in r.suggestions}


@pytest.mark.parametrize("d", [
    Deployment(model="deepseek-r1", gpu="rtx-4090", engine="llamacpp", quantization="gguf-q4_k_m"),
    Deployment(model="qwen3-235b-a22b", gpu="h100", engine="ktransformers", host_memory_gb=512, kt_num_gpu_experts=128),
    Deployment(model="llama-3.1-405b", gpu="h100", engine="vllm"),
    Deployment(model="llama-3.1-405b", gpu="h100", engine="trtllm", quantization="fp8"),
])
def test_every_more_gpus_suggestion_launches(d):
    suggested = [s for s in fit_or_suggest(d, CATALOG).suggestions if s.kind == "gpus"]
    assert suggested
    for s in suggested:
        launch_command(d.model_copy(update=s.changes), CATALOG)  # raises when the engine cannot start it


def test_gpus_alone_on_an_engine_that_cannot_split_one_instance_runs_copies_and_deploy_launches_one():
    """mlx_lm.server starts one device: --gpus 2 is two copies (not a pipelined instance deploy
    refuses), deploy launches one of them and says the rest run beside it; k8s runs them as replicas."""
    from inferplan.deploy.manifest import kubernetes_manifest
    from inferplan.memory.fit import plan_memory

    d = Deployment(model="llama-3.1-8b", gpu="apple-m4-max", gpus=2, engine="mlx", quantization="mlx-4bit")
    p = plan_memory(d, CATALOG).result.parallel
    assert (p.tensor_parallel_size, p.pipeline_parallel_size, p.data_parallel_size) == (1, 1, 2)
    command = launch_command(d, CATALOG)
    assert "--data-parallel-size" not in command.argv and any("one of 2 copies" in n for n in command.notes)
    assert "replicas: 2" in kubernetes_manifest(Deployment(model="llama-3.1-8b", gpu="h100", gpus=2, engine="sglang",
                                                           tensor_parallel_size=1), CATALOG)
    vllm = launch_command(Deployment(model="llama-3.1-8b", gpu="h100", gpus=4), CATALOG)  # one TP 4 instance: no note
    assert "--tensor-parallel-size" in vllm.argv and not any("copies" in n for n in vllm.notes)


def test_a_layout_that_leaves_room_for_one_copy_says_nothing_of_copies():
    """TP 2 on 3 GPUs is one copy and an idle GPU: no 'one of 1 copies' note; TP 2 on 5 GPUs is two
    copies on 4 of them."""
    one = launch_command(Deployment(model="llama-3.1-8b", gpu="h100", gpus=3, tensor_parallel_size=2), CATALOG)
    assert not any("copies" in n for n in one.notes)
    two = launch_command(Deployment(model="llama-3.1-8b", gpu="h100", gpus=5, tensor_parallel_size=2), CATALOG)
    assert any("one of 2 copies the plan runs on 4 of the 5 GPUs (1 idle)" in n and "k8s" not in n for n in two.notes)
