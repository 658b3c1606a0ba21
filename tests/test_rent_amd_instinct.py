"""AMD Instinct MI3xx rented at their providers' published on-demand prices: a search with
``--vendors amd`` prices the MI300X, MI325X and MI355X, and a plan on bare MI355X GPUs rents them."""

from __future__ import annotations

import pytest

from inferplan.economics.plan import plan
from inferplan.economics.rental import on_demand_listings
from inferplan.economics.scenario import Scenario
from inferplan.search.request import SearchRequest
from inferplan.search.space import build_space
from inferplan.units import HOURS_PER_MONTH


def _amd_space(catalog):
    req = SearchRequest(models=("llama-3.3-70b",), request_rate_per_s=0.1, input_len=2000, output_len=500,
                        vendors=("amd",), engines=("vllm",), speculative=False)
    return build_space(catalog, req, input_len=2000, output_len=500)


def test_the_mi325x_and_mi355x_are_searched_and_only_the_mi350x_lacks_a_price(catalog):
    unpriced = {key[1]: message for key, message in _amd_space(catalog).unpriced.items()}
    for accel in ("mi300x", "mi325x", "mi355x"):
        assert accel not in unpriced
    assert "no rental listing" in unpriced["mi350x"]  # DigitalOcean sells it per contract only


@pytest.mark.parametrize("accel", ["mi300x", "mi325x", "mi355x"])
def test_each_instinct_has_an_8_gpu_on_demand_listing(catalog, accel):
    """An 8-GPU engine instance (TP8) needs a listing whose GPUs share one host."""
    assert any(x.gpus == 8 for x in on_demand_listings(catalog, accel, fx=1.0))


def test_a_plan_on_bare_mi355x_gpus_rents_them_at_the_median_of_the_8_gpu_listings(catalog):
    """Vultr $2.59 and OCI $8.60 per GPU-hour: the median of the two is $5.595."""
    s = Scenario.model_validate({"model": "llama-3.3-70b", "platform": {"gpu": "mi355x", "gpus": 8},
                                 "workload": {"preset": "chat-seat"}, "target_users": 500, "rented": True})
    result = plan(s, catalog)
    assert result.rent_usd_per_month == pytest.approx(8 * 5.595 * HOURS_PER_MONTH)
    assert result.monthly_costs.rent_usd == result.rent_usd_per_month
