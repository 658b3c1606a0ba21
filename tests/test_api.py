"""Every route of the HTTP API, with its error paths."""

import concurrent.futures
import datetime as dt

import pytest
from fastapi.testclient import TestClient

from inferplan.economics.scenario import Scenario
from inferplan.shells.api import create_app

SCENARIO = {"name": "api test", "model": "llama-3.1-8b", "platform": {"system": "hgx-h100"},
            "workload": {"preset": "coding-developer-median"}, "target_users": 200, "money": {"quote_multiplier": 2}}


@pytest.fixture()
def client(tmp_path):
    return TestClient(create_app(tmp_path / "test.db"))


def loc(response):
    return response.json()["detail"][0]["loc"]


def test_catalog_routes(client):
    assert "accelerators" in client.get("/api/catalog").json()
    assert len(client.get("/api/catalog/models").json()) >= 40
    assert client.get("/api/catalog/gizmos").status_code == 404
    h100 = client.get("/api/catalog/accelerators/H100")
    assert h100.status_code == 200 and h100.json()["id"] == "h100-sxm"
    assert client.get("/api/catalog/accelerators/zzz").status_code == 404
    hits = client.get("/api/search", params={"q": "b200"}).json()
    assert {"accelerators", "systems"} <= {h["kind"] for h in hits}
    assert client.get("/api/search", params={"q": ""}).status_code == 422
    assert len(client.get("/api/views/models").json()) >= 15
    assert any(p["native_nvfp4"] == "yes" for p in client.get("/api/views/platforms").json())


def test_fit_and_fits(client):
    r = client.post("/api/fit", json={"model": "llama-3.1-8b", "gpu": "H100", "max_model_len": 16000})
    assert r.status_code == 200 and r.json()["kv_cache_bytes_per_token"] == 131072
    bad = client.post("/api/fit", json={"model": "llama-3.1-8b", "gpu": "H100", "gpu_memory_utilization": 1.5})
    assert bad.status_code == 422 and loc(bad) == ["body", "gpu_memory_utilization"]
    unknown = client.post("/api/fit", json={"model": "nope", "gpu": "H100"})
    assert unknown.status_code == 422 and loc(unknown) == ["body", "model"]
    ambiguous = client.post("/api/fit", json={"model": "llama-3.1-8b", "gpu": "RTX"})
    assert ambiguous.status_code == 422 and "rtx-4090" in ambiguous.json()["detail"][0]["allowed"]
    m = client.post("/api/fits", json={"models": ["llama-3.1-8b"], "gpus": ["h100-sxm", "rtx-4090"]})
    assert m.status_code == 200 and len(m.json()["cells"]) == 2
    assert client.post("/api/fits", json={"models": ["x"] * 100}).status_code == 422


def test_perf_and_frontier(client):
    d = {"model": "llama-3.1-8b", "gpu": "H100", "max_model_len": 4096}
    r = client.post("/api/perf", json={"deployment": d, "workload": {"input_len": 1000, "output_len": 200, "concurrency": 8}})
    assert r.status_code == 200 and r.json()["source"] == "calibrated-model"
    big = client.post("/api/perf", json={"deployment": d, "workload": {"input_len": 3000, "output_len": 1000, "concurrency": 100000}})
    assert big.status_code == 422 and loc(big) == ["body", "workload", "concurrency"]
    zero = client.post("/api/perf", json={"deployment": d, "workload": {"input_len": 0}})
    assert zero.status_code == 422
    f = client.post("/api/frontier", json={"deployment": d, "workload": {"input_len": 1000, "output_len": 1000}, "points": 6})
    assert f.status_code == 200 and len(f.json()["points"]) >= 4


def test_plan_report_and_validate(client):
    r = client.post("/api/plan", json={"scenario": SCENARIO, "draws": 200})
    assert r.status_code == 200
    view = r.json()
    assert view["result"]["target_users"] == 200 and view["uncertainty"]["draws"] == 200
    assert {"cost_per_user", "payback", "capacity", "uncertainty", "memory", "frontier"} <= set(view["charts"])
    assert any(c["key"] == "users" for c in view["cards"])
    eur = client.post("/api/plan", json={"scenario": SCENARIO, "draws": 0, "currency": "eur"}).json()
    assert eur["uncertainty"] is None and eur["cards"][0]["value"].lstrip("-").startswith("€")
    bad = client.post("/api/plan", json={"scenario": {**SCENARIO, "colour": "red"}})
    assert bad.status_code == 422
    rep = client.post("/api/report", json={"scenario": SCENARIO, "draws": 100})
    assert rep.status_code == 200 and rep.headers["content-type"].startswith("text/html")
    assert "attachment" in rep.headers["content-disposition"] and "<svg" in rep.text
    v = client.get("/api/validate", params={"kind": "memory"}).json()
    assert v["speed"] is None and v["memory"]["median_abs_kv_error"] < 0.03
    assert client.get("/api/validate", params={"kind": "nonsense"}).status_code == 422


def test_saved_scenarios(client):
    a = client.post("/api/scenarios", json={"name": "first", "scenario": SCENARIO})
    assert a.status_code == 201
    b = client.post("/api/scenarios", json={"name": "second", "scenario": {**SCENARIO, "target_users": 900}}).json()
    assert [s["name"] for s in client.get("/api/scenarios").json()] == ["second", "first"]
    first_id = a.json()["id"]
    assert client.get(f"/api/scenarios/{first_id}").json()["scenario"]["target_users"] == 200
    renamed = client.patch(f"/api/scenarios/{first_id}", json={"name": "renamed"})
    assert renamed.status_code == 200 and renamed.json()["name"] == "renamed"
    clash = client.patch(f"/api/scenarios/{first_id}", json={"name": "second"})
    assert clash.status_code == 409 and loc(clash) == ["body", "name"]
    cmp = client.get("/api/scenarios/compare", params={"a": first_id, "b": b["id"], "draws": 0})
    assert cmp.status_code == 200
    assert cmp.json()["a"]["result"]["target_users"] == 200 and cmp.json()["b"]["result"]["target_users"] == 900
    assert client.delete(f"/api/scenarios/{first_id}").status_code == 204
    assert client.get(f"/api/scenarios/{first_id}").status_code == 404
    assert client.delete(f"/api/scenarios/{first_id}").status_code == 404
    assert client.patch("/api/scenarios/999", json={"name": "x"}).status_code == 404


def test_a_saved_scenario_comes_back_as_it_was_saved(client):
    """No cell stated: saved, loaded and compared it is still sized automatically (it used to come
    back pinned to TP1, which gpt-oss-120b does not fit on one H100)."""
    scenario = {"name": "s", "model": "gpt-oss-120b", "platform": {"system": "hgx-h100"},
                "workload": {"preset": "chat-seat"}, "target_users": 100}
    direct = client.post("/api/plan", json={"scenario": scenario, "draws": 0}).json()["result"]
    saved = client.post("/api/scenarios", json={"name": "auto", "scenario": scenario}).json()
    assert saved["scenario"]["cell"] is None
    assert client.get(f"/api/scenarios/{saved['id']}").json()["scenario"]["cell"] is None
    cmp = client.get("/api/scenarios/compare", params={"a": saved["id"], "b": saved["id"], "draws": 0})
    assert cmp.status_code == 200 and cmp.json()["a"]["result"]["supported_users"] == direct["supported_users"]


def test_a_missing_item_is_located_in_the_path_or_query_that_named_it(client):
    for method, url, where in (("get", "/api/scenarios/99999", ["path", "scenario_id"]),
                               ("delete", "/api/quotes/999", ["path", "quote_id"]),
                               ("get", "/api/catalog/models/nope", ["path", "name"]),
                               ("get", "/api/catalog/sources/nope", ["path", "name"])):
        r = getattr(client, method)(url)
        assert r.status_code == 404 and loc(r) == where, (url, r.text)
    saved = client.post("/api/scenarios", json={"name": "x", "scenario": SCENARIO}).json()
    r = client.get("/api/scenarios/compare", params={"a": saved["id"], "b": 999, "draws": 0})
    assert r.status_code == 404 and loc(r) == ["query", "b"]


def test_catalogue_look_ups_need_a_real_name(client):
    assert client.get("/api/catalog/cost-defaults/x").status_code == 404  # not fx-eur-usd by its letter x
    assert client.get("/api/catalog/models/%20").status_code == 404
    assert client.get("/api/catalog/accelerators/H100").json()["id"] == "h100-sxm"  # a part of a name still finds it
    source = client.get("/api/catalog/sources").json()[0]["id"]
    assert client.get(f"/api/catalog/sources/{source}").json()["id"] == source  # was a 500


def test_a_quote_needs_a_real_price_a_past_date_a_vendor_and_numbers_not_text(client):
    good = {"system": "hgx-h100", "price_usd": 250000, "quoted_on": "2026-11-01", "vendor": "Acme"}
    for change, key in (({"quoted_on": "9999-12-31"}, "quoted_on"), ({"vendor": "  "}, "vendor"),
                        ({"price_usd": 1e-300}, "price_usd"), ({"price_usd": "250000"}, "price_usd")):
        r = client.post("/api/quotes", json={**good, **change})
        assert r.status_code == 422 and loc(r) == ["body", key], (change, r.text)
    scenario = {**SCENARIO, "platform": {"system": "hgx-h100", "power_w_per_system": 1e-300}}
    r = client.post("/api/plan", json={"scenario": scenario, "draws": 0})  # was Infinity tokens/s per MW
    assert r.status_code == 422 and loc(r)[-1] == "power_w_per_system"
    # what is allowed agrees with the refusal: at least 1, not the field's stored-rows bound of "more than 0"
    assert r.json()["detail"][0]["allowed"] == "a number at least 1 and at most 100,000,000"
    for under in (0.5, 0, -3):  # 0 and below too: not the field's "more than 0"
        for key, top in (("quote_usd_per_system", "10,000,000,000"), ("power_w_per_system", "100,000,000")):
            scenario = {**SCENARIO, "platform": {"system": "hgx-h100", key: under}}
            r = client.post("/api/plan", json={"scenario": scenario, "draws": 0})
            item = r.json()["detail"][0]
            assert r.status_code == 422 and item["loc"][-1] == key and "at least 1" in item["msg"], r.text
            assert item["allowed"] == f"a number at least 1 and at most {top}", r.text


def test_a_quote_or_power_given_as_text_says_at_least_1_too(client):
    for value, said in (("x", "is not a number: this field takes a number at least 1"), ("5", "is text"),
                        (True, "is a yes/no value")):
        for key, top in (("quote_usd_per_system", "10,000,000,000"), ("power_w_per_system", "100,000,000")):
            scenario = {**SCENARIO, "platform": {"system": "hgx-h100", key: value}}
            r = client.post("/api/plan", json={"scenario": scenario, "draws": 0})
            item = r.json()["detail"][0]
            assert r.status_code == 422 and item["loc"][-1] == key and said in item["msg"], r.text
            assert item["allowed"] == f"a number at least 1 and at most {top}", r.text  # not "more than 0"
    bare = {**SCENARIO, "platform": {"gpu": "h100-sxm", "gpus": 1}}  # no quote: the quote asked for is at least $1 too
    error = client.post("/api/plan", json={"scenario": bare, "draws": 0}).json()["error"]
    assert error["field"] == "scenario.platform.quote_usd_per_system" and "at least 1" in error["allowed"], error


def test_a_prefill_cell_with_ranks_not_expert_parallel_says_what_is_allowed(client):
    pool = {"instances": 1, "cell": {"data_parallel_size": 2}}
    scenario = {**SCENARIO, "cell": {}, "replicas": 1, "prefill_pool": pool}
    r = client.post("/api/plan", json={"scenario": scenario, "draws": 0})
    item = r.json()["detail"][0]
    assert r.status_code == 422 and item["loc"][-2:] == ["prefill_pool", "cell"], r.text
    assert "needs enable_expert_parallel: true" in item["msg"]
    assert item["allowed"] == "data_parallel_size 1, or enable_expert_parallel: true beside a larger one", r.text


def test_rows_stored_before_a_bound_was_added_still_read(tmp_path):
    """A quote under $1 or a power under 1 W was accepted before; the store still reads such rows."""
    import json
    import sqlite3

    from inferplan.store import Store

    store = Store(tmp_path / "old.db")
    with sqlite3.connect(tmp_path / "old.db") as db:
        db.execute("INSERT INTO quotes (system, price_usd, quoted_on, vendor, note, created) VALUES "
                   "('HGX H100', 0.5, '2030-01-01', ' ', '', '2026-01-01')")
        body = {**SCENARIO, "platform": {"system": "hgx-h100", "power_w_per_system": 0.5}}
        db.execute("INSERT INTO scenarios (name, body, created, updated) VALUES ('old', ?, '2026-01-01', '2026-01-01')",
                   (json.dumps(body),))
    assert store.list_quotes()[0].price_usd == 0.5
    assert store.list_scenarios()[0].scenario.platform.power_w_per_system == 0.5
    client = TestClient(create_app(tmp_path / "old.db"))
    assert client.get("/api/quotes").status_code == 200 and client.get("/api/scenarios").status_code == 200


def test_a_quote_typed_with_an_alias_is_stored_and_found_under_the_system_id(client):
    q = client.post("/api/quotes", json={"system": "HGX-H200", "price_usd": 300000, "quoted_on": "2026-11-01",
                                         "vendor": "Acme"})
    assert q.status_code == 201 and q.json()["system"] == "hgx-h200"
    for name in ("hgx-h200", "HGX-H200"):
        scenario = {**SCENARIO, "platform": {"system": name}}
        r = client.post("/api/plan", json={"scenario": scenario, "draws": 0}).json()["result"]
        assert r["capex_basis"] == "vendor quote" and r["capex_usd"] == 300000 * r["loadouts"]


def test_vendor_quotes_override_the_price_band(client):
    before = client.post("/api/plan", json={"scenario": SCENARIO, "draws": 0}).json()["result"]
    q = client.post("/api/quotes", json={"system": "hgx-h100", "price_usd": 250000, "quoted_on": "2026-11-01",
                                         "vendor": "Acme", "note": "test"})
    assert q.status_code == 201
    after = client.post("/api/plan", json={"scenario": SCENARIO, "draws": 0}).json()
    assert after["result"]["capex_basis"] == "vendor quote"
    assert after["result"]["capex_usd"] == 250000 * after["result"]["loadouts"] != before["capex_usd"]
    assert "Acme" in after["quote_note"]
    assert len(client.get("/api/quotes").json()) == 1
    assert client.post("/api/quotes", json={"system": "no-such", "price_usd": 1, "quoted_on": "2026-11-01", "vendor": "x"}).status_code == 422
    assert client.post("/api/quotes", json={"system": "hgx-h100", "price_usd": -1, "quoted_on": "2026-11-01", "vendor": "x"}).status_code == 422
    assert client.delete(f"/api/quotes/{q.json()['id']}").status_code == 204
    assert client.delete(f"/api/quotes/{q.json()['id']}").status_code == 404


def test_concurrent_saves_lose_nothing(tmp_path):
    from inferplan.economics.scenario import Scenario
    from inferplan.store import Store

    store = Store(tmp_path / "c.db")
    scenario = Scenario.model_validate(SCENARIO)

    def save(i):
        return store.save_scenario(f"s{i}", scenario).id

    with concurrent.futures.ThreadPoolExecutor(max_workers=8) as pool:
        ids = list(pool.map(save, range(80)))
    assert len(set(ids)) == 80 and len(store.list_scenarios()) == 80


def test_page_and_schema(client):
    page = client.get("/")
    assert page.status_code == 200 and "Users + ROI simulator" in page.text
    assert client.get("/static/vendor/vega.min.js").status_code == 200
    schema = client.get("/openapi.json").json()
    assert schema["openapi"].startswith("3.1")
    assert {"/api/fit", "/api/perf", "/api/frontier", "/api/plan", "/api/scenarios", "/api/quotes"} <= set(schema["paths"])


def test_dates_in_quotes_are_checked(client):
    r = client.post("/api/quotes", json={"system": "hgx-h100", "price_usd": 1e5, "quoted_on": "not-a-date", "vendor": "x"})
    assert r.status_code == 422
    assert dt.date.fromisoformat("2026-11-01")


def test_the_api_does_not_read_files_from_the_servers_disk(client, tmp_path):
    config = tmp_path / "config.json"
    config.write_text("{}")
    r = client.post("/api/fit", json={"model": str(config), "gpu": "H100"})
    assert r.status_code == 422 and loc(r) == ["body", "model"]
    odd = client.post("/api/fit", json={"model": "~0", "gpu": "H100"})  # "~user" that cannot expand: not a path
    assert odd.status_code == 422 and loc(odd) == ["body", "model"]


def test_a_nan_or_infinity_in_a_body_is_a_422_naming_its_path(client):
    """JSON cannot carry NaN, and FastAPI echoes the bad input back: that used to be a 500."""
    body = '{"deployment": {"model": "llama-3.1-8b", "gpu": "h100-sxm"}, "workload": {"acceptance_rate": NaN}}'
    r = client.post("/api/perf", content=body, headers={"content-type": "application/json"})
    assert r.status_code == 422
    assert r.json()["detail"][0]["loc"] == ["body", "workload", "acceptance_rate"]
    r = client.post("/api/fit", content='{"model": "llama-3.1-8b", "gpu": "h100-sxm", "concurrency": 1e400}',
                    headers={"content-type": "application/json"})
    assert r.status_code == 422


def test_fits_names_the_list_an_unknown_entry_is_in(client):
    for path, names in (("models", ["llama-3.1-8b", "nope"]), ("gpus", ["h100-sxm", "nope"]), ("quantizations", ["nope"])):
        r = client.post("/api/fits", json={path: names})
        assert r.status_code == 422 and loc(r) == ["body", path] and "'nope'" in r.text


def test_a_boolean_is_not_a_number_in_a_body(client):
    r = client.post("/api/perf", json={"deployment": {"model": "llama-3.1-8b", "gpu": "h100-sxm", "gpus": True}})
    assert r.status_code == 422 and loc(r) == ["body", "deployment", "gpus"] and "yes/no" in r.text
    r = client.post("/api/perf", json={"deployment": {"model": "llama-3.1-8b", "gpu": "h100-sxm"},
                                       "workload": {"concurrency": True}})
    assert r.status_code == 422 and loc(r) == ["body", "workload", "concurrency"]
    ok = client.post("/api/perf", json={"deployment": {"model": "qwen3-30b-a3b", "gpu": "h100-sxm", "gpus": 2,
                                                       "tensor_parallel_size": 2, "enable_expert_parallel": True}})
    assert ok.status_code == 200  # a yes/no field still takes one


def test_speed_requests_refuse_fields_they_would_ignore(client):
    d = {"model": "llama-3.1-8b", "gpu": "h100-sxm"}
    r = client.post("/api/perf", json={"deployment": {**d, "concurrency": 8}})
    assert r.status_code == 422 and loc(r) == ["body", "deployment"] and "workload.concurrency" in r.text
    r = client.post("/api/frontier", json={"deployment": d, "workload": {"concurrency": 50}})
    assert r.status_code == 422 and loc(r) == ["body", "workload"]
    r = client.post("/api/perf", json={"deployment": d, "workload": {"acceptance_rate": 0.9}})
    assert r.status_code == 422 and loc(r) == ["body", "workload", "acceptance_rate"]


def test_a_speed_request_error_names_its_json_path(client):
    d = {"model": "llama-3.1-8b", "gpu": "h100-sxm"}
    r = client.post("/api/perf", json={"deployment": {**d, "quantization": "nope"}})
    assert r.status_code == 422 and loc(r) == ["body", "deployment", "quantization"]
    r = client.post("/api/perf", json={"deployment": d, "workload": {"concurrency": 100000}})
    assert r.status_code == 422 and loc(r) == ["body", "workload", "concurrency"]
    r = client.post("/api/frontier", json={"deployment": {**d, "engine": "trtllm", "gpu": "mi300x"}})
    assert r.status_code == 422 and loc(r) == ["body", "deployment", "engine"]


def test_a_scenario_naming_unknown_ids_is_refused_when_saved_and_plan_errors_name_their_path(client):
    base = {"model": "gpt-oss-120b", "platform": {"system": "hgx-h100"}}
    for extra, path in [({"engine": "nope"}, ["engine"]), ({"platform": {"system": "nope"}}, ["platform", "system"]),
                        ({"workload": {"preset": "nope"}}, ["workload", "preset"])]:
        r = client.post("/api/scenarios", json={"name": "s", "scenario": {**base, **extra}})
        assert r.status_code == 422 and loc(r) == ["body", "scenario", *path], (extra, r.text)
    assert client.post("/api/scenarios", json={"name": "s", "scenario": base}).status_code == 201
    r = client.post("/api/plan", json={"scenario": {**base, "quantization": "nope"}})
    assert r.status_code == 422 and loc(r) == ["body", "scenario", "quantization"]


def test_ubatch_size_is_taken_for_llamacpp_and_refused_by_name_elsewhere(client):
    r = client.post("/api/perf", json={"deployment": {"model": "llama-3.1-8b", "gpu": "h100", "ubatch_size": 512}, "workload": {}})
    assert r.status_code == 422 and loc(r) == ["body", "deployment", "ubatch_size"]
    ok = client.post("/api/perf", json={"deployment": {"model": "qwen3-30b-a3b", "gpu": "gb10", "engine": "llamacpp",
                                                       "quantization": "q4_k_m", "ubatch_size": 1024},
                                        "workload": {"input_len": 4096, "output_len": 64}})
    assert ok.status_code == 200
    assert any("micro-batches of 1024 tokens" in a for a in ok.json()["assumptions"])


def test_saving_under_a_taken_name_is_refused_unless_replace_is_said(client):
    assert client.post("/api/scenarios", json={"name": "mine", "scenario": SCENARIO}).status_code == 201
    again = client.post("/api/scenarios", json={"name": "mine", "scenario": {**SCENARIO, "target_users": 900}})
    assert again.status_code == 409 and loc(again) == ["body", "name"] and "replace" in again.json()["detail"][0]["allowed"]
    assert client.get("/api/scenarios").json()[0]["scenario"]["target_users"] == 200  # nothing lost
    replaced = client.post("/api/scenarios", json={"name": "mine", "scenario": {**SCENARIO, "target_users": 900}, "replace": True})
    assert replaced.status_code == 201 and replaced.json()["scenario"]["target_users"] == 900


def test_a_scenario_that_cannot_plan_is_not_saved(client):
    r = client.post("/api/scenarios", json={"name": "tp3", "scenario": {**SCENARIO, "cell": {"tensor_parallel_size": 3}}})
    assert r.status_code == 422 and "cell" in loc(r)
    assert client.get("/api/scenarios").json() == []


def test_a_quote_names_a_system_exactly_and_never_a_gpu(client):
    good = {"price_usd": 4000, "quoted_on": "2026-06-01", "vendor": "x"}
    for name in ("h100-sxm", "H100", "b200"):  # GPUs, which once matched a node by part of its name
        r = client.post("/api/quotes", json={"system": name, **good})
        assert r.status_code == 422 and loc(r) == ["body", "system"] and "hgx-h100" in r.json()["detail"][0]["allowed"]
    assert client.get("/api/quotes").json() == []


def test_a_report_for_a_name_outside_latin_1_downloads(client):
    r = client.post("/api/report", json={"scenario": {**SCENARIO, "name": "Qwen on H100 — 日本"}, "draws": 0})
    assert r.status_code == 200
    disposition = r.headers["content-disposition"]
    assert 'filename="Qwen-on-H100.html"' in disposition and "filename*=UTF-8''" in disposition


def test_eur_reaches_the_recommendation_the_charts_and_the_report(client):
    body = {"scenario": SCENARIO, "draws": 0, "currency": "eur"}
    view = client.post("/api/plan", json=body).json()
    rec = next(c for c in view["cards"] if c["key"] == "recommendation")
    assert "€" in rec["note"] and "$" not in rec["note"]
    assert "(EUR)" in view["charts"]["payback"]["title"] and "(EUR)" in view["charts"]["cost_per_user"]["title"]
    usd = client.post("/api/plan", json={**body, "currency": "usd"}).json()
    fx = usd["result"]["fx_usd_per_eur"]
    assert view["charts"]["payback"]["data"]["values"][0]["amount"] * fx == pytest.approx(
        usd["charts"]["payback"]["data"]["values"][0]["amount"])
    report = client.post("/api/report", json=body).text
    assert "All amounts EUR" in report and "All amounts USD" not in report


def test_compare_names_the_saved_scenario_that_no_longer_plans(client, tmp_path):
    good = client.post("/api/scenarios", json={"name": "good", "scenario": SCENARIO}).json()["id"]
    store = client.app.state.store
    broken = SCENARIO | {"cell": {"tensor_parallel_size": 3}}  # saved before saving required a plan
    bad = store.save_scenario("old", Scenario.model_validate(broken)).id
    r = client.get("/api/scenarios/compare", params={"a": good, "b": bad, "draws": 0})
    assert r.status_code == 422 and loc(r) == ["query", "b"] and f"saved scenario {bad}" in r.json()["detail"][0]["msg"]


def test_compare_renders_in_the_currency_asked(client):
    ids = [client.post("/api/scenarios", json={"name": n, "scenario": SCENARIO}).json()["id"] for n in ("x", "y")]
    r = client.get("/api/scenarios/compare", params={"a": ids[0], "b": ids[1], "draws": 0, "currency": "eur"}).json()
    capex = next(c["value"] for c in r["a"]["cards"] if c["key"] == "capex")
    assert capex.startswith("€")


def test_a_fits_cell_error_names_the_json_key(client):
    r = client.post("/api/fits", json={"models": ["llama-2-7b"], "gpus": ["h100"], "max_model_len": 8192}).json()
    cell = r["cells"][0]
    assert cell["error_field"] == "max_model_len" and cell["error"].startswith("max_model_len: ") and "--" not in cell["error"][:20]


def test_renaming_an_unknown_scenario_onto_a_taken_name_is_404(client):
    client.post("/api/scenarios", json={"name": "taken", "scenario": SCENARIO})
    r = client.patch("/api/scenarios/999", json={"name": "taken"})
    assert r.status_code == 404


def test_a_fits_cell_error_from_the_matrixs_own_layout_names_no_request_key(client):
    r = client.post("/api/fits", json={"models": ["qwen2.5-7b"], "systems": ["hgx-h100"]}).json()
    cell = r["cells"][0]  # TP8 across the node does not divide Qwen2.5-7B's 28 heads
    assert "28 attention heads" in cell["error"] and cell["error_field"] is None
    assert not cell["error"].startswith(("tensor_parallel_size", "--"))
