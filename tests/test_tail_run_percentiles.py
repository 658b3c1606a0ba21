"""A benchmark's percentile over a run of N requests, as both models report it.

The benchmark clients take ``numpy.percentile`` (linear method) over the run's requests; the
simulation computes the same statistic per run, and the approximation reports the population
quantile at the level that statistic lands on (``Load.run_quantile_level``).
"""

from __future__ import annotations

import numpy as np
import pytest

from inferplan.search.arrivals import Load
from inferplan.search.queueing import approximate
from inferplan.search.service import ServiceCurve
from inferplan.search.simulate import simulate


def _closed(clients: int, requests: int | None) -> Load:
    return Load(arrival="closed", clients=clients, closed_loop_requests=requests, input_tokens=100,
                output_tokens=200, output_tokens_scv=1.0)


@pytest.mark.parametrize("requests", [1, 2, 10, 80, 500, 100_000])
def test_a_runs_median_keeps_its_level_and_a_run_without_a_length_keeps_every_level(requests):
    assert _closed(4, requests).run_quantile_level(0.5) == pytest.approx(0.5)
    steady = Load(request_rate_per_s=1.0)
    assert [steady.run_quantile_level(q) for q in (0.5, 0.95, 0.99)] == [0.5, 0.95, 0.99]
    assert _closed(4, requests).run_quantile_level(0.99) <= 0.99


DISTRIBUTIONS = {  # draws and the population quantile function
    "exponential": (lambda rng, shape: rng.exponential(1.0, shape), lambda p: -np.log1p(-p)),
    "uniform": (lambda rng, shape: rng.random(shape), lambda p: p),
    "pareto-2": (lambda rng, shape: rng.pareto(2.0, shape), lambda p: (1 - p) ** -0.5 - 1),
}


@pytest.mark.parametrize("name", sorted(DISTRIBUTIONS))
@pytest.mark.parametrize("requests", [10, 80, 500])
def test_the_level_is_the_median_of_a_runs_p99_whatever_the_distribution(name, requests):
    draw, quantile = DISTRIBUTIONS[name]
    runs = draw(np.random.default_rng(7), (2_000, requests))
    p99_median = float(np.median(np.percentile(runs, 99, axis=1)))
    level = _closed(1, requests).run_quantile_level(0.99)
    assert quantile(level) == pytest.approx(p99_median, rel=0.08)  # a heavy tail: 5–7 % (interpolated values, not levels)


def _one_slot_curve() -> ServiceCurve:
    """One sequence at a time, 10 ms a token, prompts free: a request's time is its output length."""
    flat = (0.01, 0.01)
    return ServiceCurve(slots=1, concurrency=(1, 2), tpot_s=flat, decode_step_s=flat, prefill_s_per_token=(0.0, 0.0),
                        ttft_s=(0.0, 0.0), prompt_tokens=(1, 2), prompt_s=(0.0, 0.0), prefill_s=0.0,
                        request_overhead_s=0.0, token_budget=10**6, tokens_per_step=1.0, input_tokens=100,
                        output_tokens=200)


def test_a_ten_request_runs_p99_is_the_simulated_runs_median_p99():
    curve, load = _one_slot_curve(), _closed(1, 10)
    simulated = np.median([simulate(curve, load, requests=10, seed=s).e2e_p99_s for s in range(400)])
    short, steady = approximate(curve, load), approximate(curve, _closed(1, None))
    assert short.e2e_p99_s == pytest.approx(simulated, rel=0.15)
    assert short.e2e_p99_s < 0.75 * steady.e2e_p99_s  # ten requests rarely reach the population's p99
