"""A yes/no field in a request body takes JSON true or false only (inputs.Input): pydantic's lax
mode read "yes", "off", 1 and 0.0 as booleans, so a typo or a quoted "false" planned something
other than what was meant, while number fields already refused quoted numbers."""

import pytest
import yaml
from fastapi.testclient import TestClient

from inferplan.economics.scenario import Scenario
from inferplan.inputs import BOOL_ALLOWED
from inferplan.inputs.deployment import Deployment
from inferplan.shells.api import create_app

NOT_BOOLEANS = ["yes", "off", "true", 1, 0, 0.0, "", [True]]


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    return TestClient(create_app(tmp_path_factory.mktemp("bools") / "b.db"), raise_server_exceptions=False)


def _boolean_paths(schema: dict, schemas: dict, path: tuple = (), seen: frozenset = frozenset()):
    """Every JSON path of a request body whose value is a boolean, read from the OpenAPI schema."""
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        if name not in seen:
            yield from _boolean_paths(schemas[name], schemas, path, seen | {name})
        return
    if schema.get("type") == "boolean":
        yield path
    for key in ("anyOf", "oneOf", "allOf"):
        for option in schema.get(key, []):
            yield from _boolean_paths(option, schemas, path, seen)
    for key, sub in schema.get("properties", {}).items():
        yield from _boolean_paths(sub, schemas, (*path, key), seen)


def _bodies_with_booleans():
    spec = create_app(None).openapi()
    schemas = spec["components"]["schemas"]
    for route, operations in spec["paths"].items():
        for method, op in operations.items():
            body = op.get("requestBody", {}).get("content", {}).get("application/json")
            if body:
                for path in sorted(set(_boolean_paths(body["schema"], schemas))):
                    yield method.upper(), route, path


BOOLEAN_KEYS = list(_bodies_with_booleans())


def test_the_request_bodies_hold_the_booleans_this_file_checks():
    keys = {(route, ".".join(path)) for _, route, path in BOOLEAN_KEYS}
    assert {("/api/fit", "enable_expert_parallel"), ("/api/search", "speculative"),
            ("/api/views/search", "speculative"), ("/api/scenarios", "replace"),
            ("/api/plan", "scenario.cell.enable_expert_parallel"), ("/api/perf", "deployment.mtp_draft"),
            ("/api/deploy", "deployment.flash_attention")} <= keys


def _nest(path: tuple, value) -> dict:
    body = value
    for key in reversed(path):
        body = {key: body}
    return body


@pytest.mark.parametrize(("method", "route", "path"), BOOLEAN_KEYS, ids=lambda x: ".".join(x) if isinstance(x, tuple) else x)
def test_every_request_boolean_refuses_yes_naming_its_json_path(client, method, route, path):
    r = client.request(method, route, json=_nest(path, "yes"))
    assert r.status_code == 422, r.text[:300]
    item = next((d for d in r.json()["detail"] if d["loc"] == ["body", *path]), None)
    assert item is not None, r.json()["detail"]
    assert (item["type"], item["allowed"], item["input"]) == ("bool_type", BOOL_ALLOWED, "yes")


@pytest.mark.parametrize("value", NOT_BOOLEANS)
def test_enable_expert_parallel_takes_only_true_or_false(client, value):
    r = client.post("/api/fit", json={"model": "qwen3-8b", "gpu": "h100-sxm", "enable_expert_parallel": value})
    assert r.status_code == 422
    assert r.json()["error"] == {"field": "enable_expert_parallel", "allowed": "true, false",
                                 "message": f"{value!r} is not a yes/no value: write true or false (no quotes)"}


def test_true_false_and_null_still_read(client):
    assert Deployment(model="m", gpu="g", enable_expert_parallel=False, flash_attention=None).flash_attention is None
    assert Deployment.model_validate_json('{"model": "m", "gpu": "g", "mtp_draft": true}').mtp_draft is True
    r = client.post("/api/fit", json={"model": "qwen3-8b", "gpu": "h100-sxm", "enable_expert_parallel": False,
                                      "flash_attention": None})
    assert r.status_code == 200, r.text[:300]


def test_a_scenario_file_takes_yaml_booleans_but_not_quoted_ones():
    base = "model: qwen3-8b\nplatform: {gpu: h100-sxm, gpus: 1}\nworkload: {preset: chat-seat}\ntarget_users: 10\ncell: {tensor_parallel_size: 1, "
    assert Scenario.model_validate(yaml.safe_load(base + "enable_expert_parallel: no}")).cell.enable_expert_parallel is False
    with pytest.raises(ValueError, match="'no' is not a yes/no value"):
        Scenario.model_validate(yaml.safe_load(base + "enable_expert_parallel: 'no'}"))
