"""A rented scenario is run as its renter pays: the monthly operating cost is the rent (a provider's
price includes power and hosting), and the rows built on it — break-even per user, operating cash,
cost per million tokens — follow; owning the same systems stays the recommendation's own route.
Stated replica cells count their own users per loadout, a prefill pool sharing the loadout's GPUs."""

from __future__ import annotations

import math

import pytest

from inferplan.economics.plan import plan
from inferplan.economics.scenario import Scenario
from inferplan.economics.uncertainty import simulate
from inferplan.errors import InvalidScenarioError
from inferplan.report.cards import plan_cards
from inferplan.report.charts import capacity_by_constraint

BASE = {"model": "qwen3-8b", "platform": {"system": "hgx-h100"}, "cell": {"tensor_parallel_size": 8}, "replicas": 1,
        "workload": {"preset": "chat-seat"}, "target_users": 500, "money": {"quote_multiplier": 3, "staff_usd_per_month": 1000}}


@pytest.fixture(scope="module")
def owned_and_rented(catalog):
    return plan(Scenario.model_validate(BASE), catalog), plan(Scenario.model_validate({**BASE, "rented": True}), catalog)


def test_a_rented_scenario_pays_the_rent_and_staff_not_power_colocation_or_support(owned_and_rented):
    owned, rented = owned_and_rented
    assert owned.rent_usd_per_month == rented.rent_usd_per_month and rented.rent_usd_per_month > 0
    c = rented.monthly_costs
    assert (c.power_usd, c.colocation_usd, c.support_usd, c.rent_usd, c.staff_usd) == (0, 0, 0, rented.rent_usd_per_month, 1000)
    assert owned.monthly_costs.power_usd > 0 and owned.monthly_costs.rent_usd == 0  # owning unchanged
    month = rented.rent_usd_per_month + 1000
    assert rented.modeled_monthly_operating_cost_usd == pytest.approx(month)
    assert rented.operating_break_even_usd_per_user_month == pytest.approx(month / rented.served_users)
    assert rented.monthly_operating_cash_usd == pytest.approx(rented.monthly_billing_usd - month)
    tokens = rented.served_users * rented.workload.monthly_tokens / 1e6
    assert rented.owner_cost_usd_per_mtok == pytest.approx(month / tokens)
    assert rented.rent_usd_per_mtok == pytest.approx(rented.rent_usd_per_month / tokens) == owned.rent_usd_per_mtok
    assert any(a.startswith("rented: the monthly operating cost is the rent with the software and staff") for a in rented.assumptions)


def test_owning_the_same_systems_stays_the_own_route_and_capex_is_not_paid_back(owned_and_rented, catalog):
    owned, rented = owned_and_rented
    assert rented.capex_usd == owned.capex_usd and "what owning the same systems would cost" in rented.capex_basis
    assert rented.recommendation.monthly_usd == owned.recommendation.monthly_usd  # each route priced the same way
    assert rented.rent_vs_buy_break_even_months == owned.rent_vs_buy_break_even_months
    assert (rented.simple_payback_months, rented.capital_recovery_usd_per_month, rented.target_payback_usd_per_user_month) == (
        None, None, None)
    cards = {c.key: c for c in plan_cards(rented)}
    assert cards["payback"].value == "— (not owned)" and cards["cost_per_mtok"].label.startswith("Rented cost")
    assert simulate(rented, Scenario.model_validate({**BASE, "rented": True}), draws=200, catalog=catalog) is None


def test_a_rented_scenario_no_rent_prices_is_refused_naming_rented(catalog):
    # no listing rents a GB300 NVL72's 72-GPU cell
    s = Scenario.model_validate({**BASE, "platform": {"system": "gb300-nvl72"}, "cell": {"tensor_parallel_size": 1,
                                 "data_parallel_size": 72, "enable_expert_parallel": True}, "model": "deepseek-r1",
                                 "rented": True})
    with pytest.raises(InvalidScenarioError) as err:
        plan(s, catalog)
    assert err.value.field == "rented" and "rent_usd_per_gpu_hour" in err.value.allowed


def test_one_loadout_of_stated_cells_beside_a_prefill_pool_carries_what_the_plan_supports(catalog):
    """One HGX H100 holding one TP4 decode cell and one TP4 prefill instance: its users are the decode cell's,
    not the two cells the loadout has room for."""
    s = Scenario.model_validate({**BASE, "cell": {"tensor_parallel_size": 4},
                                 "prefill_pool": {"instances": 1, "cell": {"tensor_parallel_size": 4}}})
    p = plan(s, catalog)
    assert (p.loadouts, p.prefill_systems, p.capacity.cells) == (1, 0, 2)
    assert p.users_per_loadout == p.supported_users and p.capacity.supported_users >= 2 * p.supported_users
    note = {c.key: c for c in plan_cards(p)}["users"].note
    assert note.startswith(f"{p.supported_users:,} per loadout (the decode pool's 1 replica cell of the 2")
    chart = capacity_by_constraint(p)["data"]["values"]  # the page's and the report's users-per-loadout chart
    assert math.floor(min(v["users"] for v in chart)) == p.users_per_loadout
    # at capacity: the tokens the decode cell carries, not the whole loadout's
    assert p.capacity_tokens_per_month == pytest.approx(p.capacity.users_at_limit / 2 * p.workload.monthly_tokens)


def test_auto_sized_and_full_loadouts_keep_the_loadouts_own_users(catalog):
    auto = plan(Scenario.model_validate({k: v for k, v in BASE.items() if k not in ("cell", "replicas")}), catalog)
    assert auto.users_per_loadout == auto.capacity.supported_users
    full = plan(Scenario.model_validate({**BASE, "cell": {"tensor_parallel_size": 4}, "replicas": 4}), catalog)
    assert (full.loadouts, full.users_per_loadout) == (2, full.capacity.supported_users)
