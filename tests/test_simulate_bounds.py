"""What one ``simulate`` call may ask: a trace's longest request must fit the context the deployment
is planned at (refused at its row), requests × engines is bounded, and the engines of one run share
the per-request token lists instead of each holding a copy."""

from __future__ import annotations

import tracemalloc

import pytest
from fastapi.testclient import TestClient

from inferplan.catalog.loader import load_catalog
from inferplan.errors import InvalidScenarioError
from inferplan.inputs.deployment import Deployment
from inferplan.inputs.workload import Workload
from inferplan.search.arrivals import Load
from inferplan.search.service import service_curve
from inferplan.search.simulate import simulate
from inferplan.search.simulation import SIM_WORK_LIMIT, SimulationQuery, simulate_deployment
from inferplan.search.trace import Trace
from inferplan.shells.api import create_app

DEPLOYMENT = {"model": "qwen3-8b", "gpu": "h100-sxm"}
LONG = Trace(arrival_s=(0.0, 1.0, 2.0), input_tokens=(100, 60_000, 200), output_tokens=(10, 10, 20))


def test_a_trace_request_longer_than_the_models_context_is_refused_at_its_row():
    with pytest.raises(InvalidScenarioError) as exc:
        simulate_deployment(SimulationQuery(deployment=Deployment(**DEPLOYMENT), requests=100), trace=LONG)
    assert exc.value.field == "trace.1.input_tokens" and "60,000 + 10" in str(exc.value)


def test_a_trace_is_planned_at_its_longest_request_or_refused_past_a_stated_context():
    fits = Trace(arrival_s=(0.0, 1.0, 2.0), input_tokens=(100, 30_000, 200), output_tokens=(10, 10, 20))
    report = simulate_deployment(SimulationQuery(deployment=Deployment(**DEPLOYMENT), requests=100), trace=fits)
    assert report.simulation.requests == 100
    with pytest.raises(InvalidScenarioError) as exc:
        simulate_deployment(SimulationQuery(deployment=Deployment(**DEPLOYMENT, max_model_len=8192), requests=100),
                            trace=fits)
    assert exc.value.field == "trace.1.input_tokens" and "8,192" in exc.value.allowed


def test_the_api_names_the_trace_row():
    client = TestClient(create_app(None))
    rows = [{"arrival_s": float(i), "input_tokens": n, "output_tokens": 10} for i, n in enumerate((100, 60_000, 200))]
    r = client.post("/api/simulate", json={"deployment": DEPLOYMENT, "requests": 100, "trace": rows})
    assert r.status_code == 422 and r.json()["error"]["field"].startswith("trace.1.input_tokens")


def test_requests_times_engines_is_bounded_naming_requests():
    q = SimulationQuery(deployment=Deployment(**DEPLOYMENT), request_rate_per_s=1000, requests=200_000, replicas=4096)
    with pytest.raises(InvalidScenarioError) as exc:
        simulate_deployment(q)
    assert exc.value.field == "requests" and f"{SIM_WORK_LIMIT // 4096:,}" in exc.value.allowed


def test_the_engines_of_one_run_share_the_request_lists():
    """512 replicas of 4,000 requests: with a copy of the two lists per engine the run peaked at
    124 MB; shared, at 26 MB."""
    curve = service_curve(Deployment(**DEPLOYMENT, max_model_len=2048), Workload(input_len=500, output_len=50),
                          load_catalog())
    load = Load(request_rate_per_s=50.0, input_tokens=500, output_tokens=50)
    tracemalloc.start()
    simulate(curve, load, requests=4000, replicas=512, router="round-robin")
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 60e6  # 124 MB with a copy per engine, 26 MB shared


def test_a_search_pick_past_the_simulations_bound_says_it_rests_on_the_approximation():
    from inferplan.search.sim_check import CHECK_REQUESTS, too_large

    most = SIM_WORK_LIMIT // CHECK_REQUESTS
    assert too_large(most) is None
    assert "not simulated" in too_large(most + 1) and f"{most + 1:,} engines" in too_large(most + 1)

