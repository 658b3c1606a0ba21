"""A rented pick draws what the GPUs rented draw — each rated as a bare GPU is (TDP × the host share,
``economics.plan_inputs.power_w``) — not what a bought system of the platform draws: its power
figure, the power objective and the power cap all go by the route each candidate takes."""

from __future__ import annotations

import pytest

from inferplan.search.request import SearchRequest
from inferplan.search.run import search

RATE = dict(models=("qwen3-8b",), request_rate_per_s=2.0, input_len=1000, output_len=200, engines=("vllm",),
            speculative=False, disaggregated=False, top=3)
HOST_SHARE = 1.5  # economics.plan_inputs.power_w: CPUs, memory, fans and networking beside the GPUs


def _rented(catalog, **extra):
    res = search(SearchRequest(**RATE, systems=("hgx-b200",), pricing="rent", **extra), catalog)
    assert res.results
    return res.results


def test_a_rented_pick_draws_the_rented_gpus_power(catalog):
    system_w, b200 = catalog.system("hgx-b200").power_w.value, catalog.accelerator("b200").tdp_w.value
    for r in _rented(catalog):
        assert r.rent_or_buy == "rent"
        assert r.power_w == pytest.approx(r.gpus_paid * b200 * HOST_SHARE)
        assert r.power_w < system_w


def test_the_power_cap_is_checked_on_the_rented_gpus(catalog):
    """A cap below one bought HGX B200 still admits a rented pick that draws less."""
    cap = catalog.system("hgx-b200").power_w.value / 2
    assert all(r.power_w <= cap for r in _rented(catalog, max_power_w=cap, objective="power"))


def test_a_bought_pick_draws_its_systems_power(catalog):
    res = search(SearchRequest(**RATE, systems=("hgx-b200",), pricing="buy"), catalog)
    assert res.results
    for r in res.results:
        assert r.power_w == pytest.approx(r.systems * catalog.system("hgx-b200").power_w.value)
