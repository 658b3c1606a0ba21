"""A decode step above the largest batch an engine captures as a CUDA graph runs without one: the
estimate says so, naming the captured batch (SGLang's tier ``cuda_graph_max_bs``; vLLM's largest default
capture size), and says nothing where the step is captured or where the release captures a list of its own
(SGLang before its GPU-memory tiers)."""

from __future__ import annotations

from inferplan.catalog.loader import load_catalog
from inferplan.inputs.deployment import Deployment
from inferplan.inputs.workload import Workload
from inferplan.memory.fit import plan_memory
from inferplan.performance.serving import estimate

CAT = load_catalog()
ABOVE = "runs without them"


def _graph_notes(engine: str, concurrency: int, **extra) -> list[str]:
    d = Deployment(model="llama-3.1-8b", accelerator="h100-sxm", gpus=1, engine=engine, **extra)
    w = Workload(input_len=512, output_len=128, concurrency=concurrency)
    return [a for a in estimate(d, w, CAT).assumptions if "CUDA graphs" in a or "CUDA/HIP graphs" in a]


def test_sglang_steps_above_the_tier_graph_batch_are_named():
    # SGLang's tier for a GPU of 60-160 GiB at TP 1: cuda_graph_max_bs 256 (engines.yaml defaults_by_gpu_memory)
    above = _graph_notes("sglang", 300)
    assert any(ABOVE in n and "up to a batch of 256" in n and "a step of 300 running" in n for n in above), above
    assert not any(ABOVE in n for n in _graph_notes("sglang", 256))


def test_vllm_steps_above_the_largest_capture_size_are_named():
    # vLLM's default capture sizes stop at min(max_num_seqs x 2, 512, max_num_batched_tokens) = 512 on an H100
    above = _graph_notes("vllm", 600)
    assert any(ABOVE in n and "up to a batch of 512" in n for n in above), above
    assert not any(ABOVE in n for n in _graph_notes("vllm", 512))


def test_an_eager_launch_keeps_its_own_note():
    notes = _graph_notes("vllm", 600, enforce_eager=True)
    assert any("--enforce-eager" in n for n in notes) and not any(ABOVE in n for n in notes)


def test_sglang_before_its_gpu_memory_tiers_states_no_graph_batch():
    # 0.2.0-0.4.6 capture from a fixed list (0.4.6: up to 160 on an 80 GB card, 256 above 81,920 MiB), not 0.5's
    # tier of 256: the plan states no graph batch there, and names no step above one
    for release in ("0.3.0", "0.4.6"):
        d = Deployment(model="llama-3.1-8b", accelerator="h100-sxm", gpus=1, engine="sglang", engine_version=release)
        assert plan_memory(d, CAT).settings.graph_batch is None
        assert not any(ABOVE in n for n in _graph_notes("sglang", 300, engine_version=release))
    assert plan_memory(Deployment(model="llama-3.1-8b", accelerator="h100-sxm", gpus=1, engine="sglang",
                                  engine_version="0.5.3"), CAT).settings.graph_batch == 256
