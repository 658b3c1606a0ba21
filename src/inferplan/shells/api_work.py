"""A long computation run for an HTTP request: in a worker thread of its own pool, stopped when its client goes.

A search can take a minute, a simulation of the most requests allowed over the most replicas ten
seconds, the what-runs view of every model a few. Run in the event loop's threadpool as plain routes,
40 of them at once would hold all of its 40 threads, and every other route of the server (a catalogue
read, the page's plan) would wait behind them for minutes; and each would go on to the end after its
client gave up (``curl -m 2``). So a long request:

- runs in one of two lanes, each of at most ``LONG_AT_ONCE`` threads of its own per worker process
  (``long_work``), never in the threadpool the other routes use, waiting its turn in its lane in arrival
  order: ``SEARCHES``, whose work only a deadline bounds (up to two minutes each), and ``BOUNDED``, the rest,
  bounded by their inputs to seconds (a simulation, the what-runs view, a fits matrix, the report), so a
  queue of searches never keeps a quick question waiting; the work is CPU-bound Python, so more at once
  in one process would only share one core more thinly;
- is refused at once with a 503 (``ServerBusy``, with ``Retry-After``) while ``LONG_WAITING`` others
  wait already in its lane, rather than queued for many minutes, and with a 503 saying how long it waited
  (``TurnTimeout``, with ``Retry-After``) once it has waited ``TURN_WAIT_S`` for a turn, nothing computed;
- asks every ``DISCONNECT_POLL_S`` whether its client is still there; once it has gone, the work's
  ``Budget`` is cancelled: a search stops at its next check between cells, a simulation (``/api/simulate``'s,
  or a search's of its picks) within a few thousand engine visits (``search/simulate.py``), and work still
  waiting for its turn leaves the queue at once, so a client that gave up holds no place in it. The budget's own deadline
  stops a search as well, counted from its turn (``search/budget.py``: a 503); other long
  work is bounded by its inputs (``api_simulate.MAX_API_REQUESTS``, ``memory.matrix.MAX_FITS_CELLS`` …).

Its answer is written as JSON in the worker thread too (``long_json``): validating and encoding a
large answer (a search's is 0.8 MB) in the event loop would hold every other request up meanwhile.
"""

from __future__ import annotations

import asyncio
import time
import weakref
from dataclasses import dataclass
from typing import Callable, TypeVar

import anyio
from pydantic import BaseModel
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response

from inferplan.search.budget import Budget

T = TypeVar("T")
DISCONNECT_POLL_S = 0.5  # how often a running request asks whether its client is still there
LONG_AT_ONCE = 2  # long requests one worker process computes at once in each lane
LONG_WAITING = 32  # long requests that may wait for a turn in each lane; one more is a 503
RETRY_AFTER_S = 10  # what the 503 tells a client to wait before asking again
TURN_WAIT_S = 120.0  # the longest a long request waits for a turn: a search's own time limit (search/budget.py)


@dataclass(frozen=True)
class Lane:
    """A queue of long requests with turns of its own: ``running`` says what runs in it, as its 503 names it."""

    running: str


SEARCHES = Lane("searches")
BOUNDED = Lane("long requests other than searches (simulations, fits matrices, what-runs views, reports)")


class _Turns:
    """One event loop's turns for one lane's long requests, and how many wait for one."""

    def __init__(self) -> None:
        self.limiter = anyio.CapacityLimiter(LONG_AT_ONCE)
        self.threads = anyio.CapacityLimiter(LONG_AT_ONCE)  # the threads they run in: one for each turn taken

    @property
    def waiting(self) -> int:
        """Requests in the queue for a turn: one joins it as it asks (requests arriving together each see the
        ones before them) and leaves it as it is given its turn, before it resumes."""
        return self.limiter.statistics().tasks_waiting


_turns: "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[Lane, _Turns]]" = weakref.WeakKeyDictionary()


# how OpenAPI declares a long route's 503 (the Error model: api_guard.ERROR_RESPONSES)
LONG_RESPONSES: dict[int | str, dict] = {503: {"description": f"more than {LONG_WAITING} long requests of its kind wait already, "
                                               f"or this one waited {TURN_WAIT_S:g} s for a turn (Retry-After says when to "
                                               "ask again), or a search ran past its time limit (no Retry-After: "
                                               "asked again unchanged it runs past it again)",
                                               "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}}


class ServerBusy(HTTPException):
    """Too many long requests wait already: a 503 saying so, and when to ask again."""

    def __init__(self, waiting: int, lane: Lane) -> None:
        super().__init__(503, f"the server is busy: {LONG_AT_ONCE} {lane.running} are running "
                              f"and {waiting} are waiting", headers={"Retry-After": str(RETRY_AFTER_S)})
        self.allowed = f"the same request again in {RETRY_AFTER_S} s or later"


class TurnTimeout(HTTPException):
    """A long request waited ``TURN_WAIT_S`` for a turn and none came: a 503 saying so (nothing of it ran), and
    when to ask again."""

    def __init__(self, waited_s: float, lane: Lane) -> None:
        super().__init__(503, f"the server is busy: this request waited {waited_s:,.0f} s for a turn while "
                              f"{LONG_AT_ONCE} {lane.running} ran, and nothing of it was computed",
                         headers={"Retry-After": str(RETRY_AFTER_S)})
        self.allowed = f"the same request again in {RETRY_AFTER_S} s or later"


def long_work(lane: Lane = BOUNDED) -> _Turns:
    """The running event loop's turns for ``lane``'s long requests (one set per loop: a worker process has one)."""
    lanes = _turns.setdefault(asyncio.get_running_loop(), {})
    turns = lanes.get(lane)
    if turns is None:
        turns = lanes[lane] = _Turns()
    return turns


async def in_long_thread(work: Callable[[Budget], T], budget: Budget,
                         on_turn: Callable[[], None] = lambda: None, lane: Lane = BOUNDED) -> T:
    """``work(budget)`` in one of ``lane``'s threads once a turn is free (``on_turn`` called as it is
    taken), the budget's clock started then; a 503 (``ServerBusy``) while ``LONG_WAITING`` wait already, or
    (``TurnTimeout``) after ``TURN_WAIT_S`` without a turn; nothing computed if the budget was cancelled meanwhile."""
    turns = long_work(lane)
    waiting = turns.waiting
    if waiting >= LONG_WAITING:
        raise ServerBusy(waiting, lane)

    def turn() -> T:
        if budget.stopped.is_set():  # the client went while this waited: stop before starting
            budget.check()
        return work(budget.from_now())  # a search's deadline counts from here, not from its wait

    asked_s, taken = time.monotonic(), False
    with anyio.move_on_after(TURN_WAIT_S):
        await turns.limiter.acquire()
        taken = True
    if not taken:
        raise TurnTimeout(time.monotonic() - asked_s, lane)
    on_turn()
    try:
        return await anyio.to_thread.run_sync(turn, limiter=turns.threads)
    finally:
        turns.limiter.release()


async def until_disconnected(http: Request, work: Callable[[Budget], T], budget: Budget | None = None,
                             lane: Lane = BOUNDED) -> T:
    """``work(budget)`` in a thread of ``lane`` (``in_long_thread``); the budget cancelled when the
    client disconnects (or this request is cancelled, as when the server stops), and a request still
    waiting for its turn then taken out of the queue."""
    budget = budget or Budget()
    running: list[bool] = []
    task = asyncio.ensure_future(in_long_thread(work, budget, on_turn=lambda: running.append(True), lane=lane))
    try:
        while not task.done():
            await asyncio.wait({task}, timeout=DISCONNECT_POLL_S)
            if not task.done() and await http.is_disconnected():
                budget.cancel()
                if not running:  # still queued: give its place up now, not when a turn comes
                    task.cancel()
    finally:
        if not task.done():
            budget.cancel()
    if task.cancelled():
        budget.check()  # the stop as a search's: whoever asked has gone
    return task.result()


async def long_json(http: Request, work: Callable[[Budget], BaseModel], budget: Budget | None = None,
                    lane: Lane = BOUNDED) -> Response:
    """``work``'s answer as a JSON reply, computed and encoded in a thread of ``lane`` (``until_disconnected``)."""
    body = await until_disconnected(http, lambda b: work(b).model_dump_json().encode(), budget, lane)
    return Response(body, media_type="application/json")

