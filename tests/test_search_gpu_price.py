"""A search buys bare accelerators at the user's stated price (``gpu_price_usd``): ranked by $/Mtok as
``plan`` prices the pick's scenario with the same quote; a price is refused naming the field (or the
flag) and what it takes."""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from inferplan.economics.plan import plan
from inferplan.economics.scenario import Scenario
from inferplan.errors import InvalidScenarioError, UnknownHardwareError
from inferplan.search.request import SearchRequest, Targets
from inferplan.search.run import search
from inferplan.shells.api import create_app
from inferplan.shells.cli import app

ASPECTS = dict(models=("qwen3-8b",), engines=("vllm",), disaggregated=False, speculative=False, top=3,
               users=200, workload="chat-seat", pricing="buy", targets=Targets(ttft_p95_s=2.0))


@pytest.fixture(scope="module")
def priced(catalog):
    return search(SearchRequest(**ASPECTS, accelerators=("h100-sxm",), gpu_price_usd=25_000), catalog)


def test_bare_gpus_at_a_stated_price_rank_by_usd_per_mtok_as_plan_prices_them(catalog, priced):
    assert priced.results, [x.message for x in priced.infeasible][:3]
    costs = [r.usd_per_mtok for r in priced.results]
    assert costs == sorted(costs)
    for r in priced.results:
        assert r.system is None and r.rent_or_buy == "buy" and r.accelerator == "h100-sxm"
        assert r.capex_usd == pytest.approx(25_000 * r.gpus_paid)
        assert "your $" in r.price_basis and "gpu_price_usd" in r.price_basis
        quote = r.scenario["platform"]["quote_usd_per_system"]
        assert quote == 25_000 * r.scenario["platform"]["gpus"]
        p = plan(Scenario.model_validate(r.scenario), catalog)
        assert p.capex_basis == "vendor quote" and p.capex_usd == pytest.approx(r.capex_usd, rel=1e-9)
        owned = p.modeled_monthly_operating_cost_usd + p.capex_usd / (p.amortization_years * 12)
        assert owned == pytest.approx(r.monthly_usd, rel=1e-9)
        if p.served_users == p.target_users:
            assert p.owner_cost_usd_per_mtok == pytest.approx(r.usd_per_mtok, rel=1e-9)


def test_a_dearer_gpu_price_costs_more_per_token(catalog, priced):
    dearer = search(SearchRequest(**ASPECTS, accelerators=("h100-sxm",), gpu_price_usd={"H100 SXM": 50_000}), catalog)
    assert dearer.results[0].usd_per_mtok > priced.results[0].usd_per_mtok


def test_prices_keyed_by_accelerator_price_each_one(catalog):
    req = SearchRequest(**{**ASPECTS, "top": 20}, accelerators=("h100-sxm", "rtx-4090"),
                        gpu_price_usd="h100-sxm=25000, rtx-4090=1800")
    res = search(req, catalog)
    seen = {r.accelerator: r for r in res.results}
    assert "rtx-4090" in seen, [x.message for x in res.infeasible][:5]
    r = seen["rtx-4090"]
    assert r.capex_usd == pytest.approx((1800 + 1600) * r.gpus_paid)  # each card with its host PC (host-pc-one-gpu)


@pytest.mark.parametrize("price, accelerators, field", [
    (0, ("h100-sxm",), "gpu_price_usd"),
    (-5, ("h100-sxm",), "gpu_price_usd"),
    (float("nan"), ("h100-sxm",), "gpu_price_usd"),
    ({"h100-sxm": 0}, ("h100-sxm",), "gpu_price_usd.h100-sxm"),
    ("h100-sxm=abc", ("h100-sxm",), "gpu_price_usd.h100-sxm"),
    ("h100-sxm", ("h100-sxm",), "gpu_price_usd"),
    (25_000, ("h100-sxm", "rtx-4090"), "gpu_price_usd"),
    ({"rtx-4090": 1800}, ("h100-sxm",), "gpu_price_usd.rtx-4090"),
    ({"no-such-gpu": 1800}, ("h100-sxm",), "gpu_price_usd.no-such-gpu"),
    ("h100=20000,h100-sxm=30000", ("h100-sxm",), "gpu_price_usd.h100-sxm"),  # one GPU priced twice
])
def test_a_bad_gpu_price_is_refused_naming_the_field(catalog, price, accelerators, field):
    with pytest.raises((InvalidScenarioError, UnknownHardwareError)) as err:
        search(SearchRequest(**ASPECTS, accelerators=accelerators, gpu_price_usd=price), catalog)
    assert err.value.field == field and err.value.allowed


def test_a_gpu_price_with_systems_or_renting_only_is_refused(catalog):
    with pytest.raises(InvalidScenarioError) as err:
        SearchRequest(**ASPECTS | {"systems": ("hgx-h100",)}, gpu_price_usd={"h100-sxm": 1})
    assert err.value.field == "gpu_price_usd"
    with pytest.raises(InvalidScenarioError) as err:
        SearchRequest(**ASPECTS | {"pricing": "rent"}, accelerators=("h100-sxm",), gpu_price_usd=25_000)
    assert err.value.field == "gpu_price_usd"


def test_a_priced_gpu_is_bought_bare_without_naming_accelerators(catalog):
    """A price alone adds N of its accelerator to a buying search, which otherwise searches systems only."""
    res = search(SearchRequest(**ASPECTS | {"top": 50}, vendors=("nvidia",), gpu_price_usd={"h100-sxm": 25_000}),
                 catalog)
    assert any(r.platform.endswith("x-h100-sxm") and r.system is None for r in res.results)


def test_cli_refuses_a_bare_price_with_two_accelerators_naming_the_flag():
    out = CliRunner().invoke(app, ["search", "--model", "qwen3-8b", "--users", "10", "--buy",
                                   "--accelerators", "h100-sxm,rtx-4090", "--gpu-price-usd", "25000"])
    assert out.exit_code == 2
    assert "--gpu-price-usd" in out.output and "one accelerator" in out.output


def test_cli_refuses_a_price_with_renting_only_in_words_that_read_with_the_flags():
    out = CliRunner().invoke(app, ["search", "--model", "qwen3-8b", "--users", "10", "--rent",
                                   "--accelerators", "h100-sxm", "--gpu-price-usd", "25000"], terminal_width=200)
    assert out.exit_code == 2
    assert "--gpu-price-usd" in out.output and "rents only" in out.output
    assert "--rent/--buy rent" not in out.output and "--rent/--buy buy" not in out.output


def test_cli_json_says_the_price_is_the_users():
    out = CliRunner().invoke(app, ["search", "--model", "qwen3-8b", "--users", "200", "--buy", "--engines", "vllm",
                                   "--accelerators", "h100-sxm", "--gpu-price-usd", "h100-sxm=25000", "--top", "1",
                                   "--no-speculative", "--no-disaggregated", "--json"])
    assert out.exit_code == 0, out.output
    pick = json.loads(out.output)["results"][0]
    assert pick["capex_usd"] == 25_000 * pick["gpus_paid"] and "your $" in pick["price_basis"]


def test_api_refuses_a_non_positive_price_at_its_json_path():
    client = TestClient(create_app())
    body = {"models": ["qwen3-8b"], "users": 10, "pricing": "buy", "accelerators": ["h100-sxm"],
            "gpu_price_usd": {"h100-sxm": -1}}
    r = client.post("/api/search", json=body)
    assert r.status_code == 422
    assert "gpu_price_usd" in json.dumps(r.json())


def test_a_consumer_card_price_adds_the_host_pc_the_catalogue_adds_to_its_card_only_band(catalog):
    req = SearchRequest(**{**ASPECTS, "users": 5, "top": 20}, accelerators=("rtx-4090",), gpu_price_usd=1800)
    res = search(req, catalog)
    assert res.results, [x.message for x in res.infeasible][:3]
    host = catalog.cost_defaults.records["host-pc-one-gpu"].usd.value
    for r in res.results:
        assert r.capex_usd == pytest.approx((1800 + host) * r.gpus_paid)
        assert "$1,800 per rtx-4090" in r.price_basis and "host-pc-one-gpu" in r.price_basis
        p = plan(Scenario.model_validate(r.scenario), catalog)
        assert p.capex_usd == pytest.approx(r.capex_usd, rel=1e-9)


def test_a_priced_accelerator_is_searched_whatever_its_status(catalog):
    assert catalog.accelerator("rtx-4090").status.value not in SearchRequest(models=("qwen3-8b",), users=5).statuses
    req = SearchRequest(**{**ASPECTS, "users": 5, "top": 50}, gpu_price_usd={"rtx-4090": 1800})
    res = search(req, catalog)
    assert any(r.accelerator == "rtx-4090" and r.system is None for r in res.results)


def test_a_priced_accelerator_is_searched_under_a_form_factor_filter(catalog):
    # a form factor keeps only systems of that kind and the bare GPUs the user names; a priced one is named
    req = SearchRequest(**{**ASPECTS, "users": 5, "top": 50}, gpu_price_usd={"rtx-4090": 1800},
                        form_factors=("workstation",))
    res = search(req, catalog)
    assert any(r.accelerator == "rtx-4090" and r.system is None for r in res.results)
