"""SGLang's default chunk (chunked_prefill_size, the plan's max_num_batched_tokens) by release before 0.4.7: the
sglang-tp-fraction-table rule's gpu_memory_defaults tiers, read from the wheels (mr-sglang-wheels-chunk-v020-v0212,
mr-sglang-wheels-chunk-v0213-v035, mr-sglang-wheels-chunk-v035post2, mr-sglang-wheels-chunk-v036-v046). 0.2.0-0.2.12:
no chunked prefill, a prefill step of max_prefill_tokens (16,384) or one longer prompt whole; 0.2.13-0.3.5.post1:
8,192 on every GPU; 0.3.5.post2-0.4.6: 2,048 below 25,000 MiB, else 8,192; from 0.5: engines.yaml's tiers
(tests/test_engine_tiers.py)."""

import pytest

from inferplan.inputs.deployment import Deployment
from inferplan.inputs.workload import Workload
from inferplan.memory.fit import plan_memory
from inferplan.search.service import service_curve


def _chunk(catalog, release: str, gpu: str, **stated) -> int:
    d = Deployment(model="qwen3-8b", gpu=gpu, engine="sglang", engine_version=release, **stated)
    return plan_memory(d, catalog).settings.max_num_batched_tokens


@pytest.mark.parametrize(("release", "gpu", "chunk"), [
    ("0.2.13", "rtx-4090", 8192),
    ("0.3.0", "h100-sxm", 8192),
    ("0.3.0", "rtx-4090", 8192),  # a fixed chunk: no smaller one on a 24 GiB GPU
    ("0.3.5", "l4", 8192),
    ("0.3.6", "l4", 2048),  # below 25,000 MiB from 0.3.6
    ("0.3.6", "a100-40gb", 8192),
    ("0.4.0", "rtx-4090", 2048),
    ("0.4.6", "h100-sxm", 8192),
    ("0.4.6", "a100-40gb", 8192),  # no 4,096 tier before 0.4.7's reserve by GPU memory
    ("0.5.6", "h100-sxm", 8192),
    ("0.5.6", "rtx-4090", 2048),
    ("0.5.6", "a100-40gb", 4096),
])
def test_each_sglang_release_takes_its_own_default_chunk(catalog, release, gpu, chunk):
    assert _chunk(catalog, release, gpu) == chunk


@pytest.mark.parametrize("release", ["0.2.0", "0.2.7", "0.2.12"])
def test_sglang_before_0213_runs_a_prompt_whole(catalog, release):
    # no chunked prefill: the step holds max_prefill_tokens of prompts, or the longest prompt alone
    assert _chunk(catalog, release, "h100-sxm", max_model_len=32768) == 32768
    assert _chunk(catalog, release, "rtx-4090", max_model_len=4096) == 16384
    if release != "0.2.0":  # a stated chunk from 0.2.7 (--chunked-prefill-size: tests/test_sglang_release_flags.py)
        assert _chunk(catalog, release, "h100-sxm", max_model_len=32768, max_num_batched_tokens=2048) == 2048


def test_the_speed_layers_step_budget_is_the_releases_chunk(catalog):
    w = Workload(input_len=1000, output_len=100)
    for release, chunk in (("0.3.0", 8192), ("0.4.6", 2048), ("0.5.6", 2048)):
        d = Deployment(model="qwen3-8b", gpu="rtx-4090", engine="sglang", engine_version=release)
        assert service_curve(d, w, catalog, points=2).token_budget == chunk


@pytest.mark.parametrize(("input_len", "budget"), [(1000, 16384), (20000, 20000)])
def test_a_whole_prompt_releases_speed_budget_is_its_step_not_the_context(catalog, input_len, budget):
    # 0.2.x stops a step of several prompts at 16,384 tokens and runs a longer prompt alone, whole: the stated
    # context (the model's own) sizes the memory peak, not the speed model's step
    d = Deployment(model="qwen3-8b", gpu="h100-sxm", engine="sglang", engine_version="0.2.0", max_model_len=32768)
    w = Workload(input_len=input_len, output_len=100)
    assert plan_memory(d, catalog).settings.max_num_batched_tokens == 32768
    assert service_curve(d, w, catalog, points=2).token_budget == budget


@pytest.mark.parametrize(("release", "gpu", "chunk"), [
    ("0.3.5.post1", "rtx-4090", 8192),  # a stated chunk as stated before 0.3.5.post2
    ("0.3.5.post2", "rtx-4090", 2048),  # 0.3.5.post2-0.3.6.post3 divide the chunk by 4 below 25,000 MiB, a stated one too
    ("0.3.6", "rtx-4090", 2048),
    ("0.3.6", "h100-sxm", 8192),
    ("0.4.0", "rtx-4090", 8192),  # from 0.4.0 only the default is picked by the GPU
])
def test_sglang_036_divides_a_stated_chunk_on_small_gpus(catalog, release, gpu, chunk):
    assert _chunk(catalog, release, gpu, max_num_batched_tokens=8192) == chunk
