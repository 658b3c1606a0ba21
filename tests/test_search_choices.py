"""GET /api/views/search-choices: the Find the cheapest form's filter choices come from the library."""

from __future__ import annotations

from typing import get_args

from fastapi.testclient import TestClient

from inferplan.search.request import FORM_FACTOR_TIERS, SearchRequest, Status
from inferplan.shells.api import create_app


def test_the_forms_choices_are_the_catalogues_and_the_requests(tmp_path, catalog):
    got = TestClient(create_app(tmp_path / "t.db")).get("/api/views/search-choices").json()
    assert [c["id"] for c in got["engines"]] == [e.id for e in catalog.engines]
    assert "amd" in [c["id"] for c in got["vendors"]]
    assert {c["id"] for c in got["vendors"]} == {a.vendor.lower() for a in catalog.accelerators.records.values()}
    assert [c["id"] for c in got["statuses"]] == list(get_args(Status))
    assert got["default_statuses"] == ["shipping"]
    assert [c["id"] for c in got["form_factors"]] == list(FORM_FACTOR_TIERS)
    assert "lab-box" in next(c["label"] for c in got["form_factors"] if c["id"] == "workstation")


def test_the_forms_hardware_formats_and_switches_are_the_catalogues_and_the_requests(tmp_path, catalog):
    got = TestClient(create_app(tmp_path / "t.db")).get("/api/views/search-choices").json()
    assert [c["id"] for c in got["systems"]] == [s.id for s in catalog.systems]
    assert [c["id"] for c in got["accelerators"]] == [a.id for a in catalog.accelerators]
    assert [c["id"] for c in got["quantizations"]] == [q.id for q in catalog.quantizations]
    # the model's own KV type first (the search's name for it), then each the catalogue has
    assert [c["id"] for c in got["kv_cache_dtypes"]] == ["auto", *(k.id for k in catalog.kv_cache_dtypes)]
    assert (got["speculative"], got["disaggregated"]) == (SearchRequest.model_fields["speculative"].default,
                                                          SearchRequest.model_fields["disaggregated"].default)
