"""The OpenAPI schema lists every key a body object takes (``accelerator`` for ``gpu``), and a query parameter
a route does not take is refused naming it, as an unknown body key is (shells/api_query.py, api_keys.py)."""

import pytest
from fastapi.testclient import TestClient

from inferplan.shells.api import create_app


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    return TestClient(create_app(tmp_path_factory.mktemp("q") / "q.db"))


def test_the_deployment_schema_lists_accelerator_which_its_routes_take(client):
    schemas = client.get("/openapi.json").json()["components"]["schemas"]
    deployment = schemas["Deployment"]
    assert deployment["additionalProperties"] is False
    assert deployment["properties"]["accelerator"]["anyOf"] == deployment["properties"]["gpu"]["anyOf"]
    assert {"not": {"required": ["gpu", "accelerator"]}} in deployment["allOf"]
    assert "quote_usd_per_loadout" in schemas["Platform"]["properties"]
    assert "workload_preset" in schemas["SearchBody"]["properties"]
    r = client.post("/api/fit", json={"model": "qwen3-8b", "accelerator": "h100"})
    assert r.status_code == 200 and r.json()["accelerator"] == "h100-sxm", r.text


def test_an_unknown_query_parameter_is_refused_naming_it_and_what_the_route_takes(client):
    r = client.post("/api/fit?speculative_token=2", json={"model": "qwen3-8b", "gpu": "h100"})
    assert r.status_code == 422, r.text
    error = r.json()["error"]
    assert error["field"] == "speculative_token" and "speculative_tokens" in error["allowed"].split(", ")
    assert r.json()["detail"][0]["loc"] == ["query", "speculative_token"]
    r = client.get("/api/catalog/models?verbose=1")
    assert r.status_code == 422 and r.json()["error"]["allowed"] == "no query parameters"


def test_the_parameters_a_route_takes_and_the_pages_own_address_are_not_refused(client):
    assert client.post("/api/fit?speculative_tokens=0", json={"model": "qwen3-8b", "gpu": "h100"}).status_code == 200
    assert client.get("/api/catalog/stale?days=30").status_code == 200
    assert client.get('/?s={"model":"qwen3-32b"}&c=eur').status_code == 200  # the page reads its own query
    assert client.get("/static/app.js?v=1").status_code == 200
