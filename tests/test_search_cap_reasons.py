"""A family left out by a small power or capex cap says the cap as stated (1 W is not "0.0 kW")."""

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
