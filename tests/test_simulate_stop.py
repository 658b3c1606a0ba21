"""A running simulation takes a check and stops when it raises (search/simulate.py): a cancelled budget
(a client gone, a search past its deadline) ends a long run within a few thousand engine visits, in
``POST /api/simulate`` and in a search's simulation of its picks alike."""

from __future__ import annotations

import asyncio
import time

import pytest

from inferplan.errors import OutOfTimeError
from inferplan.inputs.deployment import Deployment
from inferplan.search import sim_check
from inferplan.search.budget import Budget
from inferplan.search.request import SearchRequest
from inferplan.search.run import search
from inferplan.search.simulate import CHECK_VISITS
from inferplan.search.simulation import SimulationQuery, simulate_deployment
from inferplan.shells import api_simulate, api_work

DEPLOYMENT = Deployment(model="qwen3-8b", gpu="h100-sxm")
QUERIES = {  # long runs: 200,000 requests on one replica; over 64 replicas; a closed loop; separate pools
    "one replica": dict(request_rate_per_s=20, requests=200_000),
    "64 replicas": dict(request_rate_per_s=600, requests=200_000, replicas=64),
    "closed loop": dict(clients=64, requests=200_000),
    "separate pools": dict(request_rate_per_s=20, requests=200_000, prefill_instances=2, kv_transfer_s=0.01),
}


class _Stop(Exception):
    pass


class _Counting:
    """A check that raises at its ``stop_at``-th call, counting the calls."""

    def __init__(self, stop_at: int) -> None:
        self.calls, self.stop_at = 0, stop_at

    def __call__(self) -> None:
        self.calls += 1
        if self.calls >= self.stop_at:
            raise _Stop


@pytest.mark.parametrize("name", QUERIES)
def test_a_check_that_raises_stops_the_run_where_it_raised(catalog, name):
    check = _Counting(stop_at=3)  # past the start: checks come during the run, not only before it
    with pytest.raises(_Stop):
        simulate_deployment(SimulationQuery(deployment=DEPLOYMENT, **QUERIES[name]), catalog, check=check)
    assert check.calls == 3


def test_a_check_that_never_raises_changes_nothing(catalog):
    query = SimulationQuery(deployment=DEPLOYMENT, request_rate_per_s=20, requests=3 * CHECK_VISITS)
    check = _Counting(stop_at=10**9)
    assert simulate_deployment(query, catalog, check=check) == simulate_deployment(query, catalog)
    assert check.calls >= 3  # called during the run


def test_a_cancelled_budget_stops_a_simulation(catalog):
    budget = Budget()
    calls = []

    def check() -> None:  # the client goes once the run has started
        calls.append(True)
        if len(calls) == 2:
            budget.cancel()
        budget.check_cancelled()

    with pytest.raises(OutOfTimeError, match="gone"):
        simulate_deployment(SimulationQuery(deployment=DEPLOYMENT, **QUERIES["64 replicas"]), catalog, check=check)
    assert len(calls) == 2


def test_a_searchs_simulation_of_a_pick_is_given_its_budget(catalog, monkeypatch):
    """The check each pick's simulation gets is the search's budget: it raises once the budget is cancelled."""
    given = []
    real = sim_check.simulate

    def spy(*args, **kwargs):
        given.append(kwargs.get("check"))
        return real(*args, **kwargs)

    monkeypatch.setattr(sim_check, "simulate", spy)
    budget = Budget()
    search(SearchRequest(models=["qwen3-8b"], request_rate_per_s=1, input_len=1000, output_len=200,
                         systems=["hgx-h100"], engines=["vllm"], disaggregated=False, speculative=False),
           catalog, budget=budget)
    assert given and all(callable(c) for c in given)
    given[0]()  # passes while the budget runs
    budget.cancel()
    with pytest.raises(OutOfTimeError, match="gone"):
        given[0]()


class _GoneOnceRunning:
    """A client that is seen gone at the first poll (the work has its turn by then)."""

    async def is_disconnected(self) -> bool:
        return True


def test_the_simulate_route_stops_its_simulation_when_the_client_goes(monkeypatch):
    monkeypatch.setattr(api_work, "DISCONNECT_POLL_S", 0.01)
    ran = []

    def simulation(query, catalog=None, *, trace=None, check=None):
        for _ in range(1000):  # 10 s at most: stopped long before, once the client's leaving is seen
            check()
            ran.append(True)
            time.sleep(0.01)
        return "simulated to the end"

    monkeypatch.setattr(api_simulate, "simulate_deployment", simulation)
    body = api_simulate.SimulateRequest(deployment=DEPLOYMENT, request_rate_per_s=1)
    with pytest.raises(OutOfTimeError, match="gone"):
        asyncio.run(api_simulate.simulate_route(body, _GoneOnceRunning()))
    assert len(ran) < 1000  # stopped, not run to the end
