"""The residual of the engine step an arrival finds in progress, in the approximation's quantiles:
none when its rank is idle, else uniform over the step, or for a closed loop what is left of the
step the request overhead after one ended (``wait_quantiles.StepResidual``)."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from inferplan.search.arrivals import Load
from inferplan.search.queueing import approximate
from inferplan.search.service import ServiceCurve
from inferplan.search.simulate import simulate
from inferplan.search.wait_quantiles import StepResidual, _bisected_quantile, sum_quantile

STEP_S = 0.01


def _flat_step_curve() -> ServiceCurve:
    """Every step ``STEP_S`` whatever the batch, prompts of one step, 64 slots: at a trickle nothing
    waits, so a request's TTFT is the rest of the step it finds in progress plus its own prompt step."""
    flat = (STEP_S, STEP_S)
    return ServiceCurve(slots=64, concurrency=(1, 64), tpot_s=flat, decode_step_s=flat, prefill_s_per_token=(0.0, 0.0),
                        ttft_s=flat, prompt_tokens=(1, 2), prompt_s=flat, prefill_s=STEP_S, request_overhead_s=0.0,
                        token_budget=10**6, tokens_per_step=1.0, input_tokens=1, output_tokens=100)


LOW_LOAD = Load(request_rate_per_s=0.2, input_tokens=1, output_tokens=100)  # about 0.2 running


def test_a_low_load_ttft_tail_is_the_uniform_residual_steps_quantile():
    # the engine is busy with probability b = 1 − e^(−n); the q quantile of (0 w.p. 1 − b, else U[0, d])
    # is d (1 − (1 − q)/b) above 1 − b, 0 below: p99 0.945 d, p95 0.72 d, p50 0 at b ≈ 0.18
    approx = approximate(_flat_step_curve(), LOW_LOAD)
    busy = 1 - math.exp(-approx.mean_running)
    assert approx.wait_probability < 1e-6
    for q, got in ((0.99, approx.ttft_p99_s), (0.95, approx.ttft_p95_s)):
        assert got == pytest.approx(STEP_S * (2 - (1 - q) / busy), rel=1e-3)
    assert approx.ttft_p50_s == pytest.approx(STEP_S, rel=1e-3)


def test_a_low_load_ttft_tracks_the_simulated_step_in_progress():
    approx = approximate(_flat_step_curve(), LOW_LOAD)
    sims = [simulate(_flat_step_curve(), LOW_LOAD, requests=20_000, seed=s) for s in (0, 1, 2)]
    for metric in ("ttft_p50_s", "ttft_p95_s", "ttft_p99_s"):
        sim = np.mean([getattr(s, metric) for s in sims])
        assert getattr(approx, metric) == pytest.approx(sim, rel=0.02), metric


def _random_case(rng, n: int, states: int):
    base = rng.uniform(0, 1, (n, states, 8))
    p_wait = rng.uniform(0, 0.5, (n, states))
    mean_wait = rng.uniform(0, 0.5, (n, states)) * p_wait
    residual = StepResidual(busy=rng.uniform(0, 1, (n, states)), step_s=rng.uniform(0, 1, (n, states)))
    return base, p_wait, mean_wait, residual


def test_the_sum_with_a_residual_matches_sampling():
    rng = np.random.default_rng(3)
    base, p_wait, mean_wait, residual = _random_case(rng, 6, 1)
    draws = 400_000
    for i in range(len(base)):
        b = base[i, 0, rng.integers(0, 8, draws)]
        r = np.where(rng.uniform(size=draws) < residual.busy[i, 0], rng.uniform(0, residual.step_s[i, 0], draws), 0.0)
        waits = rng.exponential(mean_wait[i, 0] / p_wait[i, 0], draws)
        w = np.where(rng.uniform(size=draws) < p_wait[i, 0], waits, 0.0)
        for q in (0.5, 0.95, 0.99):
            got = sum_quantile(base[i:i + 1], np.array([1.0]), p_wait[i:i + 1], mean_wait[i:i + 1], q,
                               StepResidual(busy=residual.busy[i:i + 1], step_s=residual.step_s[i:i + 1]))
            assert got[0] == pytest.approx(np.quantile(b + r + w, q), abs=0.01), (i, q)


def test_one_state_with_a_residual_agrees_with_the_mixtures_bisection():
    base, p_wait, mean_wait, residual = _random_case(np.random.default_rng(4), 300, 1)
    for q in (0.5, 0.95, 0.99):
        one = sum_quantile(base, np.array([1.0]), p_wait, mean_wait, q, residual)
        bisected = _bisected_quantile(base, np.array([1.0]), p_wait, mean_wait, q, residual)
        assert np.allclose(one, bisected, atol=1e-4)


def test_an_idle_engine_or_a_zero_step_adds_nothing():
    base, p_wait, mean_wait, residual = _random_case(np.random.default_rng(5), 200, 2)
    weights = np.array([0.7, 0.3])
    plain = sum_quantile(base, weights, p_wait, mean_wait, 0.99)
    for none in (StepResidual(busy=np.zeros_like(residual.busy), step_s=residual.step_s),
                 StepResidual(busy=residual.busy, step_s=np.zeros_like(residual.step_s))):
        assert np.allclose(sum_quantile(base, weights, p_wait, mean_wait, 0.99, none), plain, atol=1e-5)


def test_the_sum_with_a_residual_between_two_bounds_or_of_one_value_reaches_its_level():
    # the quantile is where the CDF, integrated over the residual on a fine grid, reaches the level
    rng = np.random.default_rng(6)
    base, p_wait, mean_wait, residual = _random_case(rng, 4, 1)
    for i in range(len(base)):
        low = residual.step_s[i:i + 1] * rng.uniform(0, 1)
        p, m, busy = p_wait[i, 0], mean_wait[i, 0] / p_wait[i, 0], residual.busy[i, 0]
        wait_cdf = lambda x: np.where(x < 0, 0.0, 1 - p * np.exp(-np.maximum(x, 0.0) / m))  # noqa: E731

        def cdf(x, steps, i=i, busy=busy, wait_cdf=wait_cdf):
            return np.mean([(1 - busy) * wait_cdf(x - b) + busy * wait_cdf(x - b - steps).mean() for b in base[i, 0]])

        for high in (residual.step_s[i:i + 1], low):  # uniform between, or the one value
            steps = np.linspace(low[0, 0], high[0, 0], 20_001)
            for q in (0.5, 0.95, 0.99):
                t = sum_quantile(base[i:i + 1], np.array([1.0]), p_wait[i:i + 1], mean_wait[i:i + 1], q,
                                 StepResidual(busy=residual.busy[i:i + 1], step_s=high, least_s=low))[0]
                assert cdf(t + 2e-4, steps) > q - 1e-4 and cdf(t - 2e-4, steps) < q + 1e-4, (i, q)  # where it reaches q


def test_one_closed_loop_client_finds_the_engine_idle():
    # nothing else runs when a lone client's request arrives: its TTFT is its own prompt step
    load = Load(arrival="closed", clients=1, input_tokens=1, output_tokens=100)
    approx, sim = approximate(_flat_step_curve(), load), simulate(_flat_step_curve(), load, requests=500, seed=0)
    for metric in ("ttft_p50_s", "ttft_p95_s", "ttft_p99_s"):
        assert getattr(approx, metric) == pytest.approx(STEP_S, rel=1e-3) == getattr(sim, metric), metric


def test_closed_loop_clients_arrive_the_request_overhead_into_a_step():
    # a client sends when its request ends, at a step's end, and reaches the engine 3 ms later: with
    # the other clients' requests running (output lengths spread, so they do not end together) the
    # step under way has 7 ms left, every time
    overhead = 0.003
    curve = dataclasses.replace(_flat_step_curve(), request_overhead_s=overhead, ttft_s=(STEP_S + overhead,) * 2)
    load = Load(arrival="closed", clients=4, input_tokens=1, output_tokens=100, output_tokens_scv=1.0)
    approx, sim = approximate(curve, load), simulate(curve, load, requests=4000, seed=0)
    for metric in ("ttft_p50_s", "ttft_p99_s"):
        assert getattr(approx, metric) == pytest.approx(2 * STEP_S, rel=0.01)
        assert getattr(approx, metric) == pytest.approx(getattr(sim, metric), rel=0.01), metric


@pytest.mark.parametrize("routing", ["least-loaded", "round-robin"])
def test_a_data_parallel_arrival_waits_out_a_step_only_on_a_busy_rank(routing):
    # 8 independent ranks: at 1 request a second (one running) a rank is always idle to take it; at 6
    # the chosen rank is busy as often as 8 arrivals fall within a service time (P(N ≥ 8))
    ranks = 8
    flat = _flat_step_curve()
    curve = dataclasses.replace(flat, slots=64 * ranks, concurrency=(ranks, 64 * ranks), token_budget=10**6 * ranks,
                                data_parallel=ranks, dp_routing=routing)
    idle = approximate(curve, Load(request_rate_per_s=1.0, input_tokens=1, output_tokens=100))
    assert idle.ttft_p99_s == pytest.approx(STEP_S, rel=1e-3)
    load = Load(request_rate_per_s=6.0, input_tokens=1, output_tokens=100)
    approx, sim = approximate(curve, load), simulate(curve, load, requests=20_000, seed=0)
    for metric in ("ttft_p50_s", "ttft_p95_s", "ttft_p99_s"):
        assert getattr(approx, metric) == pytest.approx(getattr(sim, metric), rel=0.04), metric
