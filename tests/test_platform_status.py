"""A plan on a platform the catalogue lists as roadmap or ramp says so above its headline figures,
naming which of the platform's figures are assumed, in every shell; the ladder shows a roadmap
part's NVFP4 support as the assumption it is."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from inferplan.economics.plan import plan
from inferplan.economics.scenario import Scenario
from inferplan.report.cards import headline_notes
from inferplan.report.views import platform_ladder

KYBER = {"name": "Kyber", "model": "nemotron-3-ultra", "quantization": "nvfp4",
         "platform": {"system": "kyber-nvl144", "price_point": "mid"}, "workload": {"preset": "agent-worker"},
         "target_users": 1000}


@pytest.fixture(scope="module")
def kyber(catalog):
    return plan(Scenario.model_validate(KYBER), catalog)


def test_a_roadmap_platform_is_named_with_the_figures_the_catalogue_assumes(kyber, catalog):
    assert kyber.platform_status == "roadmap" and kyber.simple_payback_months is not None
    assert {"price band", "FLOP/s"} <= set(kyber.platform_assumed)
    (note,) = headline_notes(kyber)
    assert "kyber-nvl144 is a roadmap platform" in note and "not shipping" in note
    assert "price band" in note and "FLOP/s" in note and "assumed" in note
    quoted = plan(Scenario.model_validate({**KYBER, "platform": {"system": "kyber-nvl144", "quote_usd_per_system": 2e7}}),
                  catalog)
    assert "price band" not in quoted.platform_assumed and "FLOP/s" in quoted.platform_assumed  # a quote is yours


def test_a_shipping_platform_has_no_headline_note(catalog):
    r = plan(Scenario.model_validate({**KYBER, "platform": {"system": "gb300-nvl72"}}), catalog)
    assert r.platform_status == "shipping" and headline_notes(r) == []


def test_the_cli_the_api_and_the_report_lead_with_the_note(kyber, tmp_path):
    from rich.console import Console

    from inferplan.report.files import _markdown
    from inferplan.shells.api import create_app
    from inferplan.shells.render import print_plan

    (note,) = headline_notes(kyber)
    console = Console(record=True, width=400)
    print_plan(console, kyber)
    printed = console.export_text()
    assert printed.startswith(f"Note: {note}") and printed.index("Note:") < printed.index("Recommendation:")
    assert "**Note:** kyber-nvl144 is a roadmap platform" in _markdown(kyber, None, {}, "usd")
    body = TestClient(create_app(tmp_path / "t.db")).post("/api/plan", json={"scenario": KYBER, "draws": 0})
    assert body.status_code == 200, body.text
    assert body.json()["headline_notes"] == [note]


def test_the_ladder_shows_a_roadmap_parts_nvfp4_as_assumed(catalog):
    rows = {r.id: r for r in platform_ladder(catalog)}
    assert rows["kyber-nvl144"].native_nvfp4 == "assumed (roadmap part)"
    assert rows["gb300-nvl72"].native_nvfp4 == "yes" and rows["hgx-h100"].native_nvfp4 == "no"
