"""--topk-topp-sampler names the top-k/top-p sampler of a vLLM install; an engine whose start-up profile
runs no sampler pass refuses it, as a MoE kernel it does not have is refused, instead of ignoring it."""

import pytest

from inferplan.errors import InvalidScenarioError
from inferplan.inputs.deployment import Deployment
from inferplan.memory.fit import fit


@pytest.mark.parametrize("engine", ["sglang", "trtllm", "llamacpp"])
def test_an_engine_without_a_sampler_pass_refuses_a_named_sampler(catalog, engine):
    d = Deployment(model="llama-3.1-8b", gpu="h100-sxm", engine=engine, topk_topp_sampler="flashinfer")
    with pytest.raises(InvalidScenarioError) as refused:
        fit(d, catalog)
    assert refused.value.field == "topk_topp_sampler" and "vllm" in refused.value.allowed


@pytest.mark.parametrize("release", [None, "0.6.4", "0.10.1.1", "0.19.0"])
def test_vllm_takes_it_on_every_release(catalog, release):
    d = Deployment(model="llama-3.1-8b", gpu="h100-sxm", engine="vllm", engine_version=release, topk_topp_sampler="pytorch")
    assert fit(d, catalog).fits
