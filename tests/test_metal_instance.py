"""vLLM and SGLang on an Apple GPU run one GPU an instance and a 16-bit KV cache only
(``engines.yaml`` ``metal_max_instance_gpus``, ``metal_kv_cache_dtypes``): fit refuses more and the
search offers neither."""

from __future__ import annotations

import pytest

from inferplan.catalog.loader import load_catalog
from inferplan.errors import InvalidScenarioError
from inferplan.inputs.deployment import Deployment
from inferplan.memory.fit import fit, plan_memory
from inferplan.search.request import SearchRequest
from inferplan.search.space import build_space

CATALOG = load_catalog()
MAC = dict(gpu="apple-m3-ultra", max_model_len=8192)


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
@pytest.mark.parametrize("field", ["tensor_parallel_size", "pipeline_parallel_size"])
def test_an_instance_over_two_macs_is_refused_naming_the_size(engine, field):
    with pytest.raises(InvalidScenarioError) as e:
        fit(Deployment(model="qwen3-8b", engine=engine, gpus=2, **{field: 2}, **MAC), CATALOG)
    assert e.value.field == field and e.value.allowed == "1"
    assert "llama.cpp" in str(e.value) and "MLX distributed" in str(e.value)


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_an_fp8_kv_cache_is_refused_on_a_mac_only(engine):
    with pytest.raises(InvalidScenarioError) as e:
        fit(Deployment(model="qwen3-32b", engine=engine, kv_cache_dtype="fp8", **MAC), CATALOG)
    assert e.value.field == "kv_cache_dtype" and "fp8" not in e.value.allowed
    assert fit(Deployment(model="qwen3-32b", engine=engine, kv_cache_dtype="bf16", **MAC), CATALOG).fits
    fit(Deployment(model="qwen3-32b", engine=engine, kv_cache_dtype="fp8", gpu="h100-sxm", max_model_len=8192), CATALOG)


def test_a_model_one_mac_does_not_hold_has_no_larger_vllm_instance():
    r = plan_memory(Deployment(model="qwen3-235b-a22b", engine="vllm", **MAC), CATALOG)
    assert not r.result.fits and r.result.smallest_fit is None


def test_the_search_offers_no_multi_mac_instance_and_no_fp8_cache_on_a_mac():
    req = SearchRequest(models=("qwen3-8b",), accelerators=("apple-m3-ultra",), engines=("vllm", "sglang"),
                        kv_cache_dtypes=("auto", "fp8"), request_rate_per_s=1.0, input_len=1000, output_len=100)
    cells = build_space(CATALOG, req, input_len=1000, output_len=100).cells
    assert cells
    assert all(c.kv_cache_dtype != "fp8" for c in cells)
    assert all(c.tensor_parallel_size * c.pipeline_parallel_size == 1 for c in cells)
