"""The GPUs Ollama loads a tag on beyond ``--gpus N`` (server/sched.go selectLlamaServerPlacement): a system named
alone is one Ollama server, so a tag is planned on one of its GPUs where 80 % of one holds the prediction and else
over all of them, never as copies; OLLAMA_SCHED_SPREAD (``sched_spread``) turns the one-GPU choice off and is passed
in ``ollama serve``'s environment; the --fit note says the host RAM it needs in the shared wording."""

from __future__ import annotations

import pytest

from inferplan.catalog.loader import load_catalog
from inferplan.deploy import launch_command
from inferplan.errors import InvalidScenarioError
from inferplan.inputs.deployment import Deployment
from inferplan.inputs.workload import Workload
from inferplan.memory import fit_placement
from inferplan.memory.fit import fit
from inferplan.performance.serving import estimate

CATALOG = load_catalog()
BOX = "tinybox-green-v2"  # 4x RTX PRO 6000 Blackwell, 94.97 GiB each as the driver reports it


def test_a_system_named_alone_loads_a_small_tag_on_one_gpu():
    # qwen3:8b predicts 10.3 GiB, at most 80 % of one GPU's 94.97 GiB: one GPU, not four copies of one
    boxed = fit(Deployment(model="qwen3:8b", system=BOX), CATALOG)
    alone = fit(Deployment(model="qwen3:8b", gpu="rtx-pro-6000-blackwell", max_model_len=boxed.max_model_len), CATALOG)
    assert (boxed.parallel.gpus, boxed.parallel.data_parallel_size) == (1, 1)
    assert boxed.kv_cache_tokens == alone.kv_cache_tokens
    assert boxed.layout_note.startswith(f"{BOX}'s 4 GPUs: Ollama loads qwen3:8b on one of them alone")


def test_a_system_named_alone_spreads_a_large_tag_over_all_its_gpus():
    # llama3.3:70b at 131,072 tokens predicts 79.6 GiB, past 80 % of 94.97 GiB (75.98): one server over all four
    spread = fit(Deployment(model="llama3.3:70b", system=BOX), CATALOG)
    assert (spread.parallel.gpus, spread.parallel.pipeline_parallel_size, spread.parallel.data_parallel_size) == (4, 4, 1)
    assert "Ollama runs one server on them and spreads llama3.3:70b over all of them" in spread.layout_note
    cmd = launch_command(Deployment(model="llama3.3:70b", system=BOX), CATALOG)
    assert any(n.startswith(f"{BOX}'s 4 GPUs (the system named alone): Ollama runs one server") for n in cmd.notes)
    assert any(n.startswith("pipeline_parallel_size 4: not set") for n in cmd.notes)


def test_sched_spread_spreads_a_tag_one_gpu_holds():
    d = Deployment(model="qwen3:8b", gpu="rtx-4090", gpus=2, sched_spread=True)
    spread = fit(d, CATALOG)
    assert (spread.parallel.gpus, spread.parallel.pipeline_parallel_size) == (2, 2)
    assert estimate(d, Workload(concurrency=1), CATALOG).gpus == 2
    boxed = fit(Deployment(model="qwen3:8b", system=BOX, sched_spread=True), CATALOG)
    assert (boxed.parallel.gpus, boxed.parallel.pipeline_parallel_size) == (4, 4)


def test_deploy_passes_sched_spread_to_ollama_serve():
    cmd = launch_command(Deployment(model="qwen3:8b", gpu="rtx-4090", gpus=2, sched_spread=True), CATALOG)
    assert "OLLAMA_SCHED_SPREAD=1" in cmd.script
    assert any("OLLAMA_SCHED_SPREAD set, so Ollama spreads qwen3:8b over all of them" in n for n in cmd.notes)
    plain = launch_command(Deployment(model="qwen3:8b", gpu="rtx-4090", gpus=2), CATALOG)
    assert "OLLAMA_SCHED_SPREAD" not in plain.script


def test_sched_spread_is_refused_off_an_ollama_tag():
    with pytest.raises(InvalidScenarioError) as caught:
        fit(Deployment(model="qwen3-8b", gpu="h100", gpus=2, sched_spread=True), CATALOG)
    assert caught.value.field == "sched_spread"


def test_the_fit_placement_note_says_host_ram_in_the_shared_wording(monkeypatch):
    monkeypatch.setattr(fit_placement, "unstated_host_note", lambda used, reserved: f"NEEDS {used + reserved:.0f}")
    monkeypatch.setattr(fit_placement, "_PLACED", type(fit_placement._PLACED)())
    placed = fit(Deployment(model="qwen3:32b", gpu="rtx-3070", gpus=2), CATALOG)
    expected = placed.host_memory_bytes_used + placed.host_memory_reserved_bytes
    assert placed.placement_note.endswith(f"; NEEDS {expected:.0f}")
