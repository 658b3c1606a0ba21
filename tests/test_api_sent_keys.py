"""A library error names the body's key as the body sent it: a deployment's accelerator sent as
``accelerator`` (the key ``/api/fit`` answers with) is refused at ``deployment.accelerator``, as pydantic's
own errors name it, and at ``deployment.gpu`` when sent as ``gpu``."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from inferplan.shells.api import create_app

LOAD = {"workload": {"input_len": 1000, "output_len": 200}, "request_rate_per_s": 1}


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    return TestClient(create_app(tmp_path_factory.mktemp("db") / "t.db"))


@pytest.mark.parametrize(("route", "extra", "prefix"), [
    ("/api/perf", {}, "deployment."), ("/api/simulate", LOAD, "deployment."), ("/api/deploy", {}, "deployment."),
    ("/api/fit", None, ""),
])
@pytest.mark.parametrize("key", ["accelerator", "gpu"])
def test_an_unknown_accelerator_is_refused_at_the_key_sent(client, route, extra, prefix, key):
    given = {"model": "qwen3-8b", "gpus": 1, key: "no-such-gpu"}
    body = given if extra is None else {"deployment": given, **extra}
    r = client.post(route, json=body)
    assert r.status_code == 422, r.text
    error = r.json()["error"]
    assert error["field"] == prefix + key and "no accelerator named" in error["message"]
    assert r.json()["detail"][0]["loc"] == ["body", *(prefix + key).split(".")]
