"""Long requests (searches, simulations, the what-runs view, validation, the HTML report, separate pools'
launch scripts) run in a few
threads of their own, wait their turn, are refused with a 503 when too many wait, and stop before
starting when their client has gone (shells/api_work.py)."""

import asyncio
import threading

import anyio
import pytest
from fastapi.testclient import TestClient
from starlette.concurrency import run_in_threadpool

from inferplan.errors import OutOfTimeError
from inferplan.shells import api_stream, api_work
from inferplan.shells.api import create_app

SCENARIO = {"name": "long", "model": "llama-3.1-8b", "platform": {"system": "hgx-h100"},
            "workload": {"preset": "coding-developer-median"}, "target_users": 200}
SEARCH = {"models": ["qwen3-8b"], "request_rate_per_s": 1, "input_len": 1000, "output_len": 200,
          "systems": ["hgx-h100"], "engines": ["vllm"]}
LONG_ROUTES = [
    ("post", "/api/simulate", {"deployment": {"model": "qwen3-8b", "gpu": "h100"}, "request_rate_per_s": 1}),
    ("post", "/api/search", SEARCH),
    ("post", "/api/views/search", SEARCH),
    ("post", "/api/views/homelab", {"gpu": "rtx-4090"}),
    ("post", "/api/report", {"scenario": SCENARIO, "draws": 0}),
    ("get", "/api/validate?kind=memory", None),
    ("post", "/api/deploy", {"deployment": {"model": "qwen3-8b", "gpu": "h100"}, "prefill_instances": 1}),
    ("post", "/api/fits", {"models": ["qwen3-8b"]}),
    ("get", "/api/measurements/view", None),
]


class _Client:
    def __init__(self, gone: bool) -> None:
        self.gone = gone

    async def is_disconnected(self) -> bool:
        return self.gone


def _holding(release: threading.Event, answer: str):
    """Work that runs until ``release`` is set, then answers ``answer``."""
    def work(budget) -> str:
        release.wait(60)
        return answer
    return work


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    return TestClient(create_app(tmp_path_factory.mktemp("long") / "l.db"))


@pytest.mark.parametrize("method, route, body", LONG_ROUTES)
def test_a_long_route_is_a_503_while_too_many_wait(client, monkeypatch, method, route, body):
    monkeypatch.setattr(api_work, "LONG_WAITING", 0)  # every long request finds the queue full
    r = client.request(method, route, json=body)
    assert r.status_code == 503, r.text
    error = r.json()["error"]
    assert "busy" in error["message"] and "again" in error["allowed"], error
    assert r.headers["retry-after"] == str(api_work.RETRY_AFTER_S)
    assert client.get("/api/catalog").status_code == 200  # the other routes answer meanwhile
    path, verb = route.split("?")[0], method
    declared = client.get("/openapi.json").json()["paths"][path][verb]["responses"]["503"]
    assert declared["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/Error"}


@pytest.mark.parametrize("route", ["/api/search", "/api/views/search"])
def test_a_search_asked_as_a_stream_is_the_same_503_before_any_line(client, monkeypatch, route):
    monkeypatch.setattr(api_work, "LONG_WAITING", 0)
    r = client.post(route, json=SEARCH, headers={"accept": "application/x-ndjson"})
    assert (r.status_code, r.headers["content-type"]) == (503, "application/json"), r.text
    assert "busy" in r.json()["error"]["message"] and r.headers["retry-after"] == str(api_work.RETRY_AFTER_S)


def test_one_instance_s_launch_command_is_not_a_long_request(client, monkeypatch):
    monkeypatch.setattr(api_work, "LONG_WAITING", 0)
    r = client.post("/api/deploy", json={"deployment": {"model": "qwen3-8b", "gpu": "h100"}})
    assert r.status_code == 200 and r.json()["command"]["argv"][:2] == ["vllm", "serve"], r.text


def test_long_work_holds_none_of_the_threads_other_routes_use():
    """With the default threadpool down to one thread, a long request that runs on does not keep a
    plain route from answering."""
    release = threading.Event()

    def long(budget) -> str:
        release.wait(60)
        return "long"

    async def go() -> tuple[str, str]:
        anyio.to_thread.current_default_thread_limiter().total_tokens = 1
        running = asyncio.ensure_future(api_work.until_disconnected(_Client(gone=False), long))
        await asyncio.sleep(0.05)
        light = await asyncio.wait_for(run_in_threadpool(lambda: "light"), 30)  # no thread left for it: a timeout
        release.set()
        return light, await running

    assert asyncio.run(go()) == ("light", "long")


def test_work_whose_client_went_while_it_waited_never_starts(monkeypatch):
    monkeypatch.setattr(api_work, "LONG_AT_ONCE", 1)
    monkeypatch.setattr(api_work, "DISCONNECT_POLL_S", 0.01)
    release, started = threading.Event(), []

    def first(budget) -> str:
        release.wait(60)
        return "first"

    def second(budget) -> str:
        started.append(True)
        return "second"

    async def go():
        running = asyncio.ensure_future(api_work.until_disconnected(_Client(gone=False), first))
        await asyncio.sleep(0.05)
        waiting = asyncio.ensure_future(api_work.until_disconnected(_Client(gone=True), second))
        await asyncio.sleep(0.1)  # its client is seen gone while it waits for the turn
        release.set()
        assert await running == "first"
        with pytest.raises(OutOfTimeError, match="gone"):
            await waiting

    asyncio.run(go())
    assert not started


def test_a_client_that_went_while_it_waited_leaves_the_queue_at_once(monkeypatch):
    """Abandoned requests hold no place: with both turns busy, 32 waiters whose clients gave up are out of
    the queue at the next poll, and a new request is queued, not refused with a 503."""
    monkeypatch.setattr(api_work, "DISCONNECT_POLL_S", 0.01)
    release = threading.Event()
    busy = _holding(release, "done")

    async def go():
        running = [asyncio.ensure_future(api_work.until_disconnected(_Client(gone=False), busy))
                   for _ in range(api_work.LONG_AT_ONCE)]
        await asyncio.sleep(0.05)
        gone = [asyncio.ensure_future(api_work.until_disconnected(_Client(gone=True), busy))
                for _ in range(api_work.LONG_WAITING)]
        await asyncio.sleep(0.2)
        assert api_work.long_work().waiting == 0
        for g in gone:
            with pytest.raises(OutOfTimeError, match="gone"):
                await g
        later = asyncio.ensure_future(api_work.until_disconnected(_Client(gone=False), lambda b: "later"))
        await asyncio.sleep(0.05)
        assert api_work.long_work().waiting == 1
        release.set()
        assert [await r for r in running] == ["done"] * api_work.LONG_AT_ONCE
        assert await later == "later"

    asyncio.run(go())


SEARCH_ROUTES = {"/api/search", "/api/views/search"}


@pytest.mark.parametrize("method, route, body", LONG_ROUTES)
def test_searches_queue_in_a_lane_of_their_own(client, monkeypatch, method, route, body):
    """Searches (bounded only by their deadline) wait in the searches' lane; every other long request (bounded by
    its inputs to seconds) in the other lane."""
    lanes = []

    async def refuse(work, budget, on_turn=lambda: None, lane=api_work.BOUNDED):
        lanes.append(lane)
        raise api_work.ServerBusy(0, lane)

    monkeypatch.setattr(api_work, "in_long_thread", refuse)
    monkeypatch.setattr(api_stream, "in_long_thread", refuse)
    expected = api_work.SEARCHES if route in SEARCH_ROUTES else api_work.BOUNDED
    streamed = [{"accept": "application/x-ndjson"}] if route in SEARCH_ROUTES else []
    for headers in [{}, *streamed]:
        r = client.request(method, route, json=body, headers=headers)
        assert r.status_code == 503, r.text
        assert expected.running in r.json()["error"]["message"]
    assert lanes == [expected] * (1 + len(streamed))


def test_a_quick_request_is_served_while_the_search_lane_is_full(monkeypatch):
    """Searches running on every turn of their lane and as many waiting as may: another search is a 503 at once,
    the what-runs view or a fits matrix still gets a turn and its answer."""
    monkeypatch.setattr(api_work, "DISCONNECT_POLL_S", 0.01)
    release = threading.Event()
    search = _holding(release, "search")

    async def go():
        searches = []
        for count in (api_work.LONG_AT_ONCE, api_work.LONG_WAITING):  # running, then waiting
            searches += [asyncio.ensure_future(api_work.until_disconnected(_Client(gone=False), search,
                                                                            lane=api_work.SEARCHES))
                         for _ in range(count)]
            await asyncio.sleep(0.1)
        assert api_work.long_work(api_work.SEARCHES).waiting == api_work.LONG_WAITING
        with pytest.raises(api_work.ServerBusy):
            await api_work.until_disconnected(_Client(gone=False), search, lane=api_work.SEARCHES)
        quick = await asyncio.wait_for(api_work.until_disconnected(_Client(gone=False), lambda b: "fits"), 30)
        release.set()
        assert {await s for s in searches} == {"search"}
        return quick

    assert asyncio.run(go()) == "fits"
