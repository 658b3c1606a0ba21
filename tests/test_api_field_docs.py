"""The OpenAPI document (``/openapi.json``, shown at ``/docs``) describes every field of the search,
simulate and deploy bodies, the objects nested in them included."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from inferplan.shells.api import create_app

ROUTES = ("/api/search", "/api/views/search", "/api/simulate", "/api/deploy")


@pytest.fixture(scope="module")
def schema(tmp_path_factory):
    return TestClient(create_app(tmp_path_factory.mktemp("db") / "t.db")).get("/openapi.json").json()


def _refs(node) -> set[str]:
    if isinstance(node, dict):
        found = {node["$ref"].rsplit("/", 1)[-1]} if "$ref" in node else set()
        return found.union(*(_refs(v) for v in node.values()))
    if isinstance(node, list):
        return set().union(*(_refs(v) for v in node))
    return set()


def _bodies(schema) -> set[str]:
    """The schemas a body of ``ROUTES`` may hold, followed through every reference."""
    todo = set().union(*(_refs(schema["paths"][r]["post"]["requestBody"]) for r in ROUTES))
    seen: set[str] = set()
    while todo:
        name = todo.pop()
        seen.add(name)
        todo |= _refs(schema["components"]["schemas"][name]) - seen
    return seen


def test_every_body_field_is_described(schema):
    names = _bodies(schema)
    assert {"SearchBody", "Targets", "SimulateRequest", "DeployRequest", "Deployment"} <= names
    bare = sorted(f"{name}.{key}" for name in names
                  for key, prop in schema["components"]["schemas"][name].get("properties", {}).items()
                  if not prop.get("description"))
    assert not bare, bare


def test_the_search_simulate_and_deploy_routes_say_what_they_answer(schema):
    for route in ROUTES:
        post = schema["paths"][route]["post"]
        assert not post["summary"].endswith(" Route") and post.get("description"), (route, post["summary"])
