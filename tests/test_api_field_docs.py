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


def test_every_route_on_the_docs_page_says_what_it_answers(schema, tmp_path):
    """A route without a summary is listed at /docs under FastAPI's title-cased function name ("Fit Route")."""
    app = create_app(tmp_path / "t.db")
    generated = {r.name.replace("_", " ").title() for r in app.routes if hasattr(r, "methods")}
    bare = [f"{method.upper()} {path}: {op.get('summary')}" for path, ops in schema["paths"].items()
            for method, op in ops.items() if op.get("summary") in generated or not op.get("summary")]
    assert bare == []


def test_the_docs_page_opens_on_fit_speed_and_users_and_describes_every_section(schema):
    tags = [t["name"] for t in schema["tags"]]
    assert tags[:3] == ["memory", "speed", "economics"]  # sections follow this order, not the routes' registration
    used = {t for ops in schema["paths"].values() for op in ops.values() for t in op.get("tags", [])}
    assert used <= set(tags) and all(t["description"] for t in schema["tags"])


def test_the_compare_route_says_only_what_its_answer_holds(schema):
    """The comparison answers the two plans, a and b, and nothing computed between them."""
    get = schema["paths"]["/api/scenarios/compare"]["get"]
    answer = get["responses"]["200"]["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[-1]
    assert set(schema["components"]["schemas"][answer]["properties"]) == {"a", "b"}
    assert get["summary"] == "Two saved scenarios planned side by side"
