"""`catalog stale`: which numbers' sources were checked longest ago."""

import datetime as dt
import json

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from inferplan.catalog.freshness import DEFAULT_STALE_DAYS, stale_entries
from inferplan.errors import CatalogError
from inferplan.shells.api import create_app
from inferplan.shells.cli import app


def test_rows_are_older_than_the_cut_oldest_first(catalog):
    today = dt.date(2027, 6, 1)
    rows = stale_entries(180, today=today, catalog=catalog)
    assert rows, "the shipped catalogue has numbers checked before December 2026"
    assert all(row.age_days > 180 and row.age_days == (today - row.checked).days for row in rows)
    assert [row.checked for row in rows] == sorted(row.checked for row in rows)
    # every number checked on or before the cut is listed, none after it
    newer = stale_entries(0, today=today, catalog=catalog)
    assert {(r.kind, r.id, r.source) for r in newer if r.age_days > 180} == {(r.kind, r.id, r.source) for r in rows}


def test_a_number_is_dated_by_its_own_checked_date_before_its_sources(catalog):
    rows = stale_entries(0, today=dt.date(2030, 1, 1), catalog=catalog)
    rent = next(r for r in rows if r.id == "rent-aws-g5.xlarge-us-east-1")
    record = next(p for p in catalog.rental_prices if p.id == rent.id)
    quantity = getattr(record, rent.numbers[0])
    assert rent.checked == (quantity.checked or catalog.sources[quantity.source].checked)
    assert rent.source == quantity.source


def test_the_default_cut_is_half_a_year(catalog):
    oldest = stale_entries(0, today=dt.date(2030, 1, 1), catalog=catalog)[0].checked
    day = oldest + dt.timedelta(days=DEFAULT_STALE_DAYS)
    assert stale_entries(today=day, catalog=catalog) == []
    assert stale_entries(today=day + dt.timedelta(days=1), catalog=catalog)[0].checked == oldest


@pytest.mark.parametrize("days", [-1, 1.5, True, 10**6])
def test_a_bad_day_count_names_days(days, catalog):
    with pytest.raises(CatalogError) as info:
        stale_entries(days, catalog=catalog)
    assert info.value.field == "days"


def test_cli_and_api_list_the_same_rows():
    runner = CliRunner()
    r = runner.invoke(app, ["catalog", "stale", "--days", "60", "--json"])
    assert r.exit_code == 0, r.output
    cli_rows = json.loads(r.stdout)
    assert cli_rows and {"kind", "id", "numbers", "source", "checked", "age_days"} <= set(cli_rows[0])
    api = TestClient(create_app(":memory:"))
    assert api.get("/api/catalog/stale", params={"days": 60}).json() == cli_rows
    assert api.get("/api/catalog/stale", params={"days": -1}).status_code == 422
    table = runner.invoke(app, ["catalog", "stale", "--days", "60"])
    assert table.exit_code == 0 and cli_rows[0]["checked"] in table.output
    bad = runner.invoke(app, ["catalog", "stale", "--days", "-3"])
    assert bad.exit_code == 2 and "--days" in bad.output and "Traceback" not in bad.output
