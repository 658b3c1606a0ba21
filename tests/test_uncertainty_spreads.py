"""The Monte Carlo's assumed spreads (a vendor quote, power draw, electricity price) are catalogue
constants: set to nothing, with the capacity spread too, every draw is the plan."""

from __future__ import annotations

import pytest

from inferplan.catalog.loader import load_catalog
from inferplan.economics.plan import plan
from inferplan.economics.scenario import Scenario
from inferplan.economics.uncertainty import simulate

from catalog_edits import with_constants

SPREADS = ("monte-carlo-quote-spread", "monte-carlo-power-draw-spread", "monte-carlo-electricity-price-spread",
           "speed-capacity-log-sigma")


def test_the_monte_carlo_spreads_are_read_from_the_catalogue():
    catalog = load_catalog()
    for constant_id in SPREADS:
        assert catalog.constant(constant_id) > 0
    s = Scenario.model_validate(dict(
        name="t", model="llama-3.1-8b", platform={"system": "hgx-h100", "quote_usd_per_system": 400_000},
        workload={"preset": "coding-developer-median"}, target_users=300, money={"quote_multiplier": 2.0}))
    r = plan(s, catalog)
    u = simulate(r, s, draws=200, seed=1, catalog=with_constants(catalog, dict.fromkeys(SPREADS, 0.0)))
    for band, planned in ((u.owner_cost_usd_per_mtok, r.owner_cost_usd_per_mtok),
                          (u.operating_break_even_usd_per_user_month, r.operating_break_even_usd_per_user_month)):
        assert band.p10 == pytest.approx(planned, rel=1e-9) and band.p90 == pytest.approx(planned, rel=1e-9)
