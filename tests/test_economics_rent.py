"""Renting is priced at the median of the on-demand listings of one instance size: the middle one,
or the mean of the middle two for an even count."""

from __future__ import annotations

import statistics
from collections import defaultdict

import pytest

from inferplan.economics.rental import hourly_usd, on_demand_listings, rent_quotes


def _listings(catalog) -> dict[tuple[str, int], list[float]]:
    prices = defaultdict(list)
    for r in catalog.rental_prices:
        if (h := hourly_usd(r, 1.0)) is not None and not r.on_demand_eur_per_gpu_hour:
            prices[r.accelerator, r.gpus_per_instance].append(h)
    return prices


def test_rent_is_the_median_of_the_listings_the_mean_of_the_middle_two_for_an_even_count(catalog):
    prices = {k: p for k, p in _listings(catalog).items()
              if len(p) == sum(1 for r in catalog.rental_prices if (r.accelerator, r.gpus_per_instance) == k)}
    even = [k for k, p in prices.items() if len(p) % 2 == 0 and len(set(p)) > 1]
    odd = [k for k, p in prices.items() if len(p) % 2 == 1 and len(p) > 1]
    assert even and odd
    for accel, size in (*even, *odd):
        (quote,) = [q for q in rent_quotes(on_demand_listings(catalog, accel, 1.0), size) if q.instance_gpus == size]
        assert len(quote.listings) == len(prices[accel, size])
        assert quote.usd_per_gpu_hour == pytest.approx(statistics.median(prices[accel, size]), rel=1e-12), accel
        assert quote.rental in quote.listings and f"median of {len(prices[accel, size])}" in quote.note
    (quote,) = [q for q in rent_quotes(on_demand_listings(catalog, even[0][0], 1.0), even[0][1])
                if q.instance_gpus == even[0][1]]
    assert "the mean of the middle two" in quote.note


def test_the_rent_card_names_a_median_as_one_not_as_a_listing():
    from pathlib import Path

    from inferplan.economics.plan import plan
    from inferplan.report.cards import plan_cards
    from inferplan.scenario import load_scenario

    s = load_scenario(Path(__file__).parents[1] / "examples" / "coding-developers-b200.yaml")
    r = plan(s)
    assert r.rental_listings > 1 and r.rental is not None
    card = next(c for c in plan_cards(r) if c.key == "rent")
    assert f"median of {r.rental_listings} on-demand listings" in card.note
    named = plan(s.model_copy(update={"money": s.money.model_copy(update={"rental": r.rental})}))
    assert named.rental_listings == 1
    named_card = next(c for c in plan_cards(named) if c.key == "rent")
    assert "median" not in named_card.note and "on demand" in named_card.note


def test_the_rent_route_rents_no_wider_cell_than_the_owned_loadout_holds(catalog):
    """Four H100s bought are compared with the same TP4 cells rented (two to an 8-GPU instance), not with TP8
    cells only a rented 8-GPU instance holds: the break-even compares one deployment bought and rented."""
    from inferplan.economics.plan import plan
    from inferplan.economics.scenario import Scenario

    s = Scenario.model_validate({"model": "llama-3.3-70b", "quantization": "fp8", "engine": "vllm",
                                 "platform": {"gpu": "h100-sxm", "gpus": 4, "quote_usd_per_system": 120000},
                                 "workload": {"preset": "coding-developer-median"}, "target_users": 1000})
    r = plan(s, catalog)
    assert r.gpus_per_system == 4 and r.rented_instance_gpus == 8
    assert r.rented_cell_gpus <= 4
    assert r.rented_users >= 1000
