"""A query parameter a route does not take is refused (422 at ``query.<name>``, with the parameters it does
take), as an unknown body key is: ``POST /api/fit?speculative_token=2`` would otherwise plan without the
draft its caller meant to ask for. Only the ``/api/`` routes are checked: the page's own address carries its
scenario in ``?s=`` for the page to read."""

from __future__ import annotations

from fastapi.exceptions import RequestValidationError
from starlette.requests import Request

API_PREFIX = "/api/"


def taken_query(request: Request) -> list[str] | None:
    """The query parameters the request's route declares (None: a route this check leaves alone)."""
    route = request.scope.get("route")
    dependant = getattr(route, "dependant", None)
    if dependant is None or not getattr(route, "path", "").startswith(API_PREFIX):
        return None
    names, todo = set(), [dependant]
    while todo:  # the route's own parameters and its dependencies'
        d = todo.pop()
        names |= {p.alias for p in d.query_params}
        todo.extend(d.dependencies)
    return sorted(names)


def taken_query_text(request: Request) -> str:
    """What a query parameter of the request's route may be named, as an error's ``allowed`` says it."""
    taken = taken_query(request)
    return ", ".join(taken) if taken else "no query parameters"


def known_query(request: Request) -> None:
    """Refuse every query parameter the request's route does not declare (a dependency of every route)."""
    taken = taken_query(request)
    if taken is None:
        return
    unknown = [(name, value) for name, value in request.query_params.multi_items() if name not in taken]
    if unknown:
        raise RequestValidationError([{"loc": ("query", name), "msg": "not a query parameter this route takes",
                                       "type": "extra_forbidden", "input": value} for name, value in unknown])
