"""Where a machine stands sets its electricity, PUE and colocation defaults (data/economics/sites.yaml):
a workstation or desktop at a desk pays no colocation and no facility overhead (PUE 1), a node or rack
in a data centre pays both; a scenario's stated figure wins either way."""

import pytest
from fastapi.testclient import TestClient

from inferplan.catalog.loader import load_catalog
from inferplan.economics.plan import plan
from inferplan.economics.scenario import Scenario
from inferplan.shells.api import create_app

CATALOG = load_catalog()
COSTS = CATALOG.cost_defaults.records
DATA_CENTRE = {"electricity_usd_per_kwh": COSTS["electricity-us-industrial"].usd.value,
               "pue": COSTS["pue-global-average"].ratio.value,
               "colocation_usd_per_kw_month": COSTS["colocation-us-primary"].usd.value}
DESK_PRICE = COSTS["electricity-us-residential"].usd.value  # USD/kWh, EIA US residential average
# one RTX 4090 at home serving five chat users with llama.cpp
HOME = {"model": "qwen3-8b", "engine": "llama.cpp", "quantization": "q4_k_m",
        "platform": {"system": "rtx-4090-workstation"}, "workload": {"preset": "chat-seat"}, "target_users": 5}


def _plan(money=None, **changes):
    return plan(Scenario.model_validate({**HOME, **changes, "money": money or {}}), CATALOG)


def test_a_workstation_pays_no_colocation_and_no_facility_overhead():
    home, as_if_hosted = _plan(), _plan({**DATA_CENTRE, "electricity_usd_per_kwh": DESK_PRICE})
    assert (home.rates.site, home.rates.pue, home.rates.colocation_usd_per_kw_month) == ("desk", 1.0, 0.0)
    assert home.monthly_costs.colocation_usd == 0
    assert as_if_hosted.monthly_costs.colocation_usd > 0
    # the month drops by the colocation and the PUE's share of the power bill, nothing else
    pue_share = as_if_hosted.monthly_costs.power_usd * (1 - 1 / DATA_CENTRE["pue"])
    assert home.modeled_monthly_operating_cost_usd == pytest.approx(
        as_if_hosted.modeled_monthly_operating_cost_usd - as_if_hosted.monthly_costs.colocation_usd - pue_share)
    assert any("PUE 1 (pue-no-facility)" in a and "(colocation-none)" in a and "site desk" in a for a in home.assumptions)


def test_a_desk_machine_pays_the_household_electricity_price():
    home, at_industrial = _plan(), _plan({"electricity_usd_per_kwh": DATA_CENTRE["electricity_usd_per_kwh"]})
    assert (home.rates.electricity_usd_per_kwh, home.rates.electricity_note) == (DESK_PRICE, "electricity-us-residential")
    assert DESK_PRICE > DATA_CENTRE["electricity_usd_per_kwh"]  # households pay more than industry
    # the same draw, billed at the desk price: the power line scales by the price ratio, nothing else moves
    assert home.monthly_costs.power_usd == pytest.approx(
        at_industrial.monthly_costs.power_usd * DESK_PRICE / DATA_CENTRE["electricity_usd_per_kwh"])
    assert home.modeled_monthly_operating_cost_usd - at_industrial.modeled_monthly_operating_cost_usd == pytest.approx(
        home.monthly_costs.power_usd - at_industrial.monthly_costs.power_usd)
    assert any(f"${DESK_PRICE}/kWh (electricity-us-residential)" in a for a in home.assumptions)


def test_a_bare_consumer_gpu_stands_at_a_desk_and_a_bare_datacentre_gpu_in_a_data_centre():
    desk = _plan(platform={"gpu": "rtx-4090", "gpus": 1, "quote_usd_per_system": 3200})
    hall = plan(Scenario.model_validate({"model": "llama-3.1-8b", "platform": {"gpu": "h100-sxm", "gpus": 8,
                                                                                "quote_usd_per_system": 250_000}}), CATALOG)
    assert (desk.rates.site, desk.monthly_costs.colocation_usd) == ("desk", 0)
    assert hall.rates.site == "data-centre" and hall.monthly_costs.colocation_usd > 0


@pytest.mark.parametrize("system", ["hgx-h100", "gb300-nvl72", "tinybox-green-v2"])
def test_a_data_centre_system_keeps_the_data_centre_defaults(system):
    s = Scenario.model_validate({"model": "llama-3.1-8b", "platform": {"system": system}})
    r = plan(s, CATALOG).rates
    assert r.site == "data-centre"
    assert (r.electricity_usd_per_kwh, r.colocation_usd_per_kw_month) == (
        DATA_CENTRE["electricity_usd_per_kwh"], DATA_CENTRE["colocation_usd_per_kw_month"])
    assert r.pue == (COSTS["pue-liquid-cooled"].ratio.value if system == "gb300-nvl72" else DATA_CENTRE["pue"])


def test_a_stated_figure_wins_over_the_site_default():
    stated = {"electricity_usd_per_kwh": 0.31, "pue": 1.1, "colocation_usd_per_kw_month": 40.0}
    r = _plan(stated).rates
    assert (r.electricity_usd_per_kwh, r.pue, r.colocation_usd_per_kw_month) == (0.31, 1.1, 40.0)
    assert (r.electricity_note, r.pue_note, r.colocation_note) == ("stated", "stated", "stated")
    zero = plan(Scenario.model_validate({"model": "llama-3.1-8b", "platform": {"system": "hgx-h100"},
                                         "money": {"colocation_usd_per_kw_month": 0.0}}), CATALOG)
    assert zero.monthly_costs.colocation_usd == 0  # a stated 0 is a figure, not "the default"


def test_every_system_tier_and_gpu_form_factor_stands_at_one_site():
    for tier in {s.tier for s in CATALOG.systems}:
        assert sum(tier in site.system_tiers for site in CATALOG.sites) == 1, tier
    for form in {a.form_factor for a in CATALOG.accelerators}:
        assert sum(form in site.gpu_form_factors for site in CATALOG.sites) == 1, form


def test_the_api_returns_the_rates_the_web_form_shows(tmp_path):
    client = TestClient(create_app(tmp_path / "t.db"))
    rates = client.post("/api/plan", json={"scenario": HOME, "draws": 0}).json()["result"]["rates"]
    assert (rates["site"], rates["pue"], rates["colocation_usd_per_kw_month"]) == ("desk", 1.0, 0.0)
    assert rates["electricity_usd_per_kwh"] == DESK_PRICE
