"""A family left out by a small power or capex cap says the cap as stated (1 W is not "0.0 kW"), and a
capex cap beside renting says that rentals, which commit no capital, pass it."""

from __future__ import annotations

import pytest

from inferplan.search.request import SearchRequest
from inferplan.search.run import search

BASE = dict(models=("qwen3-8b",), users=50, workload="chat-seat", vendors=("amd",), pricing="buy")


@pytest.mark.parametrize(("cap", "reason", "said"), [
    ({"max_power_w": 1}, "power", "the cap is 0.001 kW"),
    ({"max_capex_usd": 0.4}, "budget", "the cap is $0.4"),
])
def test_a_small_cap_is_named_as_stated(cap, reason, said):
    result = search(SearchRequest(**BASE, **cap))
    capped = [f for f in result.infeasible if f.reason == reason]
    assert not result.results and capped
    assert all(said in f.message for f in capped), capped[0].message


@pytest.mark.parametrize(("pricing", "noted"), [("both", True), ("rent", True), ("buy", False)])
def test_a_capex_cap_beside_renting_says_rentals_pass_it(pricing, noted):
    result = search(SearchRequest(**{**BASE, "pricing": pricing}, max_capex_usd=0.4))
    said = [n for n in result.notes if n.startswith("max_capex_usd caps what is bought")]
    assert bool(said) == noted, result.notes
