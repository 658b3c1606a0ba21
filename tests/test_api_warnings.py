"""The server prints nothing but its own lines: a request body's model builds its validator inside
FastAPI's set-up, where FastAPI quiets pydantic's note about the body parameter's alias, not on the
first request, where the note would reach the terminal of `inferplan serve`."""

import warnings

from fastapi.testclient import TestClient

from inferplan.shells.api import create_app


def test_the_first_requests_raise_no_warning(tmp_path):
    client = TestClient(create_app(tmp_path / "t.db"))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert client.post("/api/fit", json={"model": "llama-3.1-8b", "gpu": "h100"}).status_code == 200
        assert client.post("/api/fits", json={"models": ["llama-3.1-8b"], "gpus": ["h100"]}).status_code == 200
    assert [str(w.message)[:120] for w in caught if "pydantic" in (w.filename or "")] == []
