"""The route chooser on hand-made figures: recommend() reads only a frozen RouteFigures."""

from __future__ import annotations

import dataclasses

import pytest

from inferplan.economics.recommend import RouteFigures, recommend

from catalog_edits import with_constants

# own: 10,000 + 360,000 / (3 × 12) = 20,000 a month
BASE = RouteFigures(served_users=100, target_users=100, supported_users=120, loadouts=1, capex_usd=360_000.0,
                    modeled_monthly_operating_cost_usd=10_000.0, staff_usd_per_month=2_000.0,
                    simple_payback_months=12.0, api_cost_for_served_usd_per_month=30_000.0,
                    rent_usd_per_month=25_000.0, hardware_cycle_years=3.0, rent_first_below_use=0.5)


def test_the_figures_are_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        BASE.capex_usd = 1.0  # type: ignore[misc]


def test_owning_wins_when_cheapest_and_paid_back_inside_the_cycle():
    r = recommend(BASE)
    assert r.route == "own"
    assert r.monthly_usd == {"own": 20_000.0, "rent dedicated capacity": 27_000.0, "stay on an API": 30_000.0}
    assert r.reasons == ("capex pays back in 12 months, inside the 3-year cycle",)


def test_owning_that_never_pays_back_yields_to_the_next_cheapest_route():
    r = recommend(dataclasses.replace(BASE, simple_payback_months=None))
    assert r.route == "rent dedicated capacity"  # rent 25,000 + staff 2,000 < API 30,000
    assert "does not pay back within the 3-year hardware cycle" in r.reasons[0]


def test_payback_beyond_the_cycle_yields_too():
    r = recommend(dataclasses.replace(BASE, simple_payback_months=48.0, rent_usd_per_month=None))
    assert r.route == "stay on an API" and "48 months" in r.reasons[0]


def test_no_served_user_stays_on_an_api():
    r = recommend(dataclasses.replace(BASE, served_users=0))
    assert r.route == "stay on an API" and r.monthly_usd == {}


def test_idle_owned_capacity_and_unserved_users_are_said():
    r = recommend(dataclasses.replace(BASE, served_users=90, supported_users=400))
    assert r.route == "own"
    assert "the loadouts serve 90 of 100 target users" in r.reasons
    assert any(reason.startswith("only 25% of the owned capacity") for reason in r.reasons)


def test_idle_capacity_is_judged_against_the_share_given():
    r = recommend(dataclasses.replace(BASE, served_users=90, supported_users=400, rent_first_below_use=0.2))  # 25 % in use
    assert not any(reason.startswith("only 25% of the owned capacity") for reason in r.reasons)


def test_the_plan_takes_the_rent_first_share_from_the_catalogue(monkeypatch):
    from inferplan.catalog.loader import load_catalog
    from inferplan.economics import plan as planning
    from inferplan.economics.scenario import Scenario

    catalog = load_catalog()
    assert catalog.constant("rent-first-below-use") == 0.5
    assert catalog.sources["seed001-rent-first"].seed
    seen: list[RouteFigures] = []
    monkeypatch.setattr(planning, "recommend", lambda f: seen.append(f) or recommend(f))
    s = Scenario.model_validate(dict(
        name="t", model="llama-3.1-8b", platform={"system": "hgx-h100", "quote_usd_per_system": 400_000},
        workload={"preset": "coding-developer-median"}, target_users=300))
    planning.plan(s, with_constants(catalog, {"rent-first-below-use": 0.37}))
    assert [f.rent_first_below_use for f in seen] == [0.37]
