"""Each kind the store saves holds at most ``store.MAX_SAVED`` items: a save past the bound is a 409 naming
the kind, the bound and how to delete one, and nothing already saved is dropped to make room."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from inferplan import store as store_module
from inferplan.economics.scenario import Scenario
from inferplan.shells.api import create_app
from inferplan.store import MAX_SAVED, Store, StoreFullError

SCENARIO = {"name": "bounded", "model": "llama-3.1-8b", "platform": {"system": "hgx-h100"},
            "workload": {"preset": "coding-developer-median"}, "target_users": 200}
QUOTE = {"system": "hgx-h100", "price_usd": 250000, "quoted_on": "2026-11-01", "vendor": "a vendor"}
DATA = Path(__file__).parent / "data" / "measurements"


def _upload(name: str) -> dict:
    return {"files": [{"name": name, "content": (DATA / name).read_text()}],
            "provenance": {"model": "llama-3.1-8b", "gpu": "h100", "engine": "vllm"}}


def test_every_kind_has_a_bound():
    assert set(MAX_SAVED) == {"scenarios", "quotes", "measurements"} and all(n >= 100 for n in MAX_SAVED.values())


def test_a_scenario_past_the_bound_is_refused_and_replacing_one_still_saves(tmp_path):
    store = Store(tmp_path / "s.db", max_saved={"scenarios": 2})
    scenario = Scenario.model_validate(SCENARIO)
    first = store.save_scenario("one", scenario)
    store.save_scenario("two", scenario)
    with pytest.raises(StoreFullError) as exc:
        store.save_scenario("three", scenario)
    assert "2 saved scenarios" in str(exc.value) and "at most 2" in str(exc.value)
    assert "DELETE /api/scenarios/{id}" in exc.value.allowed
    assert [s.name for s in store.list_scenarios()] == ["two", "one"]  # nothing dropped
    store.save_scenario("two", scenario, replace=True)  # no new row: no room needed
    store.rename_scenario(first.id, "first")
    store.delete_scenario(first.id)
    assert store.save_scenario("three", scenario).name == "three"


def test_the_api_refuses_a_save_past_the_bound_with_a_409_and_saves_again_once_one_is_deleted(tmp_path, monkeypatch):
    monkeypatch.setitem(store_module.MAX_SAVED, "scenarios", 1)
    monkeypatch.setitem(store_module.MAX_SAVED, "quotes", 1)
    client = TestClient(create_app(tmp_path / "api.db"))
    saved = client.post("/api/scenarios", json={"name": "a", "scenario": SCENARIO})
    assert saved.status_code == 201, saved.text
    r = client.post("/api/scenarios", json={"name": "b", "scenario": SCENARIO})
    assert r.status_code == 409, r.text
    error = r.json()["error"]
    assert "saved scenarios" in error["message"] and "at most 1" in error["message"], error
    assert "DELETE /api/scenarios/{id}" in error["allowed"], error
    assert client.delete(f"/api/scenarios/{saved.json()['id']}").status_code == 204
    assert client.post("/api/scenarios", json={"name": "b", "scenario": SCENARIO}).status_code == 201

    quote = client.post("/api/quotes", json=QUOTE)
    assert quote.status_code == 201, quote.text
    r = client.post("/api/quotes", json=QUOTE)
    assert r.status_code == 409 and "vendor quotes" in r.json()["error"]["message"], r.text
    assert "DELETE /api/quotes/{id}" in r.json()["error"]["allowed"]
    assert len(client.get("/api/quotes").json()) == 1
    declared = client.get("/openapi.json").json()["paths"]["/api/quotes"]["post"]["responses"]
    assert "409" in declared


def test_an_import_past_the_bound_stores_none_of_its_runs(tmp_path, monkeypatch):
    monkeypatch.setitem(store_module.MAX_SAVED, "measurements", 1)
    client = TestClient(create_app(tmp_path / "runs.db"))
    first = client.post("/api/measurements", json=_upload("vllm_bench_serve_c8.json"))
    assert first.status_code == 201, first.text
    r = client.post("/api/measurements", json=_upload("vllm_bench_serve_c32.json"))
    assert r.status_code == 409, r.text
    error = r.json()["error"]
    assert "stored runs" in error["message"] and "at most 1" in error["message"], error
    assert "inferplan measurements delete" in error["allowed"] and "DELETE /api/measurements/{id}" in error["allowed"]
    assert len(client.get("/api/measurements").json()) == 1
    assert client.delete(f"/api/measurements/{first.json()[0]['id']}").status_code == 204
    assert client.post("/api/measurements", json=_upload("vllm_bench_serve_c32.json")).status_code == 201
