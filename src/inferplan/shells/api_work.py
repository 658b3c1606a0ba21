"""A long computation run for an HTTP request: in a worker thread, stopped when its client goes.

A search can take a minute. Run in the event loop's threadpool as a plain route, it would go on to
the end after the client gave up (``curl -m 2``), holding a worker. ``until_disconnected`` runs it
in a thread with a ``Budget`` and asks every ``DISCONNECT_POLL_S`` whether the client is still
there; once it has gone, the budget is cancelled and the search stops at its next check between
cells. The budget's own deadline stops it as well (``search/budget.py``: a 503).
"""

from __future__ import annotations

import asyncio
from typing import Callable, TypeVar

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request

from inferplan.search.budget import Budget

T = TypeVar("T")
DISCONNECT_POLL_S = 0.5  # how often a running request asks whether its client is still there


async def until_disconnected(http: Request, work: Callable[[Budget], T], budget: Budget | None = None) -> T:
    """``work(budget)`` in a worker thread; the budget cancelled when the client disconnects (or this
    request is cancelled, as when the server stops)."""
    budget = budget or Budget()
    task = asyncio.ensure_future(run_in_threadpool(work, budget))
    try:
        while not task.done():
            await asyncio.wait({task}, timeout=DISCONNECT_POLL_S)
            if not task.done() and await http.is_disconnected():
                budget.cancel()
    finally:
        if not task.done():
            budget.cancel()
    return task.result()
