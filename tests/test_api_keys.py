"""One key for one thing across routes (shells/api_keys.py): /api/search takes workload_preset as
/api/simulate names it, /api/simulate takes a preset id in workload as /api/search names it, every
deployment takes accelerator (what /api/fit answers with) for gpu; an unknown key's 422 lists the keys
the object at its place takes."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from inferplan.shells.api import create_app


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    return TestClient(create_app(tmp_path_factory.mktemp("keys") / "t.db"))


SEARCH = {"models": ["qwen3-8b"], "systems": ["hgx-h100"], "engines": ["vllm"], "users": 20}


def test_search_takes_workload_preset_as_simulate_names_it(client):
    narrow = {**SEARCH, "quantizations": ["fp8"], "speculative": False, "top": 1}  # the load is the point, not the picks
    by_search = client.post("/api/search", json={**narrow, "workload": "chat-seat"})
    by_simulate = client.post("/api/search", json={**narrow, "workload_preset": "chat-seat"})
    assert by_search.status_code == by_simulate.status_code == 200, by_simulate.text
    assert by_simulate.json()["load"] == by_search.json()["load"]


def test_simulate_takes_a_preset_id_in_workload_as_search_names_it(client):
    body = {"deployment": {"model": "qwen3-8b", "gpu": "h100"}, "users": 5, "requests": 200, "seed": 0}
    by_search = client.post("/api/simulate", json={**body, "workload": "agent-worker"})
    by_simulate = client.post("/api/simulate", json={**body, "workload_preset": "agent-worker"})
    assert by_search.status_code == by_simulate.status_code == 200, by_search.text
    assert by_search.json()["load"] == by_simulate.json()["load"]


def test_the_schema_of_simulate_s_workload_takes_the_preset_id_the_route_takes(client):
    schemas = client.get("/openapi.json").json()["components"]["schemas"]
    field = schemas["SimulateRequest"]["properties"]["workload"]
    assert {"$ref": "#/components/schemas/Workload"} in field["anyOf"]
    assert any(option.get("type") == "string" for option in field["anyOf"])


def test_a_deployment_takes_accelerator_as_fit_answers_with_it(client):
    answer = client.post("/api/fit", json={"model": "qwen3-8b", "gpu": "h100"}).json()
    again = client.post("/api/fit", json={"model": "qwen3-8b", "accelerator": answer["accelerator"]})
    assert again.status_code == 200 and again.json()["accelerator"] == answer["accelerator"]


@pytest.mark.parametrize("route, body, field, keys", [
    ("/api/fit", {"model": "qwen3-8b", "gpu": "h100", "nope": 1}, "nope", {"gpu", "accelerator", "max_num_seqs"}),
    ("/api/simulate", {"deployment": {"model": "qwen3-8b", "gpu": "h100", "x": 1}, "users": 5}, "deployment.x",
     {"gpu", "model"}),
    ("/api/search", {**SEARCH, "workload": "chat-seat", "preset": "x"}, "preset", {"workload", "workload_preset"}),
])
def test_an_unknown_key_is_answered_with_the_keys_taken_there(client, route, body, field, keys):
    r = client.post(route, json=body)
    assert r.status_code == 422
    error = r.json()["error"]
    assert error["field"] == field and error["message"] == "Extra inputs are not permitted"
    assert keys <= set(error["allowed"].split(", "))
