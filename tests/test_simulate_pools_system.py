"""Separate pools simulated on a system: the prefill pool's GPUs come out of the box, the decode side is what
is left (or what is stated), a layout the box does not hold is refused naming ``gpus``, and the KV hand-over
crosses the link the search prices for pools inside one box. A search's disaggregated pick, simulated again
from its own query, gives the search's percentiles."""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from inferplan.search.request import SearchRequest, Targets
from inferplan.search.run import search
from inferplan.search.simulation import SimulationQuery, simulate_deployment
from inferplan.shells.api import create_app
from inferplan.shells.cli import app

# the report's pick in its pool layout: Llama 3.3 70B in NVFP4 (vLLM's Marlin fallback on Hopper), 2 prefill instances of TP2 and a TP4 decode instance
HGX = ["simulate", "--model", "llama-3.3-70b", "--system", "hgx-h100", "-q", "nvfp4", "--kv-cache-dtype", "fp8", "--engine",
       "vllm", "-tp", "4", "--max-num-seqs", "41", "--max-model-len", "2400", "--prefill-instances", "2",
       "--prefill-tensor-parallel-size", "2", "--request-rate", "4", "--input-len", "2000", "--output-len", "400",
       "--requests", "4000"]


def _run(*args):
    return CliRunner().invoke(app, [str(a) for a in args])


def _json(*args) -> dict:
    r = _run(*args, "--json")
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


def test_the_decode_side_is_what_the_prefill_pool_leaves_of_the_box_and_hands_over_on_nvlink():
    whole = _json(*HGX)
    stated = _json(*HGX, "--gpus", 4)  # 8 GPUs less 2 prefill instances of 2: one TP4 decode instance
    assert whole["pools"]["kv_transfer_link"] == "nvlink4" and whole["simulation"] == stated["simulation"]
    assert whole["pools"]["kv_transfer_s"] == pytest.approx(stated["pools"]["kv_transfer_s"])


@pytest.mark.parametrize("extra", [["--gpus", 8], ["--replicas", 2]])
def test_pools_the_box_does_not_hold_are_refused_naming_gpus(extra):
    r = _run(*HGX, *extra)
    assert r.exit_code == 2 and r.output.startswith("error: --gpus:"), r.output
    assert "NVIDIA HGX/DGX H100" in r.output and "(allowed:" in r.output
    assert "name the GPU (h100-sxm) in place of the system" in r.output  # the way to pools over several boxes


def test_the_api_refuses_pools_past_the_box_at_the_deployments_gpus(tmp_path):
    body = {"deployment": {"model": "llama-3.3-70b", "system": "hgx-h100", "quantization": "nvfp4", "kv_cache_dtype": "fp8",
                           "engine": "vllm", "tensor_parallel_size": 4, "gpus": 8, "max_model_len": 2400},
            "workload": {"input_len": 2000, "output_len": 400}, "request_rate_per_s": 4, "requests": 1000,
            "prefill_instances": 2, "prefill_tensor_parallel_size": 2}
    reply = TestClient(create_app(tmp_path / "t.db")).post("/api/simulate", json=body)
    assert reply.status_code == 422 and reply.json()["error"]["field"] == "deployment.gpus", reply.text


def test_pools_on_a_pcie_box_hand_over_on_pcie():
    """tinybox green v2: 4 cards on PCIe; 2 one-GPU prefill instances leave 2 GPUs for a TP2 decode instance."""
    out = _json("simulate", "--model", "qwen3-8b", "--system", "tinybox-green-v2", "-tp", 2, "--prefill-instances", 2,
                "--prefill-tensor-parallel-size", 1, "--request-rate", 2, "--requests", 2000)
    assert out["pools"]["kv_transfer_link"] == "pcie5"


def test_a_disaggregated_search_pick_simulated_again_from_its_query_gives_its_percentiles():
    req = SearchRequest(models=("qwen3-8b",), systems=("hgx-h100", "tinybox-green-v2"), engines=("vllm",),
                        request_rate_per_s=4.0, input_len=1500, output_len=300, speculative=False, top=200,
                        targets=Targets(ttft_p95_s=1.5, ttft_p99_s=3.0, tpot_p95_s=0.04, e2e_p95_s=20))
    picks = [r for r in search(req).results if r.disaggregated and r.simulation is not None]
    assert {r.system for r in picks} == {"hgx-h100", "tinybox-green-v2"}
    for r in (next(p for p in picks if p.system == s) for s in ("hgx-h100", "tinybox-green-v2")):
        again = simulate_deployment(SimulationQuery.model_validate(r.simulate))
        assert (again.pools.prefill_instances, again.pools.decode_instances) == (r.prefill_instances, r.decode_instances)
        assert again.pools.kv_transfer_link == r.kv_transfer_link
        assert again.pools.kv_transfer_s == pytest.approx(r.kv_transfer_s, rel=1e-12)
        for name in ("ttft_p50_s", "ttft_p95_s", "ttft_p99_s", "tpot_p95_s", "e2e_p95_s"):
            assert getattr(again.simulation, name) == pytest.approx(getattr(r.simulation, name), rel=1e-12), name


def test_picks_for_a_trace_simulated_again_from_their_query_and_the_trace_give_their_percentiles():
    """A trace's requests are planned at their mean lengths rounded up by both, and the pools' hand-over priced
    on that prompt: aggregated and disaggregated picks alike."""
    from inferplan.search.trace import trace_from_rows

    rows = [{"arrival_s": 0.5 * i, "input_tokens": 1000 + 37 * (i % 50), "output_tokens": 100 + 7 * (i % 40)}
            for i in range(400)]
    req = SearchRequest(models=("qwen3-8b",), systems=("tinybox-green-v2",), engines=("vllm",), trace=rows,
                        speculative=False, top=50, targets=Targets(ttft_p95_s=1.5, tpot_p95_s=0.04))
    picks = [r for r in search(req).results if r.simulation is not None]
    chosen = [next(r for r in picks if r.disaggregated == pools) for pools in (False, True)]
    for r in chosen:
        again = simulate_deployment(SimulationQuery.model_validate(r.simulate), trace=trace_from_rows(rows)).simulation
        for name in ("ttft_p50_s", "ttft_p95_s", "ttft_p99_s", "tpot_p95_s", "e2e_p95_s"):
            assert getattr(again, name) == pytest.approx(getattr(r.simulation, name), rel=1e-12), (r.disaggregated, name)


def test_a_drafting_decode_pool_simulates_its_prefill_pool_without_drafts(tmp_path):
    """A prefill instance drafts nothing: the decode deployment's draft tokens stay out of the prefill pool, so the
    API takes them (a 422 naming workload.speculative_tokens otherwise) and gives what the CLI gives, whose
    --speculative-tokens are the workload's."""
    drafting = [*HGX[:-2], "--requests", 1000, "--speculative-tokens", 2, "--acceptance-rate", 0.6]
    cli = _json(*drafting)
    body = {"deployment": {"model": "llama-3.3-70b", "system": "hgx-h100", "quantization": "nvfp4", "kv_cache_dtype": "fp8",
                           "engine": "vllm", "tensor_parallel_size": 4, "max_num_seqs": 41, "max_model_len": 2400,
                           "speculative_tokens": 2},
            "workload": {"input_len": 2000, "output_len": 400, "speculative_tokens": 2, "acceptance_rate": 0.6},
            "request_rate_per_s": 4, "requests": 1000, "prefill_instances": 2, "prefill_tensor_parallel_size": 2}
    reply = TestClient(create_app(tmp_path / "t.db")).post("/api/simulate", json=body)
    assert reply.status_code == 200, reply.text
    assert reply.json()["simulation"] == cli["simulation"] and reply.json()["pools"] == cli["pools"]


def test_a_drafting_disaggregated_search_pick_posted_again_gives_its_percentiles(tmp_path):
    """The search's prefill layouts draft nothing beside a drafting decode cell (``evaluate.prefill_partners``):
    its query posted to the API simulates the prefill pool without the EAGLE-3 draft and gives the pick's percentiles."""
    req = SearchRequest(models=("qwen3-8b",), systems=("hgx-h100",), engines=("vllm",), request_rate_per_s=4.0,
                        input_len=1500, output_len=300, speculative=True, top=50,
                        targets=Targets(ttft_p95_s=1.5, ttft_p99_s=3.0, tpot_p95_s=0.04, e2e_p95_s=20))
    r = next(r for r in search(req).results if r.disaggregated and r.speculative_tokens and r.simulation is not None)
    assert r.simulate["deployment"]["eagle3_draft"] and r.simulate["workload"]["speculative_tokens"]
    reply = TestClient(create_app(tmp_path / "t.db")).post("/api/simulate", json=r.simulate)
    assert reply.status_code == 200, reply.text
    for name in ("ttft_p50_s", "ttft_p95_s", "ttft_p99_s", "tpot_p95_s", "e2e_p95_s"):
        assert reply.json()["simulation"][name] == pytest.approx(getattr(r.simulation, name), rel=1e-12), name


def test_one_prefill_instance_of_one_gpu_is_named_in_the_singular():
    r = _run("simulate", "--model", "qwen3-8b", "--system", "tinybox-green-v2", "-tp", 4, "--prefill-instances", 1,
             "--prefill-tensor-parallel-size", 1, "--request-rate", 2, "--requests", 200)
    assert r.exit_code == 2, r.output
    assert "1 prefill instance of 1 GPU and 1 decode instance of 4 GPUs take 5 GPUs" in " ".join(r.output.split())
