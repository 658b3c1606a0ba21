"""Bursty arrivals are drawn spell by spell, so the work of one draw grows as the burst period
shrinks next to the gaps between arrivals: a period too short to draw is refused naming
burst_period_s and the shortest allowed, before any work, by the simulation and the search alike."""

from __future__ import annotations

import numpy as np
import pytest
from fastapi.testclient import TestClient

from inferplan.errors import InvalidScenarioError
from inferplan.search.arrivals import MAX_BURST_SPELLS, Load, check_burst_spells, sample_requests
from inferplan.shells.api import create_app

DEPLOYMENT = {"model": "qwen3-8b", "gpus": 1, "accelerator": "h100-sxm", "engine": "vllm"}
BURSTY = {"arrival": "bursty", "peak_to_average": 5, "burst_period_s": 1e-9}


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    return TestClient(create_app(tmp_path_factory.mktemp("db") / "t.db"))


def _bursty(rate: float, period_s: float) -> Load:
    return Load(arrival="bursty", request_rate_per_s=rate, peak_to_average=5, burst_period_s=period_s,
                input_tokens=100, output_tokens=10)


def test_a_period_past_the_spell_bound_is_refused_with_the_shortest_allowed():
    with pytest.raises(InvalidScenarioError) as exc:
        check_burst_spells(_bursty(1.0, 1e-9), 20_000)
    assert exc.value.field == "burst_period_s" and "at least 0.02 s" in exc.value.allowed
    check_burst_spells(_bursty(1.0, 2 * 20_000 / MAX_BURST_SPELLS * 1.01), 20_000)  # just inside: drawn


def test_drawn_bursty_arrivals_keep_the_mean_rate_and_burst():
    rate, n = 2.0, 40_000
    times, _, _ = sample_requests(_bursty(rate, 60.0), n, np.random.default_rng(1))
    assert len(times) == n and np.all(np.diff(times) >= 0)
    assert n / times[-1] == pytest.approx(rate, rel=0.1)
    counts = np.bincount((times // 10).astype(int))  # requests per 10 s: far more spread than Poisson's
    assert counts.var() / counts.mean() > 3


def test_api_simulate_refuses_a_burst_period_too_short_to_draw(client):
    r = client.post("/api/simulate", json={"deployment": DEPLOYMENT, "workload": {"input_len": 1000, "output_len": 200},
                                           "request_rate_per_s": 1, **BURSTY})
    assert r.status_code == 422
    error = r.json()["error"]
    assert error["field"] == "burst_period_s" and "at least" in error["allowed"]


def test_api_search_refuses_a_burst_period_too_short_to_draw(client):
    r = client.post("/api/search", json={"models": ["qwen3-8b"], "users": 50, "workload": "chat-seat",
                                         "accelerators": ["h100-sxm"], "engines": ["vllm"], **BURSTY})
    assert r.status_code == 422
    assert r.json()["error"]["field"] == "burst_period_s"
