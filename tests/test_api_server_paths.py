"""No API route reads a model or a trace from the server's disk: a path in a model field is a 422
at that field whether or not it exists (so a reply never tells what the disk holds), and a trace is
taken only as rows given inline."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient

import inferplan
from inferplan.shells.api import create_app

CONFIG = str(Path(inferplan.__file__).parent / "catalog" / "data" / "hf_configs" / "qwen3-8b.json")
PATHS = [CONFIG, "/etc/passwd", "/tmp", "/no/such/file", "~/config.json", "./x", "..\\x"]
DEPLOYMENT = {"model": "qwen3-8b", "gpu": "h100-sxm"}
SCENARIO = {"model": "qwen3-8b", "platform": {"gpu": "h100-sxm", "gpus": 1}}


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    return TestClient(create_app(tmp_path_factory.mktemp("db") / "t.db"))


def _with_model(route: str, path: str) -> tuple[dict, str]:
    """The body of ``route`` with ``path`` as its model, and the field the refusal must name."""
    deployment = {**DEPLOYMENT, "model": path}
    return {
        "/api/simulate": ({"deployment": deployment, "request_rate_per_s": 2}, "deployment.model"),
        "/api/deploy": ({"deployment": deployment}, "deployment.model"),
        "/api/perf": ({"deployment": deployment}, "deployment.model"),
        "/api/frontier": ({"deployment": deployment}, "deployment.model"),
        "/api/fit": (deployment, "model"),
        "/api/fits": ({"models": ["qwen3-8b", path], "gpus": ["h100-sxm"]}, "models.1"),
        "/api/search": ({"models": [path], "users": 10}, "models.0"),
        "/api/views/search": ({"models": [path], "users": 10}, "models.0"),
        "/api/plan": ({"scenario": {**SCENARIO, "model": path}}, "scenario.model"),
        "/api/report": ({"scenario": {**SCENARIO, "model": path}}, "scenario.model"),
        "/api/scenarios": ({"name": "x", "scenario": {**SCENARIO, "model": path}}, "scenario.model"),
    }[route]


ROUTES = ["/api/simulate", "/api/deploy", "/api/perf", "/api/frontier", "/api/fit", "/api/fits", "/api/search",
          "/api/views/search", "/api/plan", "/api/report", "/api/scenarios"]


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("path", PATHS)
def test_a_model_given_as_a_path_is_refused_alike_whether_it_exists_or_not(client, route, path):
    body, field = _with_model(route, path)
    r = client.post(route, json=body)
    assert r.status_code == 422, (route, path, r.text)
    error = r.json()["error"]
    assert error["field"] == field and "does not read files on the server's disk" in error["message"], r.text
    assert "passwd" not in error["message"] and "not valid JSON" not in r.text and "no config.json" not in r.text


def test_simulate_with_a_catalogue_model_still_runs(client):
    r = client.post("/api/simulate", json={"deployment": DEPLOYMENT, "request_rate_per_s": 2, "requests": 200})
    assert r.status_code == 200, r.text


@pytest.mark.parametrize("route", ["/api/search", "/api/views/search", "/api/simulate"])
def test_a_trace_is_never_a_path_on_the_servers_disk(client, route):
    body = ({"deployment": DEPLOYMENT, "trace": "/etc/passwd"} if route == "/api/simulate"
            else {"models": ["qwen3-8b"], "trace": "/etc/passwd"})
    r = client.post(route, json=body)
    assert r.status_code == 422 and r.json()["error"]["field"] == "trace", r.text
    assert "root:" not in r.text and "not valid" not in r.json()["error"]["message"]


@pytest.mark.parametrize("route", ["/api/fit", "/api/simulate", "/api/search"])
def test_a_relative_name_that_exists_is_answered_as_one_that_does_not(client, tmp_path, monkeypatch, route):
    """A relative folder beside the server (``org/name``, as a repo id is spelled) got 'the API does
    not read files' while a missing one got 'no model named': the difference told what exists."""
    (tmp_path / "acme" / "secret").mkdir(parents=True)
    monkeypatch.chdir(tmp_path)
    replies = []
    for name in ("acme/secret", "acme/missing"):
        body, field = _with_model(route, name)
        reply = client.post(route, json=body)
        assert reply.status_code == 422, reply.text
        error = reply.json()["error"]
        replies.append((error["field"], error["message"].replace(name, "NAME")))
    assert replies[0] == replies[1] and "read files" not in replies[0][1]


@pytest.mark.parametrize("method, suffix", [("get", ""), ("get", "/export"), ("delete", "")])
def test_a_measurement_id_past_sqlites_integers_is_refused_naming_it(client, method, suffix):
    """GET /api/measurements/3554140163806375968768 was a 500 (OverflowError from SQLite)."""
    reply = getattr(client, method)(f"/api/measurements/3554140163806375968768{suffix}")
    assert reply.status_code == 422, reply.text
    assert reply.json()["error"]["field"] == "measurement_id"
