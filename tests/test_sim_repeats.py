"""The simulation's shortcuts answer what the long way does: a search's repeated check of a pick
(``sim_check.Checks``), an engine's lone-prompt times worked out once per token count, and the pools'
least-loaded routing."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from inferplan.search import sim_check, simulate_pools
from inferplan.search.arrivals import Load
from inferplan.search.request import Targets
from inferplan.search.service import ServiceCurve
from inferplan.search.simulate import Engine

LOAD = Load(request_rate_per_s=6.0, input_tokens=1000, output_tokens=200, input_tokens_scv=1.0, output_tokens_scv=1.0)
TARGETS = Targets(ttft_p95_s=0.5, tpot_p95_s=0.05)


def _curve(step_s: float = 0.02) -> ServiceCurve:
    return ServiceCurve(slots=64, concurrency=(1, 64), tpot_s=(step_s, 3 * step_s), decode_step_s=(step_s, 3 * step_s),
                        prefill_s_per_token=(1e-4, 1e-4), ttft_s=(0.12, 0.12), prompt_tokens=(1, 512, 4096),
                        prompt_s=(0.02, 0.07, 0.43), prefill_s=0.1, request_overhead_s=0.005, token_budget=4096,
                        tokens_per_step=1.0, input_tokens=1000, output_tokens=200)


@pytest.fixture
def counted(monkeypatch):
    """``check_pick`` with fewer requests, counting the simulations ``Checks`` runs."""
    monkeypatch.setattr(sim_check, "CHECK_REQUESTS", 1500)
    runs = []
    original = sim_check.check_pick

    def check_pick(*args, **kwargs):
        runs.append(kwargs)
        return original(*args, **kwargs)

    monkeypatch.setattr(sim_check, "check_pick", check_pick)
    return original, runs


def test_a_repeated_check_is_simulated_once_and_answers_as_the_first(counted):
    original, runs = counted
    checks = sim_check.Checks(LOAD, TARGETS)
    first = checks(_curve(), cap=32, replicas=1)
    again = checks(_curve(), cap=32, replicas=1)  # an equal curve, not the same object
    assert len(runs) == 1
    assert again == first == original(_curve(), LOAD, TARGETS, cap=32, replicas=1)


def test_every_input_of_a_check_keeps_it_apart(counted):
    """A check differing from the first in its curve, cap, replicas or pools is simulated on its own:
    each answer is ``check_pick``'s for its inputs, and differs from the first's."""
    original, runs = counted
    checks = sim_check.Checks(LOAD, TARGETS)
    base = dict(cap=32, replicas=1, pools=None)
    first = checks(_curve(), **base)
    pools = sim_check.Pools(prefill=_curve(), prefill_instances=1, transfer_s=0.01)
    variants = [(_curve(0.03), base), (_curve(), {**base, "cap": 4}), (_curve(), {**base, "replicas": 2}),
                (_curve(), {**base, "pools": pools})]
    for n, (curve, kwargs) in enumerate(variants, start=2):
        got = checks(curve, **kwargs)
        assert len(runs) == n
        assert got == original(curve, LOAD, TARGETS, **kwargs)
        assert got != first


def test_an_engine_prices_each_lone_prompt_as_its_curve_does():
    lists = ([1000], [200])
    times = {k: np.full(1, np.nan) for k in ("admitted", "first", "finish")}
    for curve in (_curve(), dataclasses.replace(_curve(), prompt_s=(0.03, 0.09, 0.5))):
        engine = Engine(curve, lists, times)
        for tokens in (0, 1, 300, 512, 4096, 5000, 300):  # 5000: past the longest sample; 300 again, from the memo
            assert engine._lone_prompt_s(tokens) == curve.lone_prompt_s(tokens)


def _route_one_by_one(engines, at, order, owner, check=None):
    """The pools' routing as first written: every engine run to each arrival, then the least loaded."""
    for r in order.tolist():
        t = float(at[r])
        for e in engines:
            e.run_until(t)
        pick = min(range(len(engines)), key=lambda i: engines[i].load())
        owner[r] = pick
        engines[pick].push(r, t)
    for e in engines:
        e.run_until(math.inf)


def test_the_pools_route_every_request_as_one_engine_at_a_time_does(monkeypatch):
    run = lambda: simulate_pools.simulate_pools_requests(  # noqa: E731
        _curve(), _curve(0.03), LOAD, requests=3000, prefill_instances=2, decode_instances=3, transfer_s=0.01)
    fast = run()
    monkeypatch.setattr(simulate_pools, "_route", _route_one_by_one)
    slow = run()
    for name in ("admitted_s", "first_token_s", "finish_s", "replica"):
        assert np.array_equal(getattr(fast, name), getattr(slow, name), equal_nan=True), name
    assert (fast.busy_s, fast.running_area) == (slow.busy_s, slow.running_area)
    assert len(set(fast.replica.tolist())) == 3  # the routing spread the requests, so the test could tell orders apart



def test_the_least_loaded_is_the_first_of_the_smallest():
    from inferplan.search.simulate import least_loaded

    assert least_loaded(iter([3, 1, 2, 1])) == 1
    assert least_loaded([0]) == 0
