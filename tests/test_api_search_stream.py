"""POST /api/search and /api/views/search asked for NDJSON (``Accept: application/x-ndjson``): progress
lines while the search runs, then exactly the plain reply's answer or error body (shells/api_stream.py)."""

import asyncio
import json
import threading

import pytest
from fastapi.testclient import TestClient
from starlette.requests import Request

from inferplan.errors import InvalidScenarioError, OutOfTimeError
from inferplan.search import run
from inferplan.search.budget import CHECK_STAGE, MODEL_STAGE, Budget
from inferplan.shells.api import create_app
from inferplan.shells.api_stream import NDJSON, progress_stream, wants_stream

STREAM = {"Accept": NDJSON}
BODY = {"models": ["qwen3-8b"], "systems": ["hgx-h100"], "engines": ["vllm"], "request_rate_per_s": 4,
        "input_len": 1500, "output_len": 300, "targets": {"ttft_p95_s": 1.5, "tpot_p95_s": 0.04}, "top": 3}


@pytest.fixture()
def client(tmp_path):
    return TestClient(create_app(tmp_path / "t.db"))


def lines_of(reply) -> list[dict]:
    assert reply.headers["content-type"] == NDJSON
    assert reply.text.endswith("\n")
    return [json.loads(line) for line in reply.text.splitlines()]


def without_elapsed(answer: dict) -> dict:
    return {k: v for k, v in answer.items() if k != "elapsed_s"}


def test_a_streamed_search_sends_its_progress_then_exactly_the_plain_answer(client, monkeypatch):
    calls = []  # every figure the library's callback gave
    searched = run.search

    def recorded(request, catalog, *, budget, progress):  # progress: None for the plain request
        def told(*figures):
            calls.append(figures)
            if progress:
                progress(*figures)

        return searched(request, catalog, budget=budget, progress=told)

    monkeypatch.setattr(run, "search", recorded)
    reply = client.post("/api/search", json=BODY, headers=STREAM)
    assert reply.status_code == 200
    *progress, answer = lines_of(reply)
    figures = [tuple(line["progress"][k] for k in ("done", "total", "stage")) for line in progress]
    assert progress and all(list(line) == ["progress"] for line in progress)
    assert figures == [c for c in calls if c in figures]  # the callback's figures, in their order
    assert figures[-1] == calls[-1]  # the last figures before the answer
    assert {stage for _, _, stage in figures} <= {MODEL_STAGE, CHECK_STAGE}
    assert all(0 <= done <= total for done, total, _ in figures)
    plain = client.post("/api/search", json=BODY)
    assert plain.status_code == 200 and plain.headers["content-type"] == "application/json"
    assert "progress" not in plain.json() and without_elapsed(answer) == without_elapsed(plain.json())


def test_the_page_s_view_streams_its_worded_answer(client):
    reply = client.post("/api/views/search", json=BODY, headers=STREAM)
    *progress, view = lines_of(reply)
    assert progress and all(list(line) == ["progress"] for line in progress)
    plain = client.post("/api/views/search", json=BODY).json()
    assert view["rows"] and without_elapsed(view["result"]) == without_elapsed(plain["result"])
    def worded(v):  # the summary says how long the search took
        return {k: x for k, x in v.items() if k not in ("result", "summary")}

    assert worded(view) == worded(plain)
    assert progress[-1]["progress"]["total"] in (view["result"]["cells"], BODY["top"])


@pytest.mark.parametrize("error, status", [
    (OutOfTimeError("the search ran past its time limit of 120 s (modelling the cells, 1 of 4)",
                    allowed="a search that finishes within 120 s: name fewer models"), 503),
    (InvalidScenarioError("users: more than the catalogue can carry", field="users", allowed="at most 10"), 422),
])
def test_an_error_after_the_stream_began_is_its_last_line_as_the_plain_reply_s_body(client, monkeypatch, error, status):
    def failing(request, catalog, *, budget, progress):
        if progress:  # None for the plain request
            progress(1, 4, MODEL_STAGE)
        raise error

    monkeypatch.setattr(run, "search", failing)
    reply = client.post("/api/search", json=BODY, headers=STREAM)
    assert reply.status_code == 200
    lines = lines_of(reply)
    assert lines[0] == {"progress": {"done": 1, "total": 4, "stage": MODEL_STAGE}}
    plain = client.post("/api/search", json=BODY)
    assert plain.status_code == status
    assert lines[-1] == plain.json() and lines[-1]["detail"][0]["type"] == type(error).__name__


def test_an_error_the_stream_meets_unforeseen_ends_it_as_a_500_body(client, monkeypatch):
    def broken(request, catalog, *, budget, progress):
        if progress:
            progress(0, 4, MODEL_STAGE)
        raise RuntimeError("a defect")

    monkeypatch.setattr(run, "search", broken)
    last = lines_of(client.post("/api/search", json=BODY, headers=STREAM))[-1]
    assert set(last) == {"error", "detail"} and last["detail"][0]["type"] == "http_500"
    assert "a defect" not in json.dumps(last)  # the server's log has it, the client is not shown its internals


@pytest.mark.parametrize("route", ["/api/search", "/api/views/search"])
def test_an_error_before_any_progress_keeps_its_status(client, route):
    """A name the catalogue lacks, or a path on the server's disk: refused before the search models a cell,
    so the reply is the plain one, status and all."""
    for bad in ({"systems": ["no-such-system"]}, {"models": ["/etc/passwd"]}):
        streamed = client.post(route, json={**BODY, **bad}, headers=STREAM)
        plain = client.post(route, json={**BODY, **bad})
        assert streamed.status_code == plain.status_code == 422
        assert streamed.headers["content-type"] == "application/json" and streamed.json() == plain.json()


def test_the_client_going_stops_the_search():
    """The stream cancelled (the client went): the search's budget is cancelled and the worker stops."""
    started, ended = threading.Event(), threading.Event()

    def work(budget, progress):
        started.set()
        progress(0, 2, MODEL_STAGE)
        try:
            while not budget.stopped.wait(0.01):
                pass
            budget.check()
        finally:
            ended.set()

    async def receive():
        await asyncio.Event().wait()  # the client says nothing more

    async def go():
        budget = Budget()
        http = Request({"type": "http", "method": "POST", "path": "/api/search", "headers": []}, receive)
        reply = await progress_stream(http, work, budget)
        lines = reply.body_iterator
        first = await lines.__anext__()
        assert json.loads(first) == {"progress": {"done": 0, "total": 2, "stage": MODEL_STAGE}}
        assert started.is_set() and not budget.stopped.is_set()
        await lines.aclose()
        return budget

    budget = asyncio.run(go())
    assert budget.stopped.is_set()
    assert ended.wait(30)


@pytest.mark.parametrize("accept, streams", [
    (NDJSON, True), ("application/json", False), ("", False), (f"{NDJSON};q=0", False),
    (f"application/json, {NDJSON}; q=0.5", True), ("APPLICATION/X-NDJSON", True), (f"{NDJSON};q=x", False),
])
def test_the_accept_header_asks_for_the_stream(accept, streams):
    http = Request({"type": "http", "headers": [(b"accept", accept.encode())]})
    assert wants_stream(http) is streams


def test_the_openapi_schema_documents_the_stream(client):
    schema = client.get("/openapi.json").json()
    for route, answer in (("/api/search", "SearchResult"), ("/api/views/search", "SearchView")):
        content = schema["paths"][route]["post"]["responses"]["200"]["content"]
        assert content["application/json"]["schema"] == {"$ref": f"#/components/schemas/{answer}"}
        line = content[NDJSON]["itemSchema"]["oneOf"]
        assert line[0]["required"] == ["progress"]
        assert set(line[0]["properties"]["progress"]["required"]) == {"done", "total", "stage"}
        refs = [x["$ref"].rsplit("/", 1)[1] for x in line[1:]]
        assert refs == [answer, "Error"] and all(r in schema["components"]["schemas"] for r in refs)


def test_a_client_that_leaves_a_served_stream_stops_its_search(tmp_path, monkeypatch):
    """On a real server: the client reads a progress line and closes the connection; the search's budget
    is cancelled and its worker thread stops."""
    import httpx

    import live_server

    ended = threading.Event()

    def endless(request, catalog, *, budget, progress):
        try:
            for done in range(10**9):
                if progress:
                    progress(done, 10**9, MODEL_STAGE)
                if budget.stopped.wait(0.01):
                    budget.check()
        finally:
            ended.set()

    monkeypatch.setattr(run, "search", endless)
    with live_server.serving(lambda port: create_app(tmp_path / "t.db")) as base:
        with httpx.stream("POST", base + "/api/search", json=BODY, headers=STREAM, timeout=30) as reply:
            first = next(reply.iter_lines())
            assert json.loads(first)["progress"]["stage"] == MODEL_STAGE
        assert ended.wait(30)  # stopped by the client's going, not by the search's 120 s limit
