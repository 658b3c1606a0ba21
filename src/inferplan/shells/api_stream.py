"""A search's progress as it runs: the same route answering NDJSON when the client asks for it.

A request to ``POST /api/search`` or ``/api/views/search`` whose ``Accept`` header names
``application/x-ndjson`` is answered as newline-delimited JSON (one JSON object a line, UTF-8,
github.com/ndjson/ndjson-spec): ``{"progress": {"done", "total", "stage"}}`` lines while the search
runs, fed by the library's progress callback, then a last line holding exactly what the request
answers without that header — the answer, or the error body (``{"error", "detail"}``, written by the
app's own exception handlers, so its ``detail[0].type`` names the error as a plain reply's does). A
request refused before the search starts (its body, a path, a trace row) is answered as without the
header, with its status, and so is an error the search meets before its first progress (a name the
catalogue lacks); once the stream has begun the status is 200 and the last line says how it ended.
The search runs in a thread of the searches' lane (``api_work.SEARCHES``: its own pool, a 503 when too many wait) with
the route's ``Budget`` (its time limit); a client that goes cancels it. Progress is sent at most every ``PROGRESS_EVERY_S``, the latest figures each time, and
the last figures before the answer.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import AsyncIterator
from typing import Any, Callable

from pydantic import BaseModel, Field
from starlette.requests import Request
from starlette.responses import StreamingResponse

from inferplan.search.budget import Budget
from inferplan.shells.api_guard import http_error
from inferplan.shells.api_work import DISCONNECT_POLL_S, SEARCHES, in_long_thread

NDJSON = "application/x-ndjson"
PROGRESS_EVERY_S = 0.1  # at most ten progress lines a second: a stage calls back once per cell
_log = logging.getLogger(__name__)


class SearchProgress(BaseModel):
    done: int = Field(description="steps of this stage done")
    total: int = Field(description="steps of this stage in all")
    stage: str = Field(description="what the search is doing: modelling the cells, then simulating the picks")


class ProgressLine(BaseModel):
    progress: SearchProgress


def wants_stream(http: Request) -> bool:
    """Whether the ``Accept`` header names NDJSON (with a quality above 0)."""
    for item in http.headers.get("accept", "").split(","):
        media, *params = (p.strip() for p in item.split(";"))
        if media.lower() == NDJSON:
            quality = next((p.partition("=")[2].strip() for p in params if p.lower().startswith("q=")), "1")
            try:
                return float(quality) > 0
            except ValueError:
                return False
    return False


def stream_responses(answer: type[BaseModel]) -> dict[int | str, dict[str, Any]]:
    """The route's 200 as OpenAPI says it: JSON, or with ``Accept: application/x-ndjson`` the stream,
    each line (``itemSchema``, as FastAPI's own JSON Lines routes say it) a progress line, then the
    answer or an error body."""
    progress = {"title": "ProgressLine", "type": "object", "required": ["progress"], "additionalProperties": False,
                "properties": {"progress": SearchProgress.model_json_schema()}}  # inline: no component to refer to
    refs = [{"$ref": f"#/components/schemas/{name}"} for name in (answer.__name__, "Error")]
    return {200: {"description": "the answer; or, asked for with Accept: application/x-ndjson, one JSON object a "
                                 "line: progress lines, then the answer or the error body the plain request answers",
                  "content": {NDJSON: {"itemSchema": {"oneOf": [progress, *refs]}}}}}


async def progress_stream(http: Request, work: Callable[[Budget, Callable[[int, int, str], None]], BaseModel],
                          budget: Budget | None = None) -> StreamingResponse:
    """``work(budget, progress)`` in a worker thread, its progress and then its answer (or error) as NDJSON.
    Until its first progress the reply has not begun: an error before then (a name the catalogue lacks)
    is raised here, answered with its status as without the stream."""
    budget = budget or Budget()
    latest = _Latest(asyncio.get_running_loop())
    task = asyncio.ensure_future(in_long_thread(lambda b: work(b, latest).model_dump_json().encode(), budget,
                                                lane=SEARCHES))
    task.add_done_callback(lambda t: t.cancelled() or t.exception())  # a stream the client left: its error read
    try:
        while not task.done() and latest.figures is None:
            woken = asyncio.ensure_future(latest.changed.wait())
            await asyncio.wait({task, woken}, timeout=DISCONNECT_POLL_S, return_when=asyncio.FIRST_COMPLETED)
            woken.cancel()
            if not task.done() and latest.figures is None and await http.is_disconnected():
                budget.cancel()
    except BaseException:
        budget.cancel()
        raise
    if task.done() and latest.figures is None:
        task.result()  # its error, raised for the app's handlers
    return StreamingResponse(_lines(http, task, latest, budget), media_type=NDJSON)


class _Latest:
    """The worker thread's latest progress figures, and a wake-up for the event loop."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop, self.figures, self.changed = loop, None, asyncio.Event()

    def __call__(self, done: int, total: int, stage: str) -> None:  # called in the worker thread
        self.figures = (done, total, stage)
        self.loop.call_soon_threadsafe(self.changed.set)


def _line(model: BaseModel | bytes) -> bytes:
    return (model if isinstance(model, bytes) else model.model_dump_json().encode()) + b"\n"


async def _lines(http: Request, task: asyncio.Future, latest: _Latest, budget: Budget) -> AsyncIterator[bytes]:
    sent = None
    try:
        while True:
            latest.changed.clear()
            if latest.figures is not None and latest.figures != sent:
                sent = latest.figures
                yield _line(ProgressLine(progress=SearchProgress(done=sent[0], total=sent[1], stage=sent[2])))
            if task.done():
                break
            await asyncio.wait({task}, timeout=PROGRESS_EVERY_S)  # the next line no sooner, unless the answer is in
            woken = asyncio.ensure_future(latest.changed.wait())
            await asyncio.wait({task, woken}, return_when=asyncio.FIRST_COMPLETED)
            woken.cancel()
        try:
            answer = task.result()
        except Exception as exc:  # noqa: BLE001 - every error ends the stream as its error body
            yield _line(await _error_body(http, exc))
        else:
            yield _line(answer)
    finally:
        budget.cancel()  # the client went (the stream was cancelled): the search stops at its next check


async def _error_body(http: Request, exc: Exception) -> bytes:
    """The body the app's exception handler gives ``exc`` (an ``InferplanError``: 422, or 503 past the time
    limit), as a plain request's reply carries it; an error no handler takes, a 500's in the same shape."""
    handlers = getattr(http.app, "exception_handlers", {})
    handler = next((handlers[c] for c in type(exc).__mro__ if c in handlers and c is not Exception), None)
    if handler is None:
        _log.error("a streamed search failed", exc_info=exc)
        return http_error(500, "the search failed: an internal error (the server's log has it)").body
    response = handler(http, exc)
    return (await response if inspect.isawaitable(response) else response).body
