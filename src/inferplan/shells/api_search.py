"""POST /api/search: the cheapest deployments that meet a service target (``inferplan.search``).

The body is a ``SearchRequest`` (``api_keys.SearchBody``: ``workload_preset`` taken for ``workload``); the answer a ``SearchResult``: the ranked deployments (each with
its launch command and a scenario the Users + ROI simulator loads), why each failed family failed,
the front of cost against tokens/s per user, and the same model at an API beside them. A trace is
given inline as rows or as the file's name and text (CSV or JSONL, ``search.trace.trace_of``, as the CLI
reads a file); a trace file path is refused: the server reads no files from its disk for a request.
Asked for with ``Accept: application/x-ndjson``, the search's progress comes line by line before the
answer (``api_stream.py``).
"""

from __future__ import annotations

from typing import Callable

from fastapi import APIRouter, Request, Response

from inferplan.search.budget import Budget
from inferplan.search.result import SearchResult
from inferplan.search.trace import trace_of
from inferplan.shells.api_guard import refuse_server_path, refuse_trace_path
from inferplan.shells.api_keys import SearchBody
from inferplan.shells.api_stream import progress_stream, stream_responses, wants_stream
from inferplan.shells.api_work import LONG_RESPONSES, SEARCHES, long_json

router = APIRouter()


@router.post("/api/search", tags=["search"], summary="The cheapest deployments that meet a service target",
             response_model=SearchResult, responses={**stream_responses(SearchResult), **LONG_RESPONSES})
async def search_route(request: SearchBody, http: Request) -> Response:
    """The ranked deployments (what to run, its cost, its tail latency, its launch command), why each failed
    family failed, the cost/interactivity front and the model at an API beside them (docs/search.md).
    Plans on the server's stored runs (POST /api/measurements) as measured profiles, as ``plan`` does.
    Runs in a long request's thread, stopped when the client goes or at the search's deadline (``api_work``).
    With ``Accept: application/x-ndjson``, its progress line by line, then this answer (``api_stream``)."""
    work = search_work(request, http)
    if wants_stream(http):
        return await progress_stream(http, work)
    return await long_json(http, work, lane=SEARCHES)


def search_work(request: SearchBody, http: Request) -> Callable[..., SearchResult]:
    """``work(budget, progress=None)``: the search of ``request`` on the server's catalogue and stored runs;
    what it must not read (a path on the server's disk, a bad trace row) refused first, before it starts."""
    for i, name in enumerate(request.models):
        refuse_server_path(name, f"models.{i}")
    refuse_trace_path(request.trace)
    if request.trace is not None:
        trace_of(request.trace)  # a bad row is refused here, named by its place in the body or its file line
    store = http.app.state.store

    def work(budget: Budget, progress: Callable[[int, int, str], None] | None = None) -> SearchResult:
        from inferplan.catalog.loader import load_catalog
        from inferplan.performance.local_catalog import with_user_profiles
        from inferplan.search.run import search

        return search(request, with_user_profiles(load_catalog(), store.user_runs()), budget=budget, progress=progress)

    return work
