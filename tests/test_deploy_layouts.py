"""Launch commands that start the layout the plan counts: SGLang's attention data parallel with
expert parallelism, and llama.cpp's context shared by its slots (the memory plan allocating the
same context the command asks for)."""

from __future__ import annotations

import pytest

from inferplan.deploy import launch_command
from inferplan.inputs.deployment import Deployment
from inferplan.memory.fit import fit


def _value(argv: tuple[str, ...], flag: str) -> str | None:
    return argv[argv.index(flag) + 1] if flag in argv else None


MOE_DP = dict(model="qwen3-235b-a22b", gpu="h200-sxm", quantization="fp8-block", enable_expert_parallel=True)


@pytest.mark.parametrize("tp, dp", [(1, 2), (2, 2), (1, 8)])
def test_sglang_data_parallel_with_expert_parallel_is_dp_attention_over_every_gpu(catalog, tp, dp):
    """fit plans DP × EP with the experts spread over all TP × DP GPUs: SGLang runs that as
    --tp-size TP×DP --dp-size DP --enable-dp-attention --ep-size TP×DP, not DP whole copies."""
    d = Deployment(**MOE_DP, engine="sglang", gpus=tp * dp, tensor_parallel_size=tp, data_parallel_size=dp)
    argv = launch_command(d, catalog).argv
    assert _value(argv, "--tp-size") == str(tp * dp)
    assert _value(argv, "--dp-size") == str(dp)
    assert "--enable-dp-attention" in argv
    assert _value(argv, "--ep-size") == str(tp * dp)


def test_sglang_data_parallel_without_expert_parallel_starts_whole_copies(catalog):
    d = Deployment(model="qwen3-8b", gpu="h200-sxm", engine="sglang", gpus=2, data_parallel_size=2)
    argv = launch_command(d, catalog).argv
    assert _value(argv, "--dp-size") == "2" and "--tp-size" not in argv and "--enable-dp-attention" not in argv


@pytest.mark.parametrize("engine, expected", [
    ("vllm", ["--data-parallel-size", "2", "--enable-expert-parallel"]),
    ("trtllm", ["--tp_size", "2", "--ep_size", "2"]),
])
def test_other_engines_run_the_same_layout(catalog, engine, expected):
    d = Deployment(**MOE_DP, engine=engine, gpus=2, data_parallel_size=2)
    argv = launch_command(d, catalog).argv
    assert " ".join(expected) in " ".join(argv)


LLAMA = dict(model="qwen3-8b", gpu="rtx-4090", engine="llamacpp", quantization="gguf-q4_k_m", max_model_len=1300)


@pytest.mark.parametrize("slots", [1, 2, 4])
def test_llamacpp_ctx_size_gives_every_slot_max_model_len(catalog, slots):
    """--ctx-size is shared by the --parallel slots (each gets ctx-size / parallel)."""
    argv = launch_command(Deployment(**LLAMA, max_num_seqs=slots), catalog).argv
    assert int(_value(argv, "--ctx-size")) // int(_value(argv, "--parallel")) == 1300


def test_llamacpp_without_slots_asks_for_max_model_len_in_one_stated_slot(catalog):
    """One slot, as the plan prices it, stated: builds whose slot count defaults to auto open their own."""
    argv = launch_command(Deployment(**LLAMA), catalog).argv
    assert _value(argv, "--ctx-size") == "1300" and _value(argv, "--parallel") == "1"


@pytest.mark.parametrize("slots", [2, 4])
def test_llamacpp_memory_allocates_the_context_the_command_asks_for(catalog, slots):
    """The memory plan's cache is the command's --ctx-size (padded to 256 cells, then each slot's share padded to
    256 and the cache the slots × that: llama.cpp's n_ctx_seq), not one sequence's."""
    one = fit(Deployment(**LLAMA), catalog)
    many = fit(Deployment(**LLAMA, max_num_seqs=slots), catalog)
    per_cell = one.kv_cache_bytes_per_token
    ctx = int(_value(launch_command(Deployment(**LLAMA, max_num_seqs=slots), catalog).argv, "--ctx-size"))
    per_slot = -(-(-(-ctx // 256) * 256 // slots) // 256) * 256
    assert many.kv_cache_allocated_bytes_per_gpu == pytest.approx(per_slot * slots * per_cell)
    assert many.kv_cache_allocated_bytes_per_gpu > one.kv_cache_allocated_bytes_per_gpu


UNSIZED = dict(model="qwen3-0.6b", gpu="rtx-4090", engine="llamacpp", quantization="gguf-q8_0")


def test_llamacpp_states_the_one_slot_fit_plans_when_no_context_is_stated(catalog, tmp_path):
    """No --max-model-len, no --max-num-seqs: llama-server's own slot count is auto (4 over a unified
    cache), so the shell command, the k8s manifest and POST /api/deploy all state the slot fit plans."""
    from fastapi.testclient import TestClient

    from inferplan.deploy.manifest import kubernetes_manifest
    from inferplan.shells.api import create_app

    from inferplan.memory.suggest import fit_or_suggest

    started = fit_or_suggest(Deployment(**UNSIZED), catalog).started_slots
    assert started == 1
    assert _value(launch_command(Deployment(**UNSIZED), catalog).argv, "--parallel") == str(started)
    assert f"- --parallel\n        - '{started}'" in kubernetes_manifest(Deployment(**UNSIZED), catalog)
    api = TestClient(create_app(tmp_path / "d.db")).post("/api/deploy", json={"deployment": UNSIZED})
    assert api.status_code == 200, api.text
    assert _value(tuple(api.json()["command"]["argv"]), "--parallel") == str(started)


def test_llamacpp_slots_without_a_stated_context_each_get_the_planned_context(catalog):
    """Slots stated, context not: --ctx-size is the planned context times the slots (left out, llama-server
    would split the model's own context among them), the cache the memory plan allocates."""
    d = Deployment(**UNSIZED, max_num_seqs=2)
    argv, planned = launch_command(d, catalog).argv, fit(d, catalog)
    assert _value(argv, "--parallel") == "2"
    assert int(_value(argv, "--ctx-size")) == 2 * planned.max_model_len
    per_cell = planned.kv_cache_bytes_per_token
    assert planned.kv_cache_allocated_bytes_per_gpu == pytest.approx(-(-2 * planned.max_model_len // 256) * 256 * per_cell)
