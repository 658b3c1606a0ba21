"""A search tries separate pools with any instance ``inferplan deploy`` writes: one host's, or one over several hosts
where the engine's ``multi_host`` record starts it (``deploy.nodes.over_hosts_refusal``); an instance of an engine
with no multi-host launch stays out of the pools when one host does not hold it."""

from __future__ import annotations

import dataclasses
import re

import pytest

from inferplan.deploy.nodes import over_hosts_refusal
from inferplan.inputs.deployment import Deployment
from inferplan.search import handover
from inferplan.search.evaluate import model_cell
from inferplan.search.load import resolve_load
from inferplan.search.pricing import unit_costs
from inferplan.search.request import SearchRequest
from inferplan.search.run import search
from inferplan.search.space import build_space

TRAY_GPUS = 4  # a GB200 NVL72's OS host: one compute tray


def _pools_by_gpus(catalog, engine: str) -> dict[int, bool]:
    req = SearchRequest(models=("qwen3-8b",), systems=("gb200-nvl72",), engines=(engine,), quantizations=("bf16",),
                        kv_cache_dtypes=("auto",), speculative=False, request_rate_per_s=1.0, input_len=2000,
                        output_len=500)
    rl = resolve_load(catalog, req)
    cells = build_space(catalog, req, input_len=rl.input_len, output_len=rl.output_len).cells
    costs = unit_costs(catalog, cells[0].platform, "qwen3-8b")
    return {c.gpus: model_cell(catalog, c, rl, costs, disaggregate=True).disaggregates for c in cells}


def test_a_pool_instance_over_compute_trays_is_searched_where_the_engine_starts_it_per_host(catalog):
    """vLLM starts a TP8 instance over two 4-GPU trays (--nnodes), so its TP8 cells run as a pool too."""
    pools = _pools_by_gpus(catalog, "vllm")
    assert any(g > TRAY_GPUS for g in pools), pools
    assert all(pools.values()), pools


@pytest.mark.parametrize("engine, layout, refused", [
    ("trtllm", {"tensor_parallel_size": 8}, "no multi-host launch"),  # TensorRT-LLM's MPI launch is not written
    ("sglang", {"tensor_parallel_size": 4, "data_parallel_size": 2}, "data-parallel"),  # whole copies over trays
    ("sglang", {"tensor_parallel_size": 8}, None),
    ("vllm", {"tensor_parallel_size": 8}, None),
    ("trtllm", {"tensor_parallel_size": 4}, None),  # one tray
])
def test_what_deploy_cannot_write_over_hosts_is_kept_out_of_the_pools(catalog, engine, layout, refused):
    d = Deployment(model="qwen3-8b", gpu="gb200", gpus=8 if layout != {"tensor_parallel_size": 4} else 4,
                   engine=engine, **layout)
    reason = over_hosts_refusal(d, catalog)
    assert (reason is None) == (refused is None) and (refused is None or refused in reason), reason


@pytest.fixture(scope="module")
def wide(catalog):
    """DeepSeek-V3 on a GB200 NVL72: no instance of one tray holds it, so every pool spans trays."""
    return search(SearchRequest(models=("deepseek-v3",), systems=("gb200-nvl72",), engines=("sglang",),
                                quantizations=("fp8",), kv_cache_dtypes=("auto",), speculative=False,
                                request_rate_per_s=5.0, input_len=4000, output_len=1000, disaggregated=True, top=3),
                  catalog)


def _spanning(res):
    picks = [r for r in res.results if r.disaggregated and all(p.gpus_per_instance > TRAY_GPUS for p in r.pools)]
    assert picks, [(r.rank, r.disaggregated) for r in res.results]
    return picks


def test_a_disaggregated_pick_of_deepseek_v3_on_a_gb200_nvl72_runs_pools_over_trays(wide):
    for r in _spanning(wide):
        lines = r.deploy.splitlines()
        for p in r.pools:  # one line per tray of an instance, the same for every instance, its role on every one
            hosts = p.gpus_per_instance // TRAY_GPUS
            role = [line for line in lines if f"--disaggregation-mode {p.role}" in line]
            assert len(role) == hosts, (p, r.deploy)
            assert all(f"--nnodes {hosts} " in line and '--dist-init-addr "$HEAD_IP:' in line for line in role)
            assert sorted(int(re.search(r"--node-rank (\d+)", line).group(1)) for line in role) == list(range(hosts))
            assert sum(f"({p.instances} hosts):" in line for line in lines if line.startswith("# on each")) >= hosts \
                or p.instances == 1
        leaders = re.findall(r"http://(HOST\d+):", lines[-1])  # the router names each instance's first tray
        assert len(leaders) == sum(p.instances for p in r.pools)


def test_pools_over_trays_inside_one_nvl72_hand_the_kv_cache_over_the_scale_out_network(wide, catalog):
    """Each tray is its own OS host, and the engines' KV connectors move the cache between hosts over RDMA."""
    inside = [r for r in _spanning(wide) if sum(p.instances * p.gpus_per_instance for p in r.pools) <= 72]
    assert inside
    assert {r.kv_transfer_link for r in inside} == {catalog.system("gb200-nvl72", "system").scale_out.link}


@pytest.mark.parametrize("gpus, link", [(4, "scale_up"), (8, "scale_out"), (72, "scale_out")])
def test_pools_hand_over_on_the_fast_link_only_inside_one_trays_os_host(catalog, gpus, link):
    nvl72 = catalog.system("gb200-nvl72", "system")
    accel = catalog.accelerators.records[nvl72.accelerator]
    want = accel.scale_up.link if link == "scale_up" else nvl72.scale_out.link
    assert handover.link_name(accel, nvl72, nvl72.accelerator_count, gpus) == want
    per_gpu = accel.scale_up.bandwidth_bytes_per_s.value / 2 if link == "scale_up" else \
        nvl72.scale_out.bandwidth_bytes_per_s.value
    assert float(handover.link_bytes_per_s(accel, nvl72, nvl72.accelerator_count, gpus, 2)) == pytest.approx(2 * per_gpu)


def test_pools_of_instances_over_hgx_hosts_hand_the_kv_cache_over_the_scale_out_network(catalog):
    """DeepSeek-V3 at FP8 needs two HGX H100 systems per instance: its pools run over hosts, each instance's KV
    cache crossing the network between systems, not NVLink."""
    res = search(SearchRequest(models=("deepseek-v3",), systems=("hgx-h100",), engines=("sglang",),
                               quantizations=("fp8",), kv_cache_dtypes=("auto",), speculative=False,
                               request_rate_per_s=5.0, input_len=4000, output_len=1000, disaggregated=True, top=3),
                 catalog)
    picks = [r for r in res.results if r.disaggregated]
    assert picks and all(p.gpus_per_instance > 8 for r in picks for p in r.pools)
    hgx = catalog.system("hgx-h100", "system")
    assert {r.kv_transfer_link for r in picks} == {hgx.scale_out.link}
    assert all("--nnodes 2 " in r.deploy and "http://HOST0:" in r.deploy for r in picks)


@pytest.mark.parametrize("engine, pools", [("vllm", False), ("sglang", True)])
def test_a_cell_of_pipeline_stages_is_in_a_pool_only_where_the_engines_kv_connector_hands_them_over(catalog, engine, pools):
    """vLLM's NixlConnector refuses handshake metadata from a pipeline stage past the first
    (``DisaggregationRule.pipeline``): its TP4 × PP2 cell runs no pool; SGLang's does."""
    req = SearchRequest(models=("qwen3-8b",), systems=("hgx-h100",), engines=(engine,), quantizations=("bf16",),
                        kv_cache_dtypes=("auto",), speculative=False, request_rate_per_s=1.0, input_len=2000,
                        output_len=500)
    rl = resolve_load(catalog, req)
    cell = build_space(catalog, req, input_len=rl.input_len, output_len=rl.output_len).cells[0]
    staged = dataclasses.replace(cell, tensor_parallel_size=4, pipeline_parallel_size=2)
    costs = unit_costs(catalog, cell.platform, "qwen3-8b")
    assert model_cell(catalog, staged, rl, costs, disaggregate=True).disaggregates is pools
    assert model_cell(catalog, dataclasses.replace(cell, tensor_parallel_size=8, pipeline_parallel_size=1), rl, costs,
                      disaggregate=True).disaggregates
