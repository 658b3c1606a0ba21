"""GET /api/views/search-choices: what the Find the cheapest form's filters take
(``report/search_choices.py``). POST /api/views/search: a search's answer as the web page shows it (``report/search_view.py``):
the ranked deployments as texts, each with its launch command and the scenario the Users + ROI
simulator loads, the failed families' reasons, the API beside them and the cost/interactivity chart."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response

from inferplan.report.search_choices import SearchChoices
from inferplan.report.search_view import SearchView
from inferplan.shells.api_keys import SearchBody
from inferplan.shells.api_search import search_work
from inferplan.shells.api_stream import progress_stream, stream_responses, wants_stream
from inferplan.shells.api_work import LONG_RESPONSES, SEARCHES, long_json

router = APIRouter()


@router.post("/api/views/search", tags=["search"], summary="A search's answer as the web page shows it",
             response_model=SearchView, responses={**stream_responses(SearchView), **LONG_RESPONSES})
async def search_view_route(request: SearchBody, http: Request) -> Response:
    """The body of POST /api/search; the answer worded per row, with the chart's Vega-Lite spec. With
    ``Accept: application/x-ndjson``, the search's progress line by line, then this answer (``api_stream``)."""
    from inferplan.report.search_view import search_view

    work = search_work(request, http)
    if wants_stream(http):
        return await progress_stream(http, lambda budget, progress: search_view(work(budget, progress)))
    return await long_json(http, lambda budget: search_view(work(budget)), lane=SEARCHES)


@router.get("/api/views/search-choices", tags=["search"], summary="What the search form's filters take")
def search_choices_route() -> SearchChoices:
    """The catalogue's vendors and engines, the statuses (and those searched by default), the form factors."""
    from inferplan.catalog.loader import load_catalog
    from inferplan.report.search_choices import search_choices

    return search_choices(load_catalog())
