"""A long request's wait for a turn is not its search's time: a queued search is not refused as too slow,
a request that waits too long for a turn is told it waited (nothing of it ran), and every 503 says when to
ask again (shells/api_work.py, search/budget.py)."""

import asyncio
import threading

import pytest
from fastapi.testclient import TestClient

from inferplan.search import budget as budget_module
from inferplan.search.budget import Budget
from inferplan.shells import api_work
from inferplan.shells.api import create_app


class _Client:
    async def is_disconnected(self) -> bool:
        return False


def _holding(release: threading.Event):
    def hold(budget) -> str:
        release.wait(60)
        return "first"
    return hold


def test_a_search_that_waited_for_its_turn_has_its_whole_time_limit_once_it_runs(monkeypatch):
    monkeypatch.setattr(api_work, "LONG_AT_ONCE", 1)
    release = threading.Event()

    def search(budget: Budget) -> str:
        budget.check()  # a search's first check, at its first cell: past the deadline it is refused
        return "searched"

    async def go():
        first = asyncio.ensure_future(api_work.until_disconnected(_Client(), _holding(release)))
        await asyncio.sleep(0.05)
        second = asyncio.ensure_future(api_work.until_disconnected(_Client(), search, Budget(deadline_s=0.2)))
        await asyncio.sleep(0.4)  # it waits twice its time limit for the turn
        release.set()
        return await first, await second

    assert asyncio.run(go()) == ("first", "searched")


def test_a_request_that_waits_too_long_for_a_turn_is_told_it_waited_and_nothing_ran(monkeypatch):
    monkeypatch.setattr(api_work, "LONG_AT_ONCE", 1)
    monkeypatch.setattr(api_work, "TURN_WAIT_S", 0.2)
    release, started = threading.Event(), []

    async def go():
        first = asyncio.ensure_future(api_work.until_disconnected(_Client(), _holding(release)))
        await asyncio.sleep(0.05)
        with pytest.raises(api_work.TurnTimeout) as refused:
            await api_work.until_disconnected(_Client(), lambda b: started.append(True))
        assert api_work.long_work().waiting == 0
        release.set()
        assert await first == "first"
        return refused.value

    refused = asyncio.run(go())
    assert not started
    assert refused.status_code == 503 and refused.headers["Retry-After"] == str(api_work.RETRY_AFTER_S)
    assert "waited 0 s for a turn" in refused.detail and "time limit" not in refused.detail


def test_a_search_past_its_time_limit_is_a_503_that_invites_no_retry(tmp_path, monkeypatch):
    """Asked again unchanged, the search runs past its limit again: no Retry-After, and ``allowed`` says so."""
    monkeypatch.setattr(budget_module, "SEARCH_DEADLINE_S", 0.0)  # read as each request's budget is made
    r = TestClient(create_app(tmp_path / "t.db")).post("/api/search", json={
        "models": ["qwen3-8b"], "request_rate_per_s": 1, "input_len": 1000, "output_len": 200,
        "systems": ["hgx-h100"], "engines": ["vllm"]})
    assert r.status_code == 503, r.text
    assert "time limit" in r.json()["error"]["message"] and "retry-after" not in r.headers
    assert "asked again runs past the limit again" in r.json()["detail"][0]["allowed"]


def test_a_request_given_its_turn_no_longer_counts_as_waiting(monkeypatch):
    """A turn freed while ``LONG_WAITING`` wait goes to the first of them; a request that arrives before that
    one resumes finds one place in the queue, not a 503."""
    monkeypatch.setattr(api_work, "LONG_AT_ONCE", 1)
    monkeypatch.setattr(api_work, "LONG_WAITING", 3)
    holder = object()

    async def go():
        turns = api_work.long_work()
        await turns.limiter.acquire_on_behalf_of(holder)
        queued = [asyncio.ensure_future(api_work.in_long_thread(lambda b: "queued", Budget())) for _ in range(3)]
        await asyncio.sleep(0.05)
        assert turns.waiting == 3
        late = asyncio.ensure_future(api_work.in_long_thread(lambda b: "late", Budget()))  # runs before the first resumes
        turns.limiter.release_on_behalf_of(holder)
        return await asyncio.gather(*queued, late)

    assert asyncio.run(go()) == ["queued", "queued", "queued", "late"]
