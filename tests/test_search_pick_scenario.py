"""A search pick's ``scenario`` plans in the Users + ROI simulator as the search priced it: the same
systems (or rented instances), capex and monthly cost, at the search's users, load and speed target."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from inferplan.economics.plan import plan
from inferplan.economics.scenario import Scenario
from inferplan.search.request import SearchRequest, Targets
from inferplan.search.run import search
from inferplan.shells.api import create_app

ASPECTS = dict(models=("qwen3-8b",), engines=("vllm",), disaggregated=False, speculative=False, top=3)


def _owned_month(p) -> float:
    return p.modeled_monthly_operating_cost_usd + p.capex_usd / (p.amortization_years * 12)


def _same_as_the_pick(r, p) -> None:
    if r.rent_or_buy == "buy":
        assert (p.systems, p.capex_usd) == (r.systems, pytest.approx(r.capex_usd, rel=1e-9))
        assert _owned_month(p) == pytest.approx(r.monthly_usd, rel=1e-9)
        if p.served_users == p.target_users:  # the plan's speed model carries the whole load: the same $/Mtok
            assert p.owner_cost_usd_per_mtok == pytest.approx(r.usd_per_mtok, rel=1e-9)
    else:
        assert p.rented_instances == r.rented_instances
        assert p.rent_usd_per_month == pytest.approx(r.monthly_usd, rel=1e-9)
    assert p.capacity.cell.gpus == r.gpus_per_instance


@pytest.fixture(scope="module")
def bought(catalog):
    """500 chat-seat users at 20 tok/s each, where the preset asks for more: the stated speed must reach the plan."""
    req = SearchRequest(**ASPECTS, users=500, workload="chat-seat", systems=("hgx-h100", "tinybox-green-v2"),
                        pricing="buy", targets=Targets(ttft_p95_s=2.0, min_output_tokens_per_s_per_user=20))
    return search(req, catalog)


def test_a_bought_pick_plans_to_its_systems_capex_and_cost(catalog, bought):
    assert bought.results
    for r in bought.results:
        s = Scenario.model_validate(r.scenario)
        assert s.workload.target_output_tokens_per_s == 20 and s.target_users == 500
        assert s.replicas == r.replicas and not s.rented
        _same_as_the_pick(r, plan(s, catalog))


def test_a_rented_pick_without_a_purchase_price_plans_on_its_rent_route(catalog):
    res = search(SearchRequest(**ASPECTS, users=100, workload="chat-seat", accelerators=("h100-sxm",), pricing="rent",
                               targets=Targets(ttft_p95_s=2.0)), catalog)
    bare = [r for r in res.results if r.system is None]
    assert bare, "no rented bare-GPU pick"
    for r in bare:
        s = Scenario.model_validate(r.scenario)
        assert s.rented
        p = plan(s, catalog)
        _same_as_the_pick(r, p)
        assert p.capex_usd is None and "not priced to own" in p.capex_basis
        assert "own" not in p.recommendation.monthly_usd


def test_a_request_rate_search_plans_as_its_load(catalog):
    res = search(SearchRequest(**ASPECTS, request_rate_per_s=4.0, input_len=1500, output_len=300,
                               systems=("hgx-h100", "tinybox-green-v2"), targets=Targets(ttft_p95_s=1.5)), catalog)
    assert res.results
    for r in res.results:
        s = Scenario.model_validate(r.scenario)
        p = plan(s, catalog)
        _same_as_the_pick(r, p)
        # the load's month of tokens and its lengths, not a preset's users
        assert p.workload.monthly_tokens * s.target_users == pytest.approx(res.load.monthly_tokens, rel=1e-9)
        assert (p.workload.input_tokens_per_request, p.workload.output_tokens_per_request) == (1500, 300)


def test_api_plan_of_a_pick_scenario_matches_the_pick(catalog, bought, tmp_path):
    r = bought.results[0]
    body = TestClient(create_app(tmp_path / "t.db")).post("/api/plan", json={"scenario": r.scenario, "draws": 0})
    assert body.status_code == 200, body.text
    out = body.json()["result"]
    assert (out["systems_per_loadout"] * out["loadouts"], out["capex_usd"]) == (r.systems, pytest.approx(r.capex_usd))
    assert (out["stated_replicas"], out["workload"]["target_output_tokens_per_s"]) == (r.replicas, 20)
    card = next(c for c in body.json()["cards"] if c["key"] == "loadouts")
    assert card["label"].startswith("Loadouts holding the") and card["value"] == str(out["loadouts"])


def test_the_monte_carlo_of_a_pick_keeps_its_loadouts(catalog, bought):
    from inferplan.economics.uncertainty import simulate

    """Stated replica cells are the loadouts every draw prices, even where far fewer would carry the users."""
    s = Scenario.model_validate({**bought.results[0].scenario, "replicas": 3 * bought.results[0].replicas})
    p = plan(s, catalog)
    assert p.loadouts > 1 and p.capacity.supported_users > 10 * p.target_users  # one loadout would carry them
    u = simulate(p, s, draws=500, catalog=catalog)
    assert u.loadouts.p10 == u.loadouts.p90 == p.loadouts
