"""A data-parallel instance in the simulation and the approximation: each rank prefills its own
requests' prompts, so a prompt costs what it costs one rank, and the ranks reduce to known queues.

Reduction: ranks of one slot each whose decode step takes ``STEP_S`` whatever the batch and whose
prompts cost nothing, fed Poisson arrivals with output lengths 1 + geometric (service exponential
to within 1/mean). Handed out in turn, each rank sees every ``c``-th arrival: Erlang-``c`` gaps, an
E_c/M/1 queue, whose waiting probability ``σ`` solves ``σ = (λ / (λ + μ(1 − σ)))^c`` and whose mean
wait is ``σ / (μ(1 − σ))`` (GI/M/1; Kleinrock, Queueing Systems I, §6.4).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from inferplan.catalog.loader import load_catalog
from inferplan.inputs.deployment import Deployment
from inferplan.inputs.workload import Workload
from inferplan.search.arrivals import Load
from inferplan.search.queueing import approximate
from inferplan.search.scheduling import scheduling
from inferplan.search.service import ServiceCurve, service_curve
from inferplan.search.simulate import simulate, simulate_requests
from inferplan.search.trace import Trace
from test_tail_queueing import MEAN_STEPS, REQUESTS, STEP_S, _batch_mean, _poisson_trace

QWEN = dict(model="qwen3-32b", gpu="H100", quantization="fp8", max_model_len=4096, max_num_seqs=64)
SHAPE = dict(input_len=2000, output_len=500)


@pytest.fixture(scope="module")
def catalog():
    return load_catalog()


@pytest.fixture(scope="module")
def curves(catalog):
    """Qwen3-32B FP8 on H100s under vLLM and SGLang: two data-parallel ranks, and one rank alone."""
    w = Workload(**SHAPE)
    engines = ("vllm", "sglang")
    dp = {e: service_curve(Deployment(**QWEN, gpus=2, data_parallel_size=2, engine=e), w, catalog) for e in engines}
    return dp, {e: service_curve(Deployment(**QWEN, gpus=1, engine=e), w, catalog) for e in engines}


def _ranks_of_one_slot(ranks: int, routing: str) -> ServiceCurve:
    flat = (STEP_S, STEP_S)
    return ServiceCurve(slots=ranks, concurrency=(1, 2 * ranks), tpot_s=flat, decode_step_s=flat,
                        prefill_s_per_token=(0.0, 0.0), ttft_s=(0.0, 0.0), prompt_tokens=(1, 2), prompt_s=(0.0, 0.0),
                        prefill_s=0.0, request_overhead_s=0.0, token_budget=10**6, tokens_per_step=1.0,
                        input_tokens=1, output_tokens=MEAN_STEPS, data_parallel=ranks, dp_routing=routing)


def _erlang_gaps_wait(ranks: int, lam: float, mu: float) -> tuple[float, float]:
    """(P(wait), mean wait) of an E_ranks/M/1 queue fed every ranks-th arrival of a Poisson(λ) stream."""
    sigma = 0.5
    for _ in range(500):
        sigma = (lam / (lam + mu * (1 - sigma))) ** ranks
    return sigma, sigma / (mu * (1 - sigma))


@pytest.mark.parametrize("ranks, rho", [(2, 0.7), (4, 0.8)])
def test_ranks_handed_requests_in_turn_are_erlang_fed_single_servers(ranks, rho):
    mu = 1 / (MEAN_STEPS * STEP_S)
    lam = rho * ranks * mu
    t = simulate_requests(_ranks_of_one_slot(ranks, "round-robin"), _poisson_trace(lam, ranks), requests=REQUESTS)
    p_theory, wq_theory = _erlang_gaps_wait(ranks, lam, mu)
    waited, se_p = _batch_mean((t.wait_s > 2 * STEP_S).astype(float))
    assert abs(waited - p_theory) < 4 * se_p, (waited, p_theory, se_p)
    wq, se = _batch_mean(t.wait_s)
    assert se < 0.1 * wq_theory
    assert abs(wq - wq_theory) < 4 * se, (wq, wq_theory, se)


def test_least_loaded_ranks_wait_less_than_ranks_in_turn_and_more_than_one_pooled_queue():
    """Joining the rank with the fewest requests waits between M/M/c (one queue for every rank,
    Erlang C) and the ranks' E_c/M/1 queues of requests handed out in turn."""
    ranks, rho = 4, 0.8
    mu = 1 / (MEAN_STEPS * STEP_S)
    lam = rho * ranks * mu
    t = simulate_requests(_ranks_of_one_slot(ranks, "least-loaded"), _poisson_trace(lam, 7), requests=REQUESTS)
    a = lam / mu
    top = a**ranks / math.factorial(ranks) / (1 - rho)
    pooled = top / (sum(a**k / math.factorial(k) for k in range(ranks)) + top) / (ranks * mu - lam)
    wq, se = _batch_mean(t.wait_s)
    # a rank's queue is its own: a request may wait while another rank idles (no shared queue)
    assert pooled + 3 * se < wq < _erlang_gaps_wait(ranks, lam, mu)[1] - 4 * se, (pooled, wq, se)


def _idle_ttft_s(curve: ServiceCurve) -> float:
    """TTFT of a request that finds the instance idle (two such, an hour apart)."""
    two = Load.from_trace(Trace(arrival_s=(0.0, 3600.0), input_tokens=(SHAPE["input_len"],) * 2,
                                output_tokens=(SHAPE["output_len"],) * 2))
    ttft = simulate_requests(curve, two, requests=2).ttft_s
    assert ttft[0] == pytest.approx(ttft[1], rel=1e-12)
    return float(ttft[0])


def test_an_idle_data_parallel_request_takes_one_ranks_idle_ttft(curves):
    dp, single = curves
    for engine, curve in dp.items():
        alone = _idle_ttft_s(single[engine])
        assert curve.data_parallel == 2 and single[engine].data_parallel == 1
        assert _idle_ttft_s(curve) == pytest.approx(alone, rel=1e-9)
        assert alone == pytest.approx(single[engine].ttft_s[0], rel=0.02)  # the speed model's TTFT at a batch of one


RATES = (0.05, 0.2, 0.5, 1.0, 2.0, 3.0, 4.0)


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_data_parallel_ttft_never_falls_as_the_load_rises(curves, engine):
    curve = curves[0][engine]
    idle = _idle_ttft_s(curve)
    shape = dict(input_tokens=SHAPE["input_len"], output_tokens=SHAPE["output_len"])
    sims = [simulate(curve, Load(request_rate_per_s=r, **shape), requests=3000, seed=1) for r in RATES]
    approx = [approximate(curve, Load(request_rate_per_s=r, **shape)) for r in RATES]
    for name in ("ttft_p50_s", "ttft_p95_s"):
        for series in (sims, approx):
            values = [getattr(s, name) for s in series]
            assert values[0] >= idle * (1 - 1e-9)
            assert all(b >= a * (1 - 1e-9) for a, b in zip(values, values[1:])), (name, values)
    for s, a in zip(sims, approx):
        assert a.ttft_p50_s == pytest.approx(s.ttft_p50_s, rel=0.15)


def test_the_approximation_queues_each_ranks_prompts_on_that_rank(curves):
    """Each rank prefills its own requests' prompts: up to 60 % busy the approximation's TTFT p95
    (each rank solved as a replica on its own curve) stays near the simulation's, which it would
    undercut by a quarter were the prompts queued for the instance's summed token budget."""
    curve = curves[0]["vllm"]
    for rate in (1.0, 2.0, 3.0):
        load = Load(request_rate_per_s=rate, input_tokens=SHAPE["input_len"], output_tokens=SHAPE["output_len"])
        sim, approx = simulate(curve, load, requests=6000, seed=3), approximate(curve, load)
        assert approx.utilisation < 0.6
        assert approx.ttft_p95_s == pytest.approx(sim.ttft_p95_s, rel=0.15), rate
        assert approx.mean_running == pytest.approx(sim.mean_running, rel=0.05)  # per instance, both


def test_a_rank_curve_prices_a_prompt_token_on_one_rank(curves):
    dp, single = curves
    rank, single = dp["vllm"].rank(), single["vllm"]
    assert rank.slots == math.ceil(dp["vllm"].slots / 2) and rank.token_budget == dp["vllm"].token_budget // 2
    # a prompt token fused into a step at a rank's batch costs one rank what it costs a lone GPU
    for n in (4, 16):
        assert np.interp(n, rank.concurrency, rank.prefill_s_per_token) == pytest.approx(
            np.interp(n, single.concurrency, single.prefill_s_per_token), rel=0.1)


def test_each_engine_routes_to_its_ranks_by_its_sourced_rule(curves):
    rules = {e.engine: e for e in scheduling().engines}
    assert (rules["vllm"].dp_routing, rules["sglang"].dp_routing) == ("least-loaded", "round-robin")
    sources = {s.id: s.url for s in scheduling().sources}
    assert all(sources[rules[e].dp_source].startswith("https://") for e in ("vllm", "sglang"))
    assert [curves[0][e].dp_routing for e in ("vllm", "sglang")] == ["least-loaded", "round-robin"]
