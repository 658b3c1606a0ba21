"""A measurements upload (up to 16 MiB) is read and validated in the route threadpool, not in the event
loop every other request waits on (shells/api_measurements.py, shells/api_body.py); it answers and refuses
as before, a refused file at ``files.N.content``."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from inferplan.shells import api_measurements
from inferplan.shells.api import create_app
from inferplan.shells.api_body import JsonBody
from inferplan.shells.api_guard import MAX_BODY_BYTES

DATA = Path(__file__).parent / "data" / "measurements"
PROVENANCE = {"model": "llama-3.1-8b", "gpu": "h100", "engine": "vllm"}


def _in_event_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


@pytest.fixture()
def client(tmp_path):
    return TestClient(create_app(tmp_path / "upload.db"))


def _big_upload() -> dict:
    """A result file padded past the ordinary body limit, as a run that keeps its generated texts is."""
    run = json.loads((DATA / "vllm_bench_serve_c8.json").read_text())
    run["generated_texts"] = ["some generated words " * 20] * (2 * MAX_BODY_BYTES // 400)
    return {"files": [{"name": "big.json", "content": json.dumps(run)}], "provenance": PROVENANCE}


def test_a_large_upload_is_read_and_validated_outside_the_event_loop(client, monkeypatch):
    seen: dict[str, bool] = {}
    validate, refusal = api_measurements.MeasurementImport.model_validate, JsonBody._refusal

    def validated(data, *args, **kwargs):
        seen["validated in the loop"] = _in_event_loop()
        return validate(data, *args, **kwargs)

    def checked(scope, body):
        seen["read in the loop"] = _in_event_loop()
        return refusal(scope, body)

    monkeypatch.setattr(api_measurements.MeasurementImport, "model_validate", validated)
    monkeypatch.setattr(JsonBody, "_refusal", staticmethod(checked))
    body = _big_upload()
    assert len(json.dumps(body)) > MAX_BODY_BYTES
    r = client.post("/api/measurements", json=body)
    assert r.status_code == 201, r.text
    assert r.json()[0]["model"] == "llama-3.1-8b"
    assert seen == {"validated in the loop": False, "read in the loop": False}


def test_a_refused_file_is_still_named_at_its_content(client):
    body = {"files": [{"name": "good.json", "content": (DATA / "vllm_bench_serve_c8.json").read_text()},
                      {"name": "bad.jsonl", "content": '{"a": 1}'}], "provenance": PROVENANCE}
    r = client.post("/api/measurements", json=body)
    assert r.status_code == 422 and r.json()["error"]["field"] == "files.1.content", r.text
    assert r.json()["error"]["message"].startswith("bad.jsonl: line 1: ")
    assert client.get("/api/measurements").json() == []


def test_a_body_the_model_refuses_is_a_422_at_its_place_with_what_is_allowed(client):
    r = client.post("/api/measurements", json={"files": [{"name": "x.json", "content": 3}], "provenance": PROVENANCE})
    assert r.status_code == 422, r.text
    assert r.json()["detail"][0]["loc"] == ["body", "files", 0, "content"]
    r = client.post("/api/measurements", json={"files": [], "provenance": PROVENANCE})
    assert r.status_code == 422 and r.json()["detail"][0]["loc"] == ["body", "files"], r.text
    r = client.post("/api/measurements", json={"files": [{"name": "x.json", "content": "{}", "colour": 1}]})
    assert r.status_code == 422 and r.json()["detail"][0]["loc"] == ["body", "files", 0, "colour"], r.text
    assert "name" in r.json()["detail"][0]["allowed"]  # the keys a file takes, as for any other body


def test_a_body_that_is_not_json_or_is_missing_is_refused_as_elsewhere(client):
    r = client.post("/api/measurements", content=b'{"files": [', headers={"content-type": "application/json"})
    assert r.status_code == 400 and "not JSON" in r.json()["error"]["message"], r.text
    r = client.post("/api/measurements")
    assert r.status_code == 422 and r.json()["detail"][0]["loc"] == ["body"], r.text
