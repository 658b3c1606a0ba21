"""inferplan search under bursty arrivals and spread lengths: the stated load reaches the
approximation, every pick meets its targets re-evaluated one by one, burstier or more spread
loads never cost less, the separate pools mix their arrival states, and bad input is refused by
name in the library, the CLI and the API."""

from __future__ import annotations

import math

import numpy as np
import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from inferplan.errors import InferplanError
from inferplan.inputs.deployment import Deployment
from inferplan.inputs.workload import Workload
from inferplan.report.search_view import deployment_text
from inferplan.search import evaluate
from inferplan.search.arrivals import Load, length_quantiles
from inferplan.search.load import LONG_REQUEST_QUANTILE, resolve_load
from inferplan.search.mgc import mgc_wait, mgc_wait_quantile
from inferplan.search.queueing import approximate_many
from inferplan.search.tail_types import CurveTable
from inferplan.search.wait_quantiles import mixture_wait_quantile
from inferplan.search.request import SearchRequest, Targets
from inferplan.search.run import search
from inferplan.search.service import service_curve
from inferplan.search.trace import trace_from_rows
from inferplan.shells.api import create_app
from inferplan.shells.cli import app

runner = CliRunner()
BASE = dict(models=("qwen3-8b",), systems=("hgx-h100", "tinybox-green-v2"), engines=("vllm",),
            request_rate_per_s=4.0, input_len=1500, output_len=300, speculative=False)
TARGETS = Targets(ttft_p95_s=1.5, ttft_p99_s=3.0, tpot_p95_s=0.04, e2e_p95_s=20)


def _request(**kw) -> SearchRequest:
    return SearchRequest(**{**BASE, "targets": TARGETS, **kw})


def test_the_stated_arrivals_and_spreads_reach_the_load(catalog):
    rl = resolve_load(catalog, _request(arrival="bursty", peak_to_average=3, burst_period_s=30,
                                        input_tokens_scv=1.0, output_tokens_scv=0.5))
    assert (rl.load.arrival, rl.load.peak_to_average, rl.load.burst_period_s) == ("bursty", 3, 30)
    assert (rl.load.input_tokens_scv, rl.load.output_tokens_scv) == (1.0, 0.5)
    assert rl.load.states() == ((0.75, 12.0), (0.25, 4.0 / 3))
    # cells hold the 99.9th percentile of each spread length, not the means
    want = math.ceil(float(length_quantiles(1500, 1.0, LONG_REQUEST_QUANTILE))) + math.ceil(float(length_quantiles(300, 0.5, 0.999)))
    assert rl.max_model_len == want and want > 4 * (1500 + 300)
    users = resolve_load(catalog, SearchRequest(models=("qwen3-8b",), users=200, arrival="bursty", peak_to_average=2))
    assert users.load.arrival == "bursty" and users.load.peak_to_average == 2
    assert resolve_load(catalog, _request()).max_model_len == 1800  # no spread: the mean lengths


@pytest.mark.parametrize("load", [dict(arrival="bursty", peak_to_average=3.0),
                                  dict(input_tokens_scv=1.0, output_tokens_scv=1.0)])
def test_every_pick_under_the_load_meets_every_target_reevaluated_one_by_one(catalog, load):
    req = _request(disaggregated=False, top=8, **load)
    res = search(req, catalog)
    assert res.results
    rl = resolve_load(catalog, req)
    assert res.load.arrival == rl.load.arrival and res.load.longest_request_tokens == rl.max_model_len
    for r in res.results:
        assert r.max_model_len == rl.max_model_len  # well within qwen3-8b's context
        dep = Deployment(model=r.model, gpu=r.accelerator, gpus=r.gpus_per_instance, quantization=r.quantization,
                         engine=r.engine, kv_cache_dtype=r.kv_cache_dtype, tensor_parallel_size=r.tensor_parallel_size,
                         pipeline_parallel_size=r.pipeline_parallel_size, max_model_len=r.max_model_len)
        curve = service_curve(dep, Workload(input_len=rl.input_len, output_len=rl.output_len), catalog,
                              points=evaluate.CURVE_POINTS)
        t = approximate_many(CurveTable.of([curve]), rl.load, curve_index=np.zeros(1, np.int64), replicas=r.replicas,
                             slots=r.max_num_seqs, nodes=evaluate.VERIFY_NODES).row(0)
        assert t.stable
        for name in ("ttft_p95_s", "ttft_p99_s", "tpot_p95_s", "e2e_p95_s"):
            assert getattr(t, name) <= getattr(TARGETS, name) * (1 + 1e-9), (r.platform, name)


def test_burstier_arrivals_never_cost_less_and_a_faint_burst_is_poisson(catalog):
    cost = lambda **kw: search(_request(top=1, **kw), catalog).results[0].monthly_usd  # noqa: E731
    poisson = cost()
    assert cost(arrival="bursty", peak_to_average=1.001) == pytest.approx(poisson, rel=1e-12)
    by_peak = [cost(arrival="bursty", peak_to_average=x) for x in (1.5, 3.0, 6.0)]
    assert [poisson, *by_peak] == sorted([poisson, *by_peak]) and by_peak[-1] > poisson


def test_a_mixture_of_states_waits_at_its_quantile():
    lam, s, c = np.array([3.0, 0.5]), 1.0, 4
    p, m = mgc_wait(lam, s, 1.0, c)
    one = mixture_wait_quantile([1.0], p[None, :1], m[None, :1], 0.95)
    assert one[0] == pytest.approx(float(mgc_wait_quantile(3.0, s, 1.0, c, 0.95)), rel=1e-12)
    w = np.array([0.8, 0.2])
    t = mixture_wait_quantile(w, p[None, :], m[None, :], 0.95)[0]
    # at the answer the mixture's CDF is 0.95: each state 1 − P(wait)·e^{−t·P/mean}
    cdf = float(np.sum(w * (1 - np.where(p > 0, p * np.exp(-t * p / np.where(m > 0, m, 1.0)), 0.0))))
    assert cdf == pytest.approx(0.95, abs=1e-6)
    assert float(mgc_wait_quantile(0.5, s, 1.0, c, 0.95)) < t < float(mgc_wait_quantile(3.0, s, 1.0, c, 0.95))


def test_separate_pools_wait_in_each_arrival_state(catalog):
    """A decode pool under bursty arrivals is sized on its busy state: its TPOT is the busy state's
    and the fewest instances carry the peak rate, not the mean."""
    req = _request(systems=("hgx-h100",), arrival="bursty", peak_to_average=4.0)
    rl, flat = resolve_load(catalog, req), resolve_load(catalog, _request(systems=("hgx-h100",)))
    cell = next(c for c in evaluate_cells(catalog, req) if c.disaggregates)
    bursty, poisson = evaluate._decode_side(cell, rl), evaluate._decode_side(cell, flat)
    at_peak = evaluate._decode_side(cell, resolve_load(catalog, _request(systems=("hgx-h100",), request_rate_per_s=16.0)))
    assert bursty["decode"].min() == at_peak["decode"].min() > poisson["decode"].min()
    assert np.all(bursty["tpot"] >= bursty["tpot_mean"] - 1e-15)
    pre = evaluate._prefill_side(cell, rl)
    assert pre["util"] * pre["prefill"] == pytest.approx(16.0 * pre["prefill_s"])  # the busy spells' 4 × 4/s


def test_a_trace_of_even_arrivals_waits_less_for_a_prefill_instance_than_poisson(catalog):
    rows = [{"arrival_s": 0.1 * i, "input_tokens": 1500, "output_tokens": 300} for i in range(400)]
    trace = SearchRequest(models=("qwen3-8b",), systems=("hgx-h100",), engines=("vllm",), trace=rows)
    rl = resolve_load(catalog, trace)
    assert rl.load.arrival_scv() == pytest.approx(0.0, abs=1e-9)
    poisson = resolve_load(catalog, _request(systems=("hgx-h100",), request_rate_per_s=rl.request_rate_per_s))
    cell = next(c for c in evaluate_cells(catalog, trace) if c.disaggregates)
    even, random = evaluate._prefill_side(cell, rl), evaluate._prefill_side(cell, poisson)
    busy = random["p95"] > 0
    assert busy.any() and np.all(even["p95"][busy] < random["p95"][busy])


def evaluate_cells(catalog, req):
    from inferplan.search.pricing import unit_costs
    from inferplan.search.space import build_space

    rl = resolve_load(catalog, req)
    for cell in build_space(catalog, req, input_len=rl.input_len, output_len=rl.output_len).cells:
        try:
            yield evaluate.model_cell(catalog, cell, rl, unit_costs(catalog, cell.platform, cell.model), disaggregate=True)
        except InferplanError:
            continue


@pytest.mark.parametrize("kw, field", [
    (dict(peak_to_average=3.0), "peak_to_average"),
    (dict(burst_period_s=10.0), "burst_period_s"),
    (dict(request_rate_per_s=None, input_len=None, output_len=None, input_tokens_scv=1.0,
          trace=[{"arrival_s": 0, "input_tokens": 10, "output_tokens": 5}]), "input_tokens_scv"),
    (dict(request_rate_per_s=None, input_len=None, output_len=None, arrival="bursty",
          trace=[{"arrival_s": 0, "input_tokens": 10, "output_tokens": 5}]), "arrival"),
])
def test_arrival_settings_that_do_not_apply_are_refused_by_name(kw, field):
    with pytest.raises(InferplanError) as e:
        _request(**kw)
    assert e.value.field == field and e.value.allowed


@pytest.mark.parametrize("args, flag", [
    (["--peak-to-average", "3"], "--peak-to-average"),
    (["--arrival", "sometimes"], "--arrival"),
    (["--arrival", "bursty", "--peak-to-average", "0.5"], "--peak-to-average"),
    (["--input-scv", "-1"], "--input-scv"),
    (["--lengths", "uniform", "--output-scv", "0.5"], "--output-scv"),
    (["--lengths", "triangular", "--output-scv", "0.1"], "--lengths"),
])
def test_cli_refuses_arrival_flags_naming_the_flag(args, flag):
    base = ["search", "--model", "qwen3-8b", "--request-rate", "4", "--input-len", "100", "--output-len", "10"]
    r = runner.invoke(app, [*base, *args])
    assert r.exit_code == 2 and r.output.startswith(f"error: {flag}"), r.output


def test_cli_and_api_search_bursty_loads_alike(tmp_path):
    args = ["search", "--model", "qwen3-8b", "--systems", "hgx-h100", "--engines", "vllm", "--request-rate", "4",
            "--input-len", "1500", "--output-len", "300", "--ttft-p95", "1.5", "--arrival", "bursty",
            "--peak-to-average", "3", "--output-scv", "0.5", "--top", "2", "--json"]
    r = runner.invoke(app, args)
    assert r.exit_code == 0, r.output
    import json

    cli = json.loads(r.stdout)
    body = {"models": ["qwen3-8b"], "systems": ["hgx-h100"], "engines": ["vllm"], "request_rate_per_s": 4,
            "input_len": 1500, "output_len": 300, "targets": {"ttft_p95_s": 1.5}, "arrival": "bursty",
            "peak_to_average": 3, "output_tokens_scv": 0.5, "top": 2}
    client = TestClient(create_app(tmp_path / "t.db"))
    api = client.post("/api/search", json=body)
    assert api.status_code == 200, api.text
    assert api.json()["load"]["arrival"] == cli["load"]["arrival"] == "bursty"
    assert [x["monthly_usd"] for x in api.json()["results"]] == [x["monthly_usd"] for x in cli["results"]]
    bad = client.post("/api/search", json={**body, "arrival": "poisson"})
    assert bad.status_code == 422 and bad.json()["detail"][0]["loc"] == ["body", "peak_to_average"], bad.text
    view = client.post("/api/views/search", json=body)
    assert view.status_code == 200 and "bursts at 3× the mean rate" in view.json()["summary"]
    picks = view.json()["result"]["results"]  # each row carries its pick's notes, as the CLI prints them
    assert [row["notes"] for row in view.json()["rows"]] == [p["notes"] for p in picks] and picks[0]["notes"]
    wide = client.post("/api/search", json={**body, "lengths": "uniform"})
    assert wide.status_code == 422 and wide.json()["detail"][0]["loc"] == ["body", "output_tokens_scv"], wide.text
    uniform = client.post("/api/search", json={**body, "lengths": "uniform", "output_tokens_scv": 0.3})
    assert uniform.status_code == 200 and uniform.json()["load"]["lengths"] == "uniform", uniform.text
    assert uniform.json()["load"]["longest_request_tokens"] < cli["load"]["longest_request_tokens"]


def test_a_trace_rows_arrival_spread_is_its_own():
    trace = trace_from_rows([{"arrival_s": 0.1 * i, "input_tokens": 100 + i, "output_tokens": 10} for i in range(50)])
    load = Load.from_trace(trace)
    assert load.arrival == "trace" and load.input_tokens_scv > 0 and load.output_tokens_scv == 0


def test_spells_the_replica_cannot_serve_are_a_fluid_queue():
    """Busy spells above capacity, quiet ones below, time-averaged load below: every busy arrival
    waits exponentially with the two-state fluid queue's mean, a share of quiet ones alike; above
    capacity on average it stays unstable; spells it serves build part of their steady wait."""
    from inferplan.search.bursts import spell_waits

    load = Load(arrival="bursty", peak_to_average=1.5, burst_period_s=60.0, request_rate_per_s=1.0)
    d_b, d_q = 24.0, 36.0
    rho = np.array([[1.2, 0.6], [1.2, 0.9], [0.9, 0.5]])  # fluid; above capacity on average; served
    p = np.array([[1.0, 0.3], [1.0, 0.6], [0.8, 0.2]])
    w = np.array([[np.inf, 0.5], [np.inf, 2.0], [4.0, 0.3]])
    stable = np.array([[False, True], [False, True], [True, True]])
    p2, w2, ok = spell_waits(load, p, w, rho, stable)
    m = 1 / (1 / (0.2 * d_b) - 1 / (0.4 * d_q))  # 9.6 s
    share = 0.2 / (0.4 * 1.5)
    assert (p2[0, 0], w2[0, 0]) == pytest.approx((1.0, m))
    assert p2[0, 1] == pytest.approx(1 - 0.7 * (1 - share)) and w2[0, 1] == pytest.approx(0.5 + share * m)
    assert ok[0].all() and not ok[1, 0]  # 1.2/2.5 + 0.9·1.5/2.5 = 1.02: unstable
    assert w2[2, 0] == pytest.approx(0.8 / (0.1 + math.sqrt(0.01 + 1.6 / d_b)))  # σ² = 2·4·0.1, δ = 0.1
    assert w[2, 1] < w2[2, 0] < w[2, 0]  # a served busy spell builds part of its steady wait
    same = spell_waits(Load(request_rate_per_s=1.0), p[:, :1], w[:, :1], rho[:, :1], stable[:, :1])
    assert all(np.array_equal(a, b) for a, b in zip(same, (p[:, :1], w[:, :1], stable[:, :1])))


def test_bursts_err_long_against_the_simulation_where_spells_are_served(catalog):
    """Bursts of 1.5× at 60 % mean load: the busy spells run at 90 % and are served, the queue built
    over each spell. The approximation is stable and its TTFT p99 is above the simulated one (0.25 s
    against about 0.20 s in every seed); its p95 lies within 10 % of the simulation's."""
    from inferplan.search.queueing import approximate
    from inferplan.search.simulate import simulate

    curve, load = _bursty_llama_8b(catalog, 0.6)
    a, s = approximate(curve, load), simulate(curve, load, requests=30_000, seed=1)
    assert a.stable and math.isfinite(a.ttft_p99_s)
    assert a.ttft_p99_s >= 1.1 * s.ttft_p99_s
    assert a.ttft_p95_s == pytest.approx(s.ttft_p95_s, rel=0.1)


def test_overloaded_bursts_err_long_against_the_simulations_average_not_one_run(catalog):
    """Bursts of 1.5× at 80 % mean load overload the replica in every busy spell (120 %) and the quiet
    spells drain the backlog. One run of 30,000 requests sees only a few dozen spells, so its TTFT
    percentiles scatter (p95 from about 3 to 29 s across seeds) and even the mean of eight runs moves by
    half; over 32 seeds the approximation, which prices the spells' long-run mixture as a fluid queue,
    lies above the simulated mean at p95 and p99 (on the safe side, as under every burst), by less
    than 70 % and 90 % (43 % and 60 % as shipped, docs/search.md)."""
    from inferplan.search.queueing import approximate
    from inferplan.search.simulate import simulate

    curve, load = _bursty_llama_8b(catalog, 0.8)
    a = approximate(curve, load)
    runs = [simulate(curve, load, requests=30_000, seed=seed) for seed in range(32)]
    assert a.stable and math.isfinite(a.ttft_p99_s)
    assert max(r.ttft_p95_s for r in runs) > 3 * min(r.ttft_p95_s for r in runs)  # one run is no yardstick
    p95, p99 = np.mean([r.ttft_p95_s for r in runs]), np.mean([r.ttft_p99_s for r in runs])
    assert p95 < a.ttft_p95_s < 1.7 * p95
    assert p99 < a.ttft_p99_s < 1.9 * p99


def _bursty_llama_8b(catalog, mean_load: float):
    """Llama 3.1 8B on an H100, 1024/256 tokens, bursts of 1.5× at ``mean_load`` of a full batch."""
    from inferplan.search.queueing import approximate

    # at vLLM 0.33's 0.92: the batch these loads are tuned to
    curve = service_curve(Deployment(model="llama-3.1-8b", gpu="H100", engine_version="0.33.0"),
                          Workload(input_len=1024, output_len=256), catalog)
    unit = approximate(curve, Load(request_rate_per_s=1.0, input_tokens=1024, output_tokens=256)).utilisation
    return curve, Load(arrival="bursty", peak_to_average=1.5, request_rate_per_s=mean_load / unit, input_tokens=1024,
                       output_tokens=256)


def test_uniform_lengths_keep_their_mean_and_spread_and_stop_at_a_third():
    """A benchmark's random dataset draws each length evenly from a range: draws and nodes keep the
    stated mean and SCV, the range runs from 0 to twice the mean at SCV 1/3, beyond it is refused."""
    from inferplan.search.arrivals import draw_lengths, length_nodes

    draws = draw_lengths(np.random.default_rng(0), 512.0, 1 / 3, 200_000, "uniform")
    assert draws.mean() == pytest.approx(512, rel=0.01) and draws.var() / draws.mean() ** 2 == pytest.approx(1 / 3, rel=0.02)
    assert draws.min() == 1 and draws.max() == 1024
    nodes = length_nodes(512.0, 1 / 3, 16, "uniform")
    assert nodes.mean() == pytest.approx(512) and nodes[0] == pytest.approx(32) and nodes[-1] == pytest.approx(992)
    assert not np.allclose(nodes, length_nodes(512.0, 1 / 3, 16))  # not the log-normal's
    with pytest.raises(ValueError, match="lengths"):
        Load(request_rate_per_s=1.0, input_tokens_scv=0.5, lengths="uniform")


def test_sglang_random_runs_are_validated_with_uniform_lengths():
    from inferplan.catalog.loader import load_catalog
    from inferplan.validation.latency import _load

    catalog = load_catalog()
    points = [p for p in catalog.latency_points if p.engine == "sglang" and p.dataset == "random"]
    assert points and all(_load(p, catalog).lengths == "uniform" for p in points)


def test_simulate_takes_uniform_lengths_and_names_a_load_that_contradicts_itself(tmp_path):
    """simulate --lengths uniform replays a benchmark's random dataset; a uniform spread past 1/3, or
    a burst setting on Poisson arrivals, is refused naming the field on both shells."""
    from inferplan.search.simulation import SimulationQuery, simulate_deployment

    d = Deployment(model="llama-3.1-8b", gpu="H100")
    q = SimulationQuery(deployment=d, clients=16, requests=300, input_tokens_scv=1 / 3, output_tokens_scv=1 / 3,
                        lengths="uniform")
    assert simulate_deployment(q).simulation.requests == 300
    for bad, field in (({"clients": 16, "input_tokens_scv": 1.0, "lengths": "uniform"}, "lengths"),
                       ({"request_rate_per_s": 2.0, "peak_to_average": 3.0}, "peak_to_average")):
        with pytest.raises(InferplanError) as e:
            simulate_deployment(SimulationQuery(deployment=d, requests=300, **bad))
        assert e.value.field == field and e.value.allowed
        api = TestClient(create_app(tmp_path / "t.db")).post("/api/simulate", json={
            "deployment": {"model": "llama-3.1-8b", "gpu": "H100"}, "requests": 300, **bad})
        assert api.status_code == 422 and api.json()["detail"][0]["loc"] == ["body", field], api.text
    r = runner.invoke(app, ["simulate", "--model", "llama-3.1-8b", "--gpu", "H100", "--clients", "16", "--input-scv", "1",
                            "--lengths", "uniform"])
    assert r.exit_code == 2 and r.output.startswith("error: --lengths"), r.output


def test_busy_spells_just_past_capacity_wait_no_less_than_just_below_it():
    """The fluid queue has no noise: at ρ_b = 1 + ε its backlog vanishes, while at 1 − ε the
    Brownian build-up over a spell is σ·√(d_b/2). Past capacity a busy arrival waits at least the
    Brownian build-up with drift +ε, so the two sides of ρ_b = 1 meet."""
    from inferplan.search.bursts import spell_waits

    load = Load(arrival="bursty", peak_to_average=1.5, burst_period_s=60.0, request_rate_per_s=1.0)
    var, eps = 2.0, 1e-4  # the heavy-traffic σ² both states imply: W = P(wait)·σ²/(2δ)
    rho = np.array([[1 - eps, 0.5], [1 + eps, 0.5]])
    p = np.array([[1.0, 0.4], [1.0, 0.4]])
    w = np.array([[var / (2 * eps), 0.4 * var / 1.0], [np.inf, 0.4 * var / 1.0]])
    stable = np.array([[True, True], [False, True]])
    _, w2, ok = spell_waits(load, p, w, rho, stable)
    assert ok.all()
    assert w2[1, 0] == pytest.approx(w2[0, 0], rel=0.01)
    assert w2[0, 0] == pytest.approx(math.sqrt(var * 24.0 / 2), rel=0.01)


def test_bursts_just_past_capacity_are_not_optimistic_against_the_simulation(catalog):
    """Bursts of 1.5× at a mean load of 2/3 put the busy spells at capacity: the fluid queue alone
    gave a TTFT p95 of 0.11 s against 0.20 s simulated."""
    from inferplan.search.queueing import approximate
    from inferplan.search.simulate import simulate

    # at vLLM 0.33's 0.92: the batch these loads are tuned to
    curve = service_curve(Deployment(model="llama-3.1-8b", gpu="H100", engine_version="0.33.0"),
                          Workload(input_len=1024, output_len=256), catalog)
    unit = approximate(curve, Load(request_rate_per_s=1.0, input_tokens=1024, output_tokens=256)).utilisation
    load = Load(arrival="bursty", peak_to_average=1.5, request_rate_per_s=(1.0002 / 1.5) / unit, input_tokens=1024,
                output_tokens=256)
    a, s = approximate(curve, load), simulate(curve, load, requests=30_000, seed=1)
    assert a.ttft_p95_s >= s.ttft_p95_s and a.ttft_p99_s >= s.ttft_p99_s


def test_spread_lengths_long_requests_stop_at_the_models_context(catalog):
    """Prompts and outputs spread with SCV 100 put the 99.9th percentiles at 91,238 tokens, past
    Qwen3-8B's 40,960: every vLLM cell was refused ('longer than qwen3-8b's context'); the cells are
    planned at the model's context instead (the engine refuses the rarer longer request)."""
    req = _request(input_tokens_scv=100.0, output_tokens_scv=100.0, targets=Targets(ttft_p95_s=2.0))
    rl = resolve_load(catalog, req)
    assert rl.max_model_len > 40_960 and rl.context_for(40_960) == 40_960
    assert resolve_load(catalog, _request()).context_for(1_000) == 1_800  # stated means are never cut
    result = search(req, catalog)
    pick = result.results[0]
    assert "--max-model-len 40960" in pick.deploy and pick.max_model_len == 40_960
    assert result.load.longest_request_tokens == rl.max_model_len
    # the pick says what share of the load its context refuses: the crossed lengths' own share
    share = rl.share_longer_than(40_960)
    assert 0.0005 < share < 0.01
    assert pick.longer_request_share == share
    assert f"context 40,960 tokens, the model's own: {share:.2%} of the requests are longer" in deployment_text(pick)
    # mean lengths: no share is refused past a cut context (the text says the context is the mean request instead)
    assert not any(r.longer_request_share or "of the requests are longer" in deployment_text(r)
                   for r in search(_request(), catalog).results)


def test_the_share_of_requests_a_context_refuses():
    """Crossed nodes of the two lengths against exact cases: no spread is all or nothing; uniform
    prompts from 0 to 2,000 with a fixed output exceed a context at the uniform's own tail."""
    from inferplan.search.load import ResolvedLoad

    def resolved(scv_in, scv_out, lengths="lognormal"):
        load = Load(request_rate_per_s=1.0, input_tokens=1000, output_tokens=200, input_tokens_scv=scv_in,
                    output_tokens_scv=scv_out, lengths=lengths)
        return ResolvedLoad(load, 1000, 200, 1.0, 0.0, spread_sized=bool(scv_in or scv_out))

    assert resolved(0, 0).share_longer_than(1200) == 0 and resolved(0, 0).share_longer_than(1199) == 1
    uniform = resolved(1 / 3, 0, "uniform")  # prompts even on [0, 2000], every output 200
    assert uniform.share_longer_than(1700) == pytest.approx(0.25, abs=0.003)
    assert uniform.share_longer_than(2200) == 0
    lognormal = resolved(1.0, 0)
    assert lognormal.share_longer_than(1700) > lognormal.share_longer_than(3000) > lognormal.share_longer_than(9000) > 0


def test_uniform_lengths_size_the_cells_at_the_uniforms_own_tail(catalog):
    """A benchmark's random dataset draws lengths evenly: at SCV 1/3 a prompt reaches twice its mean,
    never the log-normal's longer tail; a wider uniform spread is refused naming its field."""
    uniform = resolve_load(catalog, _request(input_tokens_scv=1 / 3, output_tokens_scv=1 / 3, lengths="uniform"))
    lognormal = resolve_load(catalog, _request(input_tokens_scv=1 / 3, output_tokens_scv=1 / 3))
    assert uniform.load.lengths == "uniform" and uniform.max_model_len <= 2 * 1800 + 2
    assert uniform.max_model_len >= math.floor(0.999 * 2 * 1800) and lognormal.max_model_len > uniform.max_model_len
    with pytest.raises(InferplanError) as e:
        _request(input_tokens_scv=0.5, lengths="uniform")
    assert e.value.field == "input_tokens_scv"
    with pytest.raises(InferplanError) as e:
        SearchRequest(models=("qwen3-8b",), trace="t.csv", lengths="uniform")
    assert e.value.field == "lengths"


def test_an_apis_price_does_not_move_with_the_spread_of_lengths(catalog):
    """The API alternative is priced on the load's output share, output / (input + output): it was
    divided by the context planned, so spread lengths made output tokens look rarer and the API cheaper."""
    from inferplan.search.run import _api, model_cards

    prices = [_api(catalog, model_cards(catalog, r), resolve_load(catalog, r))
              for r in (_request(), _request(input_tokens_scv=4.0, output_tokens_scv=4.0))]
    assert prices[0] and [a.usd_per_mtok for a in prices[0]] == pytest.approx([a.usd_per_mtok for a in prices[1]])


def test_a_family_that_does_not_fit_is_checked_at_the_context_its_cells_are_planned_at(catalog):
    """Spread lengths plan Qwen3-32B's cells at 16,678 tokens; the family's memory was checked at the
    mean request (1,800 tokens) and its refusal quoted that instead of the context planned."""
    req = SearchRequest(models=("qwen3-32b",), request_rate_per_s=1.0, input_len=1500, output_len=300,
                        input_tokens_scv=1.0, output_tokens_scv=1.0, accelerators=("rtx-4090",), max_gpus=1)
    planned = resolve_load(catalog, req).context_for(40_960)
    memory = [x.message for x in search(req, catalog).infeasible if x.reason == "memory"]
    assert memory and all(f"at {planned:,} tokens" in m for m in memory if "does not fit in" in m), memory
