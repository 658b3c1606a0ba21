"""A disaggregated pool's KV connector as the instance launches with it (``Deployment.kv_connector``): a name the
engine's pools launch with, and the one the launch emits; vLLM 0.34 turns the extensible KV cache off with
NixlConnector on CUDA where no IMEX channel opens, as the driver comes, so a CUDA pool is planned with it off and its
launch states the KV cache an IMEX channel keeps beside it, and how to check for the channel."""

from __future__ import annotations

import re

import pytest

from inferplan.deploy.command import launch_command
from inferplan.deploy.pools import pools_launch
from inferplan.errors import InvalidScenarioError
from inferplan.inputs.deployment import Deployment
from inferplan.memory.fit import plan_memory
from inferplan.units import GiB

IMEX = "/dev/nvidia-caps-imex-channels/channel*"


def _pool(gpu: str) -> Deployment:
    return Deployment(model="qwen3-32b", gpu=gpu, max_model_len=32768)


def test_a_cuda_pool_s_launch_states_the_kv_cache_an_imex_channel_keeps(catalog):
    d = _pool("h100-sxm")
    notes = pools_launch(catalog, d, d).notes
    imex = [n for n in notes if IMEX in n]
    assert [n.split(":")[0] for n in imex] == ["prefill pool", "decode pool"]
    off, on = (float(g) for g in re.search(r"([\d.]+) GiB of KV cache per GPU, as planned; .*?: ([\d.]+) GiB",
                                           imex[0]).groups())
    planned = plan_memory(d.model_copy(update={"kv_connector": "NixlConnector"}), catalog).result
    # the plan sizes the cache as vLLM does with no channel: as --no-enable-extensible-kv-cache does
    assert off == pytest.approx(planned.kv_cache_bytes_per_gpu / GiB, abs=0.01)
    assert off == pytest.approx(plan_memory(d.model_copy(update={"enable_extensible_kv_cache": False}), catalog)
                                .result.kv_cache_bytes_per_gpu / GiB, abs=0.01)
    assert on == pytest.approx(plan_memory(d, catalog).result.kv_cache_bytes_per_gpu / GiB, abs=0.01)  # cache on
    assert off < on
    assert "NixlConnector" in imex[0] and "fall back to TCP" in imex[0]


def test_a_cuda_pool_stated_on_says_transfers_within_a_host_go_over_tcp(catalog):
    d = _pool("h100-sxm").model_copy(update={"enable_extensible_kv_cache": True})
    notes = [n for n in pools_launch(catalog, d, d).notes if "fall back to TCP" in n]
    assert [n.split(":")[0] for n in notes] == ["prefill pool", "decode pool"]
    assert "--enable-extensible-kv-cache with NixlConnector" in notes[0] and IMEX not in notes[0]


@pytest.mark.parametrize("gpu", ["mi300x", "h100-sxm"])
def test_no_imex_note_where_no_connector_or_the_cache_is_off_anyway(catalog, gpu):
    assert not any(IMEX in n for n in launch_command(_pool(gpu), catalog).notes)  # a whole instance: no connector
    if gpu == "mi300x":  # a ROCm pool over NIXL: the cache is off whatever the host has
        assert not any(IMEX in n for n in pools_launch(catalog, _pool(gpu), _pool(gpu)).notes)


def test_fit_of_a_pool_instance_names_the_connector_and_the_fallback(catalog):
    rocm = plan_memory(_pool("mi300x").model_copy(update={"kv_connector": "NixlConnector"}), catalog).result
    assert any("NixlConnector (the KV connector of a disaggregated pool's instance) on rocm switches the extensible "
               "KV cache off" in a for a in rocm.assumptions)
    assert rocm.kv_cache_bytes_per_gpu < plan_memory(_pool("mi300x"), catalog).result.kv_cache_bytes_per_gpu
    cuda = plan_memory(_pool("h100-sxm").model_copy(update={"kv_connector": "NixlConnector"}), catalog).result
    assert any("NixlConnector (the KV connector of a disaggregated pool's instance) on cuda with no IMEX channel "
               "(the driver creates none unless an administrator does) switches the extensible KV cache off" in a
               for a in cuda.assumptions)
    assert cuda.kv_cache_bytes_per_gpu < plan_memory(_pool("h100-sxm"), catalog).result.kv_cache_bytes_per_gpu
    assert plan_memory(_pool("h100-sxm"), catalog).result.kv_cache_fallback_note is None


@pytest.mark.parametrize("update, allowed", [({"kv_connector": "LMCacheConnectorV1"}, "leave it out, or NixlConnector"),
                                             ({"kv_connector": "NixlConnector", "engine": "sglang"}, "leave it out")])
def test_a_connector_the_engine_s_pools_do_not_launch_with_is_refused(catalog, update, allowed):
    with pytest.raises(InvalidScenarioError, match="no KV connector") as refused:
        plan_memory(_pool("h100-sxm").model_copy(update=update), catalog)
    assert (refused.value.field, refused.value.allowed) == ("kv_connector", allowed)


def test_a_whole_instance_launch_refuses_a_stated_connector_a_pool_side_takes_it(catalog):
    d = _pool("h100-sxm").model_copy(update={"kv_connector": "NixlConnector"})
    with pytest.raises(InvalidScenarioError, match="whole instance launches with no KV connector") as refused:
        launch_command(d, catalog)
    assert refused.value.field == "kv_connector"
    assert '"kv_connector":"NixlConnector"' in launch_command(d, catalog, role="decode").text
