"""On a CUDA device whose memory the CPU shares (DGX Spark's GB10), the free memory an engine reads
counts the Linux page cache as used (engines.yaml `reads_page_cache_as_used`): `fit` says so beside
the plan, which counts no page cache, and says nothing of it on a GPU with memory of its own."""

import pytest

from inferplan.inputs.deployment import Deployment
from inferplan.memory.engine_budget import page_cache_counted
from inferplan.memory.fit import fit

SAYS = "reads the page cache as used"


def _says(result) -> bool:
    return any(SAYS in a for a in result.assumptions)


@pytest.mark.parametrize("engine", ["vllm", "sglang", "trtllm"])
def test_a_dgx_spark_plan_says_the_page_cache_can_shrink_the_kv_cache(catalog, engine):
    r = fit(Deployment(model="gpt-oss-120b", gpu="gb10", engine=engine, quantization="mxfp4"), catalog)
    note = next(a for a in r.assumptions if SAYS in a)
    assert catalog.engine(engine).reads_page_cache_as_used_note in note


def test_the_trtllm_note_carries_the_spark_start_up_it_comes_from(catalog):
    # jeansblog/trt_llm: 49.78 GiB in use outside torch after gpt-oss-120b loaded, a 5.95 GiB pool
    note = catalog.engine("trtllm").reads_page_cache_as_used_note
    assert "49.78 GiB" in note and "5.95 GiB" in note


@pytest.mark.parametrize("gpu", ["h100-sxm", "rtx-4090"])
def test_a_gpu_with_memory_of_its_own_gets_no_such_note(catalog, gpu):
    assert not _says(fit(Deployment(model="llama-3.1-8b", gpu=gpu, engine="vllm"), catalog))


def test_unified_memory_outside_cuda_gets_no_such_note(catalog):
    # Apple silicon (Metal) and Strix Halo (ROCm/Vulkan) share memory too, but no source shows their
    # engines reading the page cache as used
    shared = [a for a in catalog.accelerators if a.unified_memory and a.software.value != "cuda"]
    assert shared
    assert not any(page_cache_counted(catalog.engine("vllm"), a) for a in shared)


def test_an_engine_without_the_rule_gets_no_note_on_a_spark(catalog):
    spark = catalog.accelerators.records["gb10"]
    assert page_cache_counted(catalog.engine("vllm"), spark)
    unwired = catalog.engine("vllm").model_copy(update={"reads_page_cache_as_used": False})
    assert not page_cache_counted(unwired, spark)
    assert not page_cache_counted(catalog.engine("llamacpp"), spark)

