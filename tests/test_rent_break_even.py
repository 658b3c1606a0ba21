"""The rent-vs-buy break-even compares the two routes at the same served load: none where the owned
fleet serves more or fewer of the target's users than the rented cells, with the reason on the card."""

from __future__ import annotations

from inferplan.economics.plan import plan
from inferplan.economics.scenario import Scenario
from inferplan.report.cards import plan_cards


def test_no_rent_vs_buy_break_even_when_the_owned_fleet_serves_fewer_users(catalog):
    """Llama 3.3 70B on two H100s for 500 coding developers: no 2-GPU cell meets the speed target, so
    owning serves nobody while renting prices 8-GPU cells for all 500; $60k ÷ that rent is no break-even."""
    s = Scenario.model_validate({
        "model": "llama-3.3-70b", "engine": "vllm", "quantization": "fp8", "target_users": 500,
        "platform": {"gpu": "h100-sxm", "gpus": 2, "price_point": "mid", "quote_usd_per_system": 60000},
        "workload": {"preset": "coding-developer-median"}})
    r = plan(s, catalog)
    assert r.served_users == 0 and r.rented_users >= 500 and r.rent_usd_per_month > 0 and r.capex_usd > 0
    assert r.rent_vs_buy_break_even_months is None
    card = next(c for c in plan_cards(r, "usd") if c.key == "rent_break_even")
    assert card.value == "—" and "serves 0 of the 500 target users" in card.note


def _hgx_h100_coders(**extra) -> Scenario:
    return Scenario.model_validate({
        "model": "llama-3.3-70b", "quantization": "fp8", "target_users": 2000,
        "platform": {"system": "hgx-h100", "price_point": "mid"},
        "workload": {"preset": "coding-developer-median"}, **extra})


def test_no_rent_vs_buy_break_even_when_the_owned_fleet_serves_more_users(catalog):
    """Four stated replicas: the owned loadouts serve more of the target than the four rented cells carry,
    so the capex and the rent buy different loads and no break-even compares them."""
    r = plan(_hgx_h100_coders(replicas=4), catalog)
    assert r.served_users > r.rented_users > 0 and r.rent_usd_per_month > 0 and r.capex_usd > 0
    assert r.rent_vs_buy_break_even_months is None
    note = r.rent_vs_buy_break_even_note
    assert f"serves {r.served_users:,} of the 2,000 target users" in note and f"serve {r.rented_users:,}:" in note


def test_rent_vs_buy_break_even_when_both_routes_serve_the_target(catalog):
    r = plan(_hgx_h100_coders(), catalog)
    assert r.served_users == r.rented_users == 2000
    assert r.rent_vs_buy_break_even_months is not None and r.rent_vs_buy_break_even_note is None
