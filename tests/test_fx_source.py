"""Wherever an amount is shown in EUR, the FX rate is printed with its source and checked date, as the
catalogue states them; the page takes the rate from the API rather than its own HTML."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from inferplan.economics.plan import plan
from inferplan.scenario import load_scenario

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "coding-developers-b200.yaml"
STATIC = Path(__file__).resolve().parents[1] / "src" / "inferplan" / "shells" / "static"


@pytest.fixture(scope="module")
def result(catalog):
    return plan(load_scenario(EXAMPLE), catalog)


def _catalogued(catalog) -> tuple[float, str, str]:
    q = catalog.cost_defaults.records["fx-eur-usd"].usd_per_eur
    source = catalog.sources[q.source]
    return q.value, source.title, (q.checked or source.checked).isoformat()


def test_the_plan_states_the_rate_its_source_and_its_date(result, catalog):
    rate, title, checked = _catalogued(catalog)
    assert result.fx_text == f"€1 = ${rate:g} ({title}, checked {checked})"
    assert any(a.startswith(f"FX €1 = ${rate:g} ({title}, checked {checked})") for a in result.assumptions)


def test_the_cli_and_the_report_print_it_beside_eur_amounts(result):
    from rich.console import Console

    from inferplan.report.files import _markdown
    from inferplan.shells.render import print_plan

    console = Console(record=True, width=400)
    print_plan(console, result, currency="eur")
    assert f"Amounts in EUR at {result.fx_text}" in console.export_text()
    usd = Console(record=True, width=400)
    print_plan(usd, result, currency="usd")
    assert "Amounts in EUR" not in usd.export_text()
    assert "checked" in _markdown(result, None, {}, "eur").split("\n")[2]


def test_the_api_serves_the_rate_and_the_page_does_not_hard_code_it(catalog, tmp_path):
    from inferplan.shells.api import create_app

    rate, title, checked = _catalogued(catalog)
    fx = TestClient(create_app(tmp_path / "t.db")).get("/api/views/fx").json()
    assert (fx["usd_per_eur"], fx["label"]) == (rate, f"€1 = ${rate:g}")
    assert title in fx["text"] and checked in fx["text"] and fx["sources"][0]["checked"] == checked
    shipped = "".join(p.read_text() for p in STATIC.glob("*.*") if p.suffix in (".html", ".js"))
    assert f"{rate:g}" not in shipped
