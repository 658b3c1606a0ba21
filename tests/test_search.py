"""inferplan search: every pick meets its targets re-evaluated independently; the cheapest equals a
brute-force minimum; failed families say why; filters hold; bad input is refused by name."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from fastapi.testclient import TestClient
from pydantic import ValidationError
from typer.testing import CliRunner

from inferplan.errors import InferplanError
from inferplan.inputs.deployment import Deployment
from inferplan.inputs.workload import Workload
from inferplan.economics.scenario import Scenario
from inferplan.scenario import check_references
from inferplan.search import evaluate
from inferplan.search.mgc import mgc_wait_quantile
from inferplan.search.queueing import approximate_many
from inferplan.search.tail_types import CurveTable
from inferplan.search.service import service_curve
from inferplan.search.load import resolve_load
from inferplan.search.pricing import unit_costs
from inferplan.search.request import FORM_FACTOR_TIERS, SearchRequest, Targets
from inferplan.search.run import model_cells, search
from inferplan.search.space import build_space
from inferplan.shells.api import create_app
from inferplan.shells.cli import app

SMALL = dict(models=("qwen3-8b",), systems=("hgx-h100", "tinybox-green-v2"), engines=("vllm",),
             request_rate_per_s=4.0, input_len=1500, output_len=300)
TARGETS = Targets(ttft_p95_s=1.5, ttft_p99_s=3.0, tpot_p95_s=0.04, e2e_p95_s=20)


def _request(**kw) -> SearchRequest:
    return SearchRequest(**{**SMALL, "targets": TARGETS, **kw})


@pytest.fixture(scope="module")
def aggregated(catalog):
    return search(_request(disaggregated=False, speculative=False, top=50), catalog)


def approximate(curve, load, replicas: int, *, slot_cap: int, nodes: int = 64):
    """One deployment through the approximation (at ``queueing.approximate``'s 64 length nodes
    unless told), its running sequences capped at ``slot_cap``."""
    return approximate_many(CurveTable.of([curve]), load, curve_index=np.zeros(1, np.int64), replicas=replicas,
                            slots=slot_cap, nodes=nodes).row(0)


def _meets(t, targets: Targets) -> None:
    for name in ("ttft_p50_s", "ttft_p95_s", "ttft_p99_s", "tpot_p95_s", "e2e_p95_s"):
        limit = getattr(targets, name)
        if limit is not None:
            assert getattr(t, name) <= limit * (1 + 1e-9), name


def test_every_aggregated_pick_meets_every_target_reevaluated_one_by_one(catalog, aggregated):
    assert aggregated.results
    rl = resolve_load(catalog, _request())
    for r in aggregated.results:  # the deployment rebuilt from the result's own fields, not the search's arrays
        dep = Deployment(model=r.model, gpu=r.accelerator, gpus=r.gpus_per_instance, quantization=r.quantization,
                         engine=r.engine, kv_cache_dtype=r.kv_cache_dtype, tensor_parallel_size=r.tensor_parallel_size,
                         pipeline_parallel_size=r.pipeline_parallel_size, max_model_len=rl.max_model_len)
        curve = service_curve(dep, Workload(input_len=rl.input_len, output_len=rl.output_len), catalog,
                              points=evaluate.CURVE_POINTS)
        t = approximate(curve, rl.load, r.replicas, slot_cap=r.max_num_seqs)
        assert t.stable
        _meets(t, aggregated.targets)
        assert t.ttft_p95_s == pytest.approx(r.ttft_p95_s, rel=1e-6)
        assert r.scenario["model"] == r.model and r.scenario["engine"] == r.engine


def test_disaggregated_picks_meet_the_targets_by_a_scalar_rederivation(catalog):
    res = search(_request(speculative=False, top=200), catalog)
    pools = [r for r in res.results if r.disaggregated]
    assert pools, "no disaggregated deployment among the picks"
    rl = resolve_load(catalog, _request())
    for r in pools[:3]:
        assert r.simulation is not None and r.simulation.meets  # the pools' simulation met them too
        prefill_pool, decode_pool = r.pools
        assert (prefill_pool.role, decode_pool.role) == ("prefill", "decode")
        assert (prefill_pool.instances, decode_pool.instances) == (r.prefill_instances, r.decode_instances)
        assert r.gpus == prefill_pool.instances * prefill_pool.gpus_per_instance + decode_pool.instances * decode_pool.gpus_per_instance

        def curve(pool):
            dep = Deployment(model=r.model, gpu=r.accelerator, gpus=pool.gpus_per_instance, quantization=r.quantization,
                             engine=r.engine, kv_cache_dtype=r.kv_cache_dtype,
                             tensor_parallel_size=pool.tensor_parallel_size, max_model_len=rl.max_model_len)
            return service_curve(dep, Workload(input_len=rl.input_len, output_len=rl.output_len), catalog,
                                 points=evaluate.CURVE_POINTS)

        full = curve(decode_pool)

        def decode_tpot(n: float) -> float:  # a decode-only step per token advanced
            return float(np.interp(n, full.concurrency, full.decode_step_s)) / full.tokens_per_step

        lam_d, n = rl.request_rate_per_s / r.decode_instances, 1.0
        for _ in range(50):
            n = min(max(lam_d * rl.output_len * decode_tpot(n), 1.0), r.max_num_seqs)
        tpot = decode_tpot(n)
        prefill = float(curve(prefill_pool).ttft_s[0])  # a lone prompt in the prefill pool's own layout
        wait = float(mgc_wait_quantile(rl.request_rate_per_s, prefill, 0.0, r.prefill_instances, 0.95)
                     + mgc_wait_quantile(lam_d, rl.output_len * tpot, 0.0, r.max_num_seqs, 0.95))
        assert tpot <= res.targets.tpot_p95_s
        assert wait + prefill + r.kv_transfer_s <= res.targets.ttft_p95_s
        assert rl.request_rate_per_s * prefill / r.prefill_instances < 1


@pytest.mark.parametrize("space, expert_widths, shared", [
    ({}, set(), set()),  # whole systems: several instances share one
    ({"systems": None, "accelerators": ("h100-sxm",), "pricing": "rent", "request_rate_per_s": 20.0}, set(), set()),  # each instance rented
    # a 72-GPU rack: expert-parallel cells of every width plan tries, the whole rack's 72 included, and
    # vLLM data-parallel ranks sharing the experts without expert parallelism at those widths but 72
    # (its 768-wide experts do not split over 72 GPUs: memory/tp_split.py)
    ({"models": ("qwen3-30b-a3b",), "systems": ("gb200-nvl72",), "pricing": "buy"}, {2, 4, 8, 16, 32, 64, 72},
     {(1, 2), (1, 4), (1, 8), (1, 16), (1, 32), (1, 64)}),
    # N rented L40S: TP 1 does not hold Qwen3-30B-A3B, ranks sharing its experts do (the cheapest here)
    ({"models": ("qwen3-30b-a3b",), "systems": None, "accelerators": ("l40s",), "pricing": "rent"}, {2, 4, 8},
     {(1, 2), (2, 2), (1, 4), (2, 4), (1, 8)}),
])
@pytest.mark.slow  # a search over many cells (CI runs it; the fast tier leaves it out)
def test_the_cheapest_equals_a_brute_force_minimum_over_the_same_cells(catalog, space, expert_widths, shared):
    """Over the same cells, every cap and replica count: the cheapest that meets the targets by the
    approximation and by the simulation's check (``sim_check``) is what the search ranks first."""
    from inferplan.search.sim_check import check_pick, launched_curve

    req = _request(disaggregated=False, speculative=False, **space)
    found = search(req, catalog)
    rl = resolve_load(catalog, req)
    best = math.inf
    cells = build_space(catalog, req, input_len=rl.input_len, output_len=rl.output_len).cells
    assert {c.gpus for c in cells if c.expert_parallel} == expert_widths
    assert {(c.tensor_parallel_size, c.data_parallel_size) for c in cells if c.experts_over_data_parallel} == shared
    if "accelerators" in space and shared:
        assert found.results[0].data_parallel_size > 1 and not found.results[0].expert_parallel
    for cell in cells:
        costs = unit_costs(catalog, cell.platform, cell.model)
        try:
            cm = evaluate.model_cell(catalog, cell, rl, costs, disaggregate=False)
        except InferplanError:
            continue
        quotes = costs.rents(cell.gpus) if req.pricing != "buy" else ()
        for cap in sorted({int(round(c)) for c in cm.curve.concurrency}):
            launched, held = launched_curve(catalog, cell, cap, rl, evaluate.workload(cell, rl), cm.curve)  # as simulated
            for replicas in range(1, 65):
                t = approximate(cm.curve, rl.load, replicas, slot_cap=cap, nodes=1)  # every request the mean: 1 node is exact
                if not t.stable or any(getattr(t, k) > getattr(TARGETS, k) for k in ("ttft_p95_s", "ttft_p99_s", "tpot_p95_s", "e2e_p95_s")):
                    continue
                if not check_pick(launched, rl.load, TARGETS, cap=held, replicas=replicas).meets:  # the simulation's check
                    continue
                units = float(evaluate.units(cell, np.array([replicas]))[0])
                if costs.owner_usd_per_month is not None and req.pricing != "rent":
                    best = min(best, units * costs.owner_usd_per_month)
                for quote in quotes:  # whole rented instances of any size, each engine instance inside one
                    best = min(best, float(quote.instances(replicas)) * quote.usd_per_instance_month)
                break  # more replicas of this cell and cap only cost more
    assert found.results[0].monthly_usd == pytest.approx(best, rel=1e-9)


def test_impossible_targets_give_a_reason_for_every_family(catalog):
    res = search(_request(targets=Targets(ttft_p95_s=0.001)), catalog)
    assert not res.results
    assert res.infeasible
    assert {x.reason for x in res.infeasible} <= {"latency", "memory"}
    latency = [x for x in res.infeasible if x.reason == "latency"]
    assert latency and all("TTFT p95 at best" in x.message and "0.001" in x.message for x in latency)
    assert all(x.message.endswith("(each the best over every replica count searched)") for x in latency)


def test_a_model_too_large_for_a_platform_is_a_memory_reason(catalog):
    res = search(SearchRequest(models=("deepseek-v3",), systems=("rtx-pro-6000-workstation",), engines=("vllm",),
                               request_rate_per_s=1, input_len=1000, output_len=100), catalog)
    assert not res.results
    assert res.infeasible and all(x.reason == "memory" for x in res.infeasible)


def test_caps_that_nothing_meets_are_named(catalog):
    res = search(_request(systems=("hgx-h100",), max_capex_usd=1000.0, pricing="buy"), catalog)
    assert not res.results
    assert {x.reason for x in res.infeasible} == {"budget"}
    res = search(_request(systems=("hgx-h100",), max_power_w=100.0), catalog)
    assert {x.reason for x in res.infeasible} == {"power"}


@pytest.mark.slow  # a search over many cells (CI runs it; the fast tier leaves it out)
def test_filters_hold(catalog):
    res = search(_request(max_gpus=4), catalog)
    assert res.results and all(r.gpus <= 4 for r in res.results)
    res = search(_request(pricing="rent"), catalog)
    assert res.results and all(r.rent_or_buy == "rent" for r in res.results)
    res = search(_request(pricing="buy"), catalog)
    assert res.results and all(r.rent_or_buy == "buy" and r.capex_usd > 0 for r in res.results)
    res = search(SearchRequest(**{**SMALL, "systems": None}, targets=TARGETS, form_factors=("workstation",)), catalog)
    tiers = {s.id: s.tier for s in catalog.systems}
    assert res.results and all(tiers[r.system] in FORM_FACTOR_TIERS["workstation"] for r in res.results)
    res = search(SearchRequest(**{**SMALL, "systems": None}, targets=TARGETS, vendors=("amd",)), catalog)
    assert all(catalog.accelerators.records[r.accelerator].vendor == "amd" for r in res.results)


@pytest.mark.slow  # a search over many cells (CI runs it; the fast tier leaves it out)
def test_results_are_ranked_by_the_objective(catalog):
    for objective, key in (("monthly", "monthly_usd"), ("gpus", "gpus_paid")):  # GPUs bought or rented
        res = search(_request(objective=objective, top=20), catalog)
        values = [getattr(r, key) for r in res.results]
        assert values == sorted(values)


def test_each_pick_loads_as_a_users_and_roi_scenario(catalog, aggregated):
    for r in aggregated.results[:3]:
        s = Scenario.model_validate(r.scenario)
        check_references(s, catalog)
        assert s.cell.tensor_parallel_size == r.tensor_parallel_size


def test_bad_input_is_refused_naming_the_field(catalog):
    with pytest.raises(InferplanError) as e:
        search(_request(systems=("no-such-system",)), catalog)
    assert e.value.field == "systems.0"  # indexed as models.0 is
    with pytest.raises(InferplanError) as e:
        search(_request(models=("no-such-model",)), catalog)
    assert e.value.field == "models.0"  # the index of the name at fault
    with pytest.raises(InferplanError) as e:  # filters that leave nothing are said, not an empty answer
        search(_request(systems=("hgx-h100",), max_gpus=4), catalog)
    assert e.value.field == "max_gpus"
    with pytest.raises(InferplanError) as e:
        search(_request(systems=None, accelerators=("mi300x",), engines=("trtllm",)), catalog)
    assert e.value.field == "engines"
    with pytest.raises(ValidationError):
        _request(request_rate_per_s=-1)
    with pytest.raises(InferplanError) as e:  # two loads: the second one named
        SearchRequest(models=("qwen3-8b",), users=10, request_rate_per_s=1, input_len=1, output_len=1)
    assert e.value.field == "request_rate_per_s"
    with pytest.raises(ValidationError):
        Targets(tpot_p95_s=0.05, min_output_tokens_per_s_per_user=20)


def test_a_trace_is_replayed_at_its_own_rate_and_lengths(catalog, tmp_path):
    rows = ["arrival_s,input_tokens,output_tokens"] + [f"{i * 0.25:g},{1400 + 50 * (i % 5)},{280 + 10 * (i % 3)}" for i in range(40)]
    path = tmp_path / "t.csv"
    path.write_text("\n".join(rows) + "\n")
    res = search(SearchRequest(models=("qwen3-8b",), systems=("hgx-h100",), engines=("vllm",), trace=str(path),
                               targets=Targets(ttft_p95_s=1.5)), catalog)
    assert res.load.trace == str(path)
    assert res.load.request_rate_per_s == pytest.approx(40 / 9.75, rel=0.05)
    assert res.results and all(r.ttft_p95_s <= 1.5 for r in res.results)


def test_a_trace_with_a_bad_row_is_refused_naming_the_row(tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text("arrival_s,input_tokens,output_tokens\n0,100,10\n0.5,-3,10\n")
    r = runner.invoke(app, ["search", "--model", "qwen3-8b", "--trace", str(path)])
    assert r.exit_code == 2
    assert "--trace" in r.output and "row 2 (line 3)" in r.output


@pytest.mark.slow  # a search over many cells (CI runs it; the fast tier leaves it out)
def test_more_load_or_tighter_targets_never_cost_less(catalog):
    base = dict(systems=None, accelerators=("h100-sxm",), pricing="rent", speculative=False)
    by_rate = [search(_request(request_rate_per_s=r, **base), catalog).results[0].monthly_usd for r in (2.0, 8.0, 32.0)]
    assert by_rate == sorted(by_rate) and by_rate[0] < by_rate[-1]
    by_ttft = [search(_request(targets=Targets(ttft_p95_s=t, tpot_p95_s=0.04), **base), catalog).results[0].monthly_usd
               for t in (2.0, 0.5, 0.2)]
    assert by_ttft == sorted(by_ttft)


def _space(catalog, **kw):
    req = SearchRequest(**{**SMALL, **kw})
    return build_space(catalog, req, input_len=1000, output_len=100)


def test_the_space_offers_mtp_drafts_expert_parallel_cells_and_labels_fallback_formats(catalog):
    cells = _space(catalog, models=("deepseek-v3",), systems=("hgx-b200",)).cells
    assert {c.speculative_tokens for c in cells} == {0, 1}  # DeepSeek-V3 ships an MTP layer; vLLM drafts with it
    assert any(c.expert_parallel and c.data_parallel_size == 8 for c in cells)
    assert {c.speculative_method for c in _space(catalog).cells if c.speculative_tokens} == {"eagle3"}  # Qwen3-8B: no MTP heads, a catalogued EAGLE-3 draft
    assert not _space(catalog, models=("deepseek-v3",), systems=("hgx-b200",), speculative=False).cells[0].speculative_tokens
    gptoss = _space(catalog, models=("gpt-oss-120b",), systems=("hgx-h100", "hgx-b200")).cells
    labels = {(c.platform.id, c.quantization): c.quantization_label for c in gptoss}
    assert labels[("hgx-b200", "mxfp4")] == "native"
    assert labels[("hgx-h100", "mxfp4")].startswith("fallback")


def test_every_listed_build_is_searched_sized_or_not_and_amd_w4a4_is_native_only_on_rocm(catalog):
    """Llama 3.3 70B's FP8, NVFP4 and AMD MXFP4 builds carry no byte size; the search still tries them."""
    cells = _space(catalog, models=("llama-3.3-70b",), systems=None, accelerators=("h100", "mi355x")).cells
    labels = {(c.platform.accelerator.id, c.quantization): c.quantization_label for c in cells}
    assert {"bf16", "fp8", "nvfp4", "mxfp4-w4a4"} <= {q for _, q in labels}
    assert labels[("mi355x", "mxfp4-w4a4")] == "native" and labels[("h100-sxm", "fp8")] == "native"
    assert labels[("h100-sxm", "mxfp4-w4a4")].startswith("fallback")


def test_engines_run_only_where_their_software_stack_does(catalog):
    cells = _space(catalog, engines=None, systems=("hgx-h100",), models=("qwen3-8b",)).cells
    assert "trtllm" in {c.engine for c in cells}
    amd = _space(catalog, engines=None, systems=None, accelerators=("mi300x",), models=("qwen3-8b",)).cells
    assert amd and "trtllm" not in {c.engine for c in amd}


def test_the_kv_hand_over_rides_the_fast_link_inside_a_domain_and_the_network_beyond(catalog):
    req = _request(systems=("hgx-h100",))
    rl = resolve_load(catalog, req)
    cell = next(c for c in build_space(catalog, req, input_len=rl.input_len, output_len=rl.output_len).cells
                if c.tensor_parallel_size == 2)
    cm = evaluate.model_cell(catalog, cell, rl, unit_costs(catalog, cell.platform, cell.model), disaggregate=True)
    assert evaluate.link_name(cm, 4) == "nvlink4"
    assert evaluate.link_name(cm, 16) == "infiniband-ndr"
    inside, beyond = evaluate._link_bytes_per_s(cm, np.array([4, 16]))
    assert inside == pytest.approx(900e9 / 2 * 2) and beyond == pytest.approx(50e9 * 2)


runner = CliRunner()


def test_cli_json_has_the_documented_keys():
    r = runner.invoke(app, ["search", "--model", "qwen3-8b", "--systems", "hgx-h100", "--engines", "vllm",
                            "--request-rate", "4", "--input-len", "1500", "--output-len", "300", "--ttft-p95", "1.5",
                            "--tpot-p95", "0.04", "--top", "3", "--json"])
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    for key in ("results", "infeasible", "candidates", "elapsed_s", "pareto", "api"):
        assert key in data
    first = data["results"][0]
    for key in ("system", "accelerator", "gpus", "quantization", "kv_cache_dtype", "engine", "tensor_parallel_size",
                "pipeline_parallel_size", "data_parallel_size", "expert_parallel", "replicas", "disaggregated",
                "usd_per_mtok", "monthly_usd", "capex_usd", "ttft_p50_s", "ttft_p95_s", "ttft_p99_s", "tpot_p95_s",
                "output_tokens_per_s_per_user", "requests_per_s", "binding", "deploy", "rent_or_buy"):
        assert key in first


@pytest.mark.parametrize("args, flag", [
    (["--rent", "--buy"], "--rent and --buy"),
    (["--systems", "no-such-system"], "--systems"),
    (["--request-rate", "-2"], "--request-rate"),
])
def test_cli_bad_input_exits_2_naming_the_flag(args, flag):
    base = ["search", "--model", "qwen3-8b", "--request-rate", "4", "--input-len", "100", "--output-len", "10"]
    r = runner.invoke(app, [*base, *args])
    assert r.exit_code == 2
    assert flag in r.output


def test_api_search_returns_what_the_find_the_cheapest_view_needs(tmp_path):
    client = TestClient(create_app(tmp_path / "t.db"))
    body = {"models": ["qwen3-8b"], "systems": ["hgx-h100"], "engines": ["vllm"], "request_rate_per_s": 4,
            "input_len": 1500, "output_len": 300, "targets": {"ttft_p95_s": 1.5, "tpot_p95_s": 0.04}, "top": 3}
    r = client.post("/api/search", json=body)
    assert r.status_code == 200, r.text
    data = r.json()
    assert data["results"] and data["pareto"] and "infeasible" in data and data["candidates"] > 0
    Scenario.model_validate(data["results"][0]["scenario"])
    r = client.post("/api/search", json={**body, "systems": ["no-such-system"]})
    assert r.status_code == 422
    assert r.json()["detail"][0]["loc"] == ["body", "systems", "0"]  # the entry at fault, as models.0
    no_rate = {"request_rate_per_s": None, "input_len": None, "output_len": None}
    for bad, loc in (({"models": ["/etc/passwd"]}, ["body", "models", "0"]), ({"trace": "/tmp/t.csv", **no_rate}, ["body", "trace"])):
        r = client.post("/api/search", json={**body, **bad})
        assert r.status_code == 422 and r.json()["detail"][0]["loc"] == loc, r.text


def test_an_engine_is_searched_on_a_stack_no_measurement_checks_only_when_named():
    """MLX runs on CUDA (engines.yaml) but its speed there is unmeasured: a search of an H100 node tries
    it only when asked for by name."""
    from inferplan.catalog.loader import load_catalog
    from inferplan.search.request import SearchRequest
    from inferplan.search.space import build_space

    catalog = load_catalog()
    assert "cuda" in catalog.engine("mlx").runs_on_unmeasured
    base = dict(models=("qwen3-8b",), request_rate_per_s=1.0, input_len=1000, output_len=100, systems=("hgx-h100",))
    engines = {c.engine for c in build_space(catalog, SearchRequest(**base), input_len=1000, output_len=100).cells}
    assert "mlx" not in engines and "vllm" in engines
    named = build_space(catalog, SearchRequest(**base, engines=("mlx",)), input_len=1000, output_len=100).cells
    assert named and {c.engine for c in named} == {"mlx"}


def test_separate_pools_share_systems_gpu_by_gpu():
    from inferplan.search.space import Cell, Platform

    class _Sys:  # a stand-in system: only its presence matters to the packing
        id = "eight-gpu-system"

    p = Platform("eight-gpu-system", accelerator=None, system=_Sys(), gpus=8, domain_gpus=8)
    tp4, tp8 = (Cell("m", p, "fp8", "native", "auto", "vllm", tp, 1) for tp in (4, 8))
    assert evaluate.pool_units(tp8, tp4, np.array([2.0, 3.0]), np.array([1.0, 1.0])).tolist() == [2.0, 3.0]
    assert evaluate.pool_units(tp4, tp4, np.array([3.0]), np.array([2.0])).tolist() == [3.0]  # one layout: 5 × TP4


@pytest.mark.slow  # a search over many cells (CI runs it; the fast tier leaves it out)
def test_the_cheapest_separate_pools_equal_a_brute_force_minimum_over_every_layout_pair(catalog):
    """Every (decode cell, prefill layout) pair of the small space, every pool size up to 40 and every
    running cap, scored by the closed formulas the search uses for separate pools: its cheapest
    disaggregated pick is the minimum, and it is found with prefill and decode in their own layouts."""
    req = _request(speculative=False, top=1000)
    found = search(req, catalog)
    rl = resolve_load(catalog, req)
    lam, out = rl.request_rate_per_s, rl.output_len
    models, _ = model_cells(catalog, build_space(catalog, req, input_len=rl.input_len, output_len=rl.output_len), rl,
                            disaggregate=True)
    sizes = np.arange(1, 41, dtype=float)
    p, q = (a.ravel() for a in np.meshgrid(sizes, sizes, indexing="ij"))
    best = math.inf
    for dec in models:
        for pre in models:
            same = (pre.cell.model, pre.cell.platform.id, pre.cell.engine, pre.cell.quantization, pre.cell.kv_cache_dtype)
            if not dec.disaggregates or same != (dec.cell.model, dec.cell.platform.id, dec.cell.engine,
                                                 dec.cell.quantization, dec.cell.kv_cache_dtype):
                continue
            quotes = dec.costs.rents(max(pre.cell.gpus, dec.cell.gpus))
            prefill = float(pre.curve.ttft_s[0])
            gpus = p * pre.cell.gpus + q * dec.cell.gpus
            kv = dec.kv_bytes_per_request / evaluate._link_bytes_per_s(dec, gpus, min(pre.cell.gpus, dec.cell.gpus))
            for cap in sorted({float(np.clip(round(c), 1, dec.curve.slots)) for c in dec.curve.concurrency}):
                n = np.ones_like(q)
                for _ in range(50):
                    n = np.clip(lam / q * out * dec.decode_tpot_s(n), 1.0, cap)
                tpot = dec.decode_tpot_s(n)
                ttft = {}
                for name, level in (("p95", 0.95), ("p99", 0.99)):
                    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
                        ttft[name] = (mgc_wait_quantile(lam, prefill, 0.0, p, level)
                                      + mgc_wait_quantile(lam / q, out * tpot, 0.0, cap, level) + prefill + kv)
                ok = ((lam * prefill / p < 1) & (lam / q * out * tpot / cap < 1) & (tpot <= TARGETS.tpot_p95_s)
                      & (ttft["p95"] <= TARGETS.ttft_p95_s) & (ttft["p99"] <= TARGETS.ttft_p99_s)
                      & (ttft["p95"] + out * tpot <= TARGETS.e2e_p95_s))
                if ok.any():
                    costs = []
                    if dec.costs.owner_usd_per_month is not None:
                        costs.append(evaluate.pool_units(dec.cell, pre.cell, p[ok], q[ok]) * dec.costs.owner_usd_per_month)
                    for quote in quotes:  # a hand-over on the fast link keeps both pools in one rented host
                        rented = quote.pool_instances(p[ok], pre.cell.gpus, q[ok], dec.cell.gpus)
                        fast = evaluate.handover.inside(dec.cell.platform.accelerator, dec.cell.platform.domain_gpus,
                                                        gpus[ok], dec.cell.systems_per_instance)
                        costs.append(np.where(fast & (rented > 1), np.inf, rented * quote.usd_per_instance_month))
                    best = min(best, *(float(c.min()) for c in costs))
    pools = [r for r in found.results if r.disaggregated]
    assert pools and min(r.monthly_usd for r in pools) == pytest.approx(best, rel=1e-9)
    assert any(r.pools[0].tensor_parallel_size != r.pools[1].tensor_parallel_size for r in pools)  # own layouts searched


@pytest.mark.slow  # a search over many cells (CI runs it; the fast tier leaves it out)
def test_every_pick_on_every_engine_comes_with_its_launch_command(catalog):
    """TensorRT-LLM's data-parallel, FP8-KV and MTP picks included (written to its options file)."""
    found = search(_request(models=("qwen3-30b-a3b", "deepseek-v2-lite"), systems=("hgx-h100",),
                            engines=("vllm", "sglang", "trtllm"), top=300), catalog)
    engines = {r.engine for r in found.results}
    assert {"trtllm", "sglang", "vllm"} <= engines and any(r.data_parallel_size > 1 for r in found.results)
    assert all(not r.deploy.startswith("no launch command") for r in found.results), \
        [r.deploy for r in found.results if r.deploy.startswith("no launch command")][:3]
    # a data-parallel pick names each rank's cap, the one its vLLM launch gives and perf takes
    ranked = [r for r in found.results if r.data_parallel_size > 1 and r.engine == "vllm" and not r.disaggregated]
    assert ranked and all(r.max_num_seqs_per_rank == -(-r.max_num_seqs // r.data_parallel_size)
                          and f"--max-num-seqs {r.max_num_seqs_per_rank}" in r.deploy for r in ranked)


def test_among_equal_cost_candidates_the_tail_stays_short(catalog):
    """200 chat-seat users of Qwen3-32B on a tinybox: every running cap from 2 up costs the same
    $742/month on one box at the same mean speed, and the first tried, 2, won (TTFT p99 8.41 s);
    the slow request (TTFT p99, then the TPOT p95 per output token) picks a cap whose TTFT tail stays
    near its median at the same TPOT p95, and no candidate of that cell at the price is shorter."""
    req = SearchRequest(models=("qwen3-32b",), users=200, workload="chat-seat", targets=Targets(ttft_p95_s=2.0),
                        systems=("tinybox-red-v2",), engines=("vllm",), quantizations=("fp8-block",),
                        kv_cache_dtypes=("fp8",), speculative=False, disaggregated=False, top=1)
    pick = search(req, catalog).results[0]
    assert pick.max_num_seqs > 2 and pick.ttft_p99_s < 2 * pick.ttft_p50_s
    rl = resolve_load(catalog, req)
    space = build_space(catalog, req, input_len=rl.input_len, output_len=rl.output_len)
    models, _ = model_cells(catalog, space, rl, disaggregate=False)
    from inferplan.search.run import effective_targets, slow_request_s
    from inferplan.search.reasons import target_mask

    targets = effective_targets(req.targets, rl)
    for cm, grids in zip(models, evaluate.evaluate_cells(models, rl, pricing=req.pricing)):
        if cm.cell.tensor_parallel_size != pick.tensor_parallel_size:
            continue
        for g in grids:
            monthly, _, _ = evaluate.route(g, None)
            same = g.stable & target_mask(g, targets) & np.isclose(monthly, pick.monthly_usd) & (g.gpus == pick.gpus)
            if same.any():
                slowest_allowed = pick.ttft_p99_s + rl.output_len * pick.tpot_p95_s
                assert slow_request_s(g, rl)[same].min() >= slowest_allowed * (1 - 1e-6)


def test_nothing_found_says_which_smaller_format_would_fit(catalog):
    """DeepSeek-R1-Distill-Qwen-14B's only published build on its card is BF16 (30 GB): on one RTX 4090
    every family of the engines that load published builds fails on memory. Each says the format fit
    suggests (FP8, which vLLM and SGLang make from the BF16 build at load), and searching with it finds picks."""
    base = dict(models=("deepseek-r1-distill-qwen-14b",), users=5, accelerators=("rtx-4090",), max_gpus=1,
                engines=("vllm", "sglang"))
    res = search(SearchRequest(**base), catalog)
    assert not res.results
    hinted = {x.engine: x.fits_in_quantization for x in res.infeasible if x.reason == "memory"}
    assert hinted and all(hinted.values()), res.infeasible
    from inferplan.report.search_view import infeasible_text

    assert all(f"it fits as {x.fits_in_quantization}" in infeasible_text(x) for x in res.infeasible if x.fits_in_quantization)
    found = search(SearchRequest(**base, quantizations=tuple(set(hinted.values()))), catalog)
    assert found.results and {r.quantization for r in found.results} <= set(hinted.values())


def test_llamacpp_families_include_the_gguf_types_it_converts_to(catalog):
    """llama.cpp makes GGUF files from a 16-bit checkpoint (engines.yaml ``converts_to``): unasked, a
    search tries them for Qwen3-32B beside its published GGUF builds (Qwen's own Q4_K_M and Q8_0), the
    conversions labelled converted, and one RTX 4090 serves it as the published Q4_K_M (19.8 GB) or a
    converted Q5_K_M, where its BF16 build needs 66 GB."""
    res = search(SearchRequest(models=("qwen3-32b",), users=5, accelerators=("rtx-4090",), engines=("llamacpp",),
                               max_gpus=1), catalog)
    assert res.results, res.infeasible
    labels = {r.quantization: r.quantization_label for r in res.results}
    assert "gguf-q5_k_m" in labels and set(labels) <= {"gguf-q4_k_m", "gguf-q5_k_m"}
    assert labels["gguf-q5_k_m"].endswith("converted from the bf16 build")
    assert "converted" not in labels.get("gguf-q4_k_m", "")  # Qwen's own file, a published build
    asked = search(SearchRequest(models=("qwen3-32b",), users=5, accelerators=("rtx-4090",), engines=("llamacpp",),
                                 max_gpus=1, quantizations=("bf16",)), catalog)
    assert not asked.results  # named formats are the only ones tried


def test_no_conversion_without_a_build_it_converts_from(catalog):
    """DeepSeek-V3.2's only build is FP8 block-scaled (not in llama.cpp's ``converts_from``): nothing is
    converted, so llama.cpp has no family to search unless a GGUF type is named."""
    from inferplan.errors import InvalidScenarioError
    from inferplan.search.space import build_space

    req = dict(models=("deepseek-v3.2",), users=5, engines=("llamacpp",), accelerators=("h200",))
    with pytest.raises(InvalidScenarioError):
        build_space(catalog, SearchRequest(**req), input_len=1000, output_len=100)
    named = build_space(catalog, SearchRequest(**req, quantizations=("gguf-q4_k_m",)), input_len=1000, output_len=100)
    assert {c.quantization for c in named.cells} == {"gguf-q4_k_m"}
    assert not any("converted" in c.quantization_label for c in named.cells)


def test_mlx_families_include_the_mlx_bits_it_converts_to(catalog):
    """mlx_lm.convert -q makes 8, 6 and 4-bit MLX weights from a 16-bit build: an M4 Max search of
    Qwen3-32B (no MLX build on its card) explains each of them, labelled converted."""
    from inferplan.search.space import build_space

    space = build_space(catalog, SearchRequest(models=("qwen3-32b",), users=2, accelerators=("m4-max",),
                                               engines=("mlx",)), input_len=2000, output_len=500)
    labels = {c.quantization: c.quantization_label for c in space.cells}
    assert set(labels) == {"bf16", "mlx-8bit", "mlx-6bit", "mlx-4bit"}
    assert labels["bf16"] == "native" and labels["mlx-4bit"] == "native; converted from the bf16 build"


def test_every_aggregated_pick_also_meets_the_targets_in_the_simulation(aggregated):
    """Each pick's simulated percentiles (``sim_check``: 20,000 requests, seed 0) meet every target,
    and the pick says it was checked."""
    assert aggregated.results
    for r in aggregated.results:
        assert r.simulation is not None and r.simulation.meets, r
        for name in ("ttft_p95_s", "ttft_p99_s", "tpot_p95_s", "e2e_p95_s"):
            assert getattr(r.simulation, name) <= getattr(TARGETS, name)
        assert any(n.startswith("checked by a simulation of 20,000 requests") for n in r.notes)
