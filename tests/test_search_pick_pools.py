"""A search pick with separate prefill and decode pools launches on the hosts it pays for: each rented
instance is a host of its GPUs, every worker pinned within its host, the router pointing at the host
that runs it; and ``replicas`` means the decode pool's instances in every field of the pick."""

from __future__ import annotations

import re

import pytest

from inferplan.search.request import SearchRequest
from inferplan.search.run import search

DISAGGREGATING = ("vllm", "sglang", "trtllm")


@pytest.fixture(scope="module")
def rented(catalog):
    """qwen3-8b on GB200, rented in 4-GPU instances: prefill TP4 + decode TP4 picks take two instances."""
    return search(SearchRequest(models=("qwen3-8b",), request_rate_per_s=2.0, input_len=1000, output_len=200,
                                accelerators=("gb200",), pricing="rent", engines=DISAGGREGATING, speculative=False,
                                disaggregated=True, top=300), catalog)


def _spread(res, engine: str):
    picks = [r for r in res.results if r.engine == engine and r.disaggregated and r.rented_instances > 1]
    assert picks, f"no {engine} pick over several rented instances"
    return picks


@pytest.mark.parametrize("engine", DISAGGREGATING)
def test_no_worker_of_a_rented_pick_names_a_gpu_its_instance_lacks(rented, engine):
    for r in _spread(rented, engine):
        devices = [int(i) for line in r.deploy.splitlines() if line.endswith(" &")
                   for i in re.search(r"CUDA_VISIBLE_DEVICES=([\d,]+)", line).group(1).split(",")]
        assert devices and max(devices) < r.rented_instance_gpus, (r.rank, r.deploy)
        assert "# on HOST1:" in r.deploy
        router = r.deploy.split("EOF")[-1] if engine == "trtllm" else r.deploy.splitlines()[-1]
        assert "HOST1" in (router if engine != "trtllm" else r.deploy.split("disagg_config.yaml")[1]), r.deploy


def test_replicas_is_the_decode_pools_in_the_json_the_scenario_and_the_simulation(rented):
    pools = [r for r in rented.results if r.disaggregated]
    assert pools
    for r in pools:
        assert r.replicas == r.decode_instances == r.pools[1].instances
        assert r.scenario["replicas"] == r.replicas == r.simulate["replicas"]
        assert r.prefill_instances == r.pools[0].instances == r.scenario["prefill_pool"]["instances"]
