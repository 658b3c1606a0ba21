"""The rent-vs-buy break-even compares the two routes at the same served load: none where the owned
fleet serves fewer of the target's users than the rented cells, with the reason on the card."""

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
