"""The search offers vLLM's data parallelism without expert parallelism for a mixture-of-experts model
(engines.yaml ``moe_tp_spans_data_parallel``): one engine whose DP ranks share the routed experts over
TP x DP. Each such pick launches as one engine with ``--data-parallel-size``, re-evaluates to the same
figures, loads into the Users + ROI simulator as the same cell, and is labelled apart from replicas and EP."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from inferplan.economics.plan import plan
from inferplan.economics.scenario import Scenario
from inferplan.inputs.deployment import Deployment
from inferplan.inputs.workload import Workload
from inferplan.report.search_view import layout_text
from inferplan.search import evaluate
from inferplan.search.experts_over_dp import EXPERTS_OVER_DP, layout_label
from inferplan.search.load import resolve_load
from inferplan.search.request import SearchRequest, Targets
from inferplan.search.run import search
from inferplan.search.service import service_curve
from inferplan.search.space import build_space
from inferplan.shells.cli import app
from test_search import _meets, approximate

LOAD = dict(request_rate_per_s=4.0, input_len=1500, output_len=300)
TARGETS = Targets(ttft_p95_s=1.5, ttft_p99_s=3.0, tpot_p95_s=0.04, e2e_p95_s=20)


def _shared(catalog, **kw) -> set[tuple[int, int]]:
    """(TP, DP) of the cells whose data-parallel ranks share the experts without expert parallelism."""
    req = SearchRequest(**{**LOAD, "speculative": False, **kw})
    return {(c.tensor_parallel_size, c.data_parallel_size) for c in build_space(catalog, req, input_len=1500, output_len=300).cells
            if c.experts_over_data_parallel}


def test_vllm_offers_ranks_that_share_the_experts_where_the_engine_data_says_so(catalog):
    assert catalog.engine("vllm").moe_tp_spans_data_parallel and not catalog.engine("sglang").moe_tp_spans_data_parallel
    # Qwen3-30B-A3B fits one H100: ranks of TP 1 at every width expert parallelism tries
    assert _shared(catalog, models=("qwen3-30b-a3b",), systems=("hgx-h100",), engines=("vllm",)) == {(1, 2), (1, 4), (1, 8)}
    # on N of an accelerator the instance is the N; TP 2 holds it alone on L40S, so TP 1 and 2 split the 4 GPUs
    assert _shared(catalog, models=("qwen3-30b-a3b",), accelerators=("l40s",), engines=("vllm",), pricing="rent") == {
        (1, 2), (2, 2), (1, 4), (1, 8), (2, 4)}
    assert not _shared(catalog, models=("qwen3-30b-a3b",), systems=("hgx-h100",), engines=("sglang",))  # copies there
    assert not _shared(catalog, models=("qwen3-32b",), systems=("hgx-h100",), engines=("vllm",))  # dense: no experts


@pytest.fixture(scope="module")
def l40s(catalog):
    """Qwen3-30B-A3B in BF16 (61 GB) on rented L40S 48 GB: TP 1 does not hold it, ranks that share the experts do."""
    return search(SearchRequest(models=("qwen3-30b-a3b",), accelerators=("l40s",), engines=("vllm",), pricing="rent",
                                speculative=False, targets=TARGETS, top=20, **LOAD), catalog)


def test_every_shared_experts_pick_meets_every_target_reevaluated_one_by_one(catalog, l40s):
    picks = [r for r in l40s.results if r.data_parallel_size > 1 and not r.expert_parallel]
    assert picks and picks[0].rank == 1  # the cheapest on this platform: one 4-GPU engine meets TPOT where TP 4 does not
    rl = resolve_load(catalog, SearchRequest(models=("qwen3-30b-a3b",), **LOAD))
    for r in picks:  # the deployment rebuilt from the result's own fields, as `perf -dp N` takes it
        assert not r.disaggregated and r.gpus_per_instance == r.tensor_parallel_size * r.data_parallel_size
        curve = curve_of(catalog, r, rl)
        assert curve.data_parallel == r.data_parallel_size
        t = approximate(curve, rl.load, r.replicas, slot_cap=r.max_num_seqs)
        assert t.stable
        _meets(t, l40s.targets)
        assert t.ttft_p95_s == pytest.approx(r.ttft_p95_s, rel=1e-6)
        assert t.tpot_p95_s == pytest.approx(r.tpot_p95_s, rel=1e-6)
        # one engine per instance, its ranks stated, no expert parallelism
        assert f"--data-parallel-size {r.data_parallel_size}" in r.deploy and "--enable-expert-parallel" not in r.deploy
        assert r.deploy.count("vllm serve") == 1  # one engine; further replicas are copies of it
        assert r.replicas == 1 or any(f"one of {r.replicas} copies" in n for n in r.notes)
        assert r.max_num_seqs_per_rank == -(-r.max_num_seqs // r.data_parallel_size)
        assert r.scenario["cell"] == {"tensor_parallel_size": r.tensor_parallel_size, "pipeline_parallel_size": 1,
                                      "data_parallel_size": r.data_parallel_size, "enable_expert_parallel": False,
                                      "max_num_seqs": r.max_num_seqs_per_rank}
        cell = plan(Scenario.model_validate({"name": "pick", **r.scenario}), catalog).capacity.cell
        assert (cell.gpus, cell.data_parallel_size, cell.expert_parallel) == (r.gpus_per_instance, r.data_parallel_size, False)
        assert cell.engine_slots == r.max_num_seqs_per_rank * r.data_parallel_size  # each rank at the pick's cap

    # `perf` with the first pick's launch flags (-dp N, each rank's cap, no expert parallelism) at a batch the
    # search's serving curve was read at gives that curve's figures
    r = picks[0]
    batch = max(n for n in curve_of(catalog, r, rl).concurrency if n <= r.max_num_seqs)
    out = CliRunner().invoke(app, [
        "perf", "--model", r.model, "--gpu", r.accelerator, "--gpus", str(r.gpus_per_instance), "--engine", r.engine,
        "--quantization", r.quantization, "--kv-cache-dtype", r.kv_cache_dtype, "-tp", str(r.tensor_parallel_size),
        "-dp", str(r.data_parallel_size), "--max-model-len", str(r.max_model_len),
        "--max-num-seqs", str(r.max_num_seqs_per_rank), "--input-len", str(rl.input_len), "--output-len", str(rl.output_len),
        "--concurrency", str(batch), "--json"])
    assert out.exit_code == 0, out.output
    perf, curve = json.loads(out.stdout), curve_of(catalog, r, rl)
    k = curve.concurrency.index(batch)
    assert (perf["tpot_s"], perf["ttft_s"]) == (pytest.approx(curve.tpot_s[k], rel=1e-9), pytest.approx(curve.ttft_s[k], rel=1e-9))


def curve_of(catalog, r, rl):
    """The serving curve of a pick's instance, rebuilt from the result's own fields."""
    dep = Deployment(model=r.model, gpu=r.accelerator, gpus=r.gpus_per_instance, quantization=r.quantization,
                     engine=r.engine, kv_cache_dtype=r.kv_cache_dtype, tensor_parallel_size=r.tensor_parallel_size,
                     data_parallel_size=r.data_parallel_size, max_model_len=rl.max_model_len)
    return service_curve(dep, Workload(input_len=rl.input_len, output_len=rl.output_len), catalog, points=evaluate.CURVE_POINTS)


def test_the_layout_is_labelled_apart_from_replicas_and_expert_parallelism(l40s):
    shared = next(r for r in l40s.results if r.data_parallel_size > 1 and not r.expert_parallel)
    label = f"TP{shared.tensor_parallel_size} × DP{shared.data_parallel_size} ({EXPERTS_OVER_DP})"
    assert shared.layout == label and layout_text(shared).startswith(label)
    assert shared.model_dump(mode="json")["layout"] == label
    assert layout_label(2, 1, 1, False, 2) == "TP2" and layout_label(1, 1, 4, True, 4) == "DP4 + EP4"
    assert all(EXPERTS_OVER_DP not in r.layout for r in l40s.results if r.expert_parallel or r.data_parallel_size == 1)
