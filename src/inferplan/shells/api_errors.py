"""How the HTTP API answers an error, in the one error shape of ``api_guard``.

A library ``InferplanError`` is a 422 naming the field's place in the request (its JSON path in the body, or
the query or path parameter), a 404 for an unknown catalogue entry or saved item, a 409 for a taken name and
a 503 for a search past its own time limit; request validation is a 422 saying what each place takes, a body
that is not JSON a 400; a 405 lists every method the path takes.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import compile_path

from inferplan.errors import ConflictError, InferplanError, OutOfTimeError
from inferplan.shells.api_guard import error_item, error_response, http_exception_response
from inferplan.shells.api_keys import accepted_keys, as_sent, body_model
from inferplan.shells.api_query import taken_query_text
from inferplan.shells.pydantic_errors import allowed_by, error_message, takes
from inferplan.store import NotFoundError


def _allowed(error: dict, model, request: Request) -> str | None:
    """What a request error's place takes: in the body, read from the body's model too; a query or path
    parameter's from the route's declaration of it (``?days=NaN``: "a whole number at least 0 and at most 100000")."""
    body_path = list(error["loc"])[1:] if error["loc"] and error["loc"][0] == "body" else None
    return allowed_by(error, model if body_path is not None else None, body_path) or _param_takes(error["loc"], request)


def _param_takes(loc, request: Request) -> str | None:
    route = request.scope.get("route")
    if len(loc) != 2 or loc[0] not in ("query", "path") or route is None or not hasattr(route, "dependant"):
        return None
    params = route.dependant.query_params if loc[0] == "query" else route.dependant.path_params
    info = next((p.field_info for p in params if p.alias == loc[1]), None)
    return None if info is None else takes(info.annotation, info)


def _json_field(field: str | None) -> list[str]:
    """A domain field (max_model_len, or a dotted scenario path) as its place in a request's JSON body."""
    if not field:
        return ["body"]
    return ["body", *field.split(".")]


def in_body(exc: InferplanError, *parts: tuple[str, type[BaseModel]]) -> InferplanError:
    """Re-address a library error's domain field (quantization) to where it sits in this request's
    body (deployment.quantization), so the 422 names the JSON path."""
    key = exc.field or ""
    for prefix, model in parts:
        if key and key.split(".")[0] in model.model_fields:
            exc.field = f"{prefix}.{key}"
            break
    return exc


def _error(status: int, exc: InferplanError, request: Request | None = None) -> JSONResponse:
    return error_response(status, [error_item(_location(exc.field, request), exc, type(exc).__name__, exc.allowed)])


def _location(field: str | None, request: Request | None) -> list[str]:
    """Where the named input sits: a path parameter (/api/scenarios/{scenario_id}), a query parameter
    (?a=), or the JSON body."""
    if request is not None and field:
        path = dict(request.path_params)
        if field in path:
            return ["path", field]
        if field in request.query_params:
            return ["query", field]
        if field == "id" and len(path) == 1:  # the store names a saved item's id whatever the route calls it
            return ["path", next(iter(path))]
    return as_sent(_json_field(field), request)


def add_error_handlers(app: FastAPI) -> None:
    """Answer ``app``'s errors in the one error shape, each naming where the refused input sits."""
    @app.exception_handler(RequestValidationError)
    async def request_validation_error(request: Request, exc: RequestValidationError):
        # each bad input is echoed as a short excerpt: a NaN, a lone surrogate or 15 MB cannot stall or break the reply
        errors = exc.errors()
        if errors and errors[0]["type"] == "json_invalid":  # not JSON at all: 400, with where it stops being JSON
            e = errors[0]
            reason = f"the body is not JSON: {e.get('ctx', {}).get('error', e['msg'])} at character {e['loc'][-1]}"
            return error_response(400, [error_item(["body"], reason, e["type"], "a JSON object")])
        model = body_model(request)  # the field at each error's place says what it takes
        return error_response(422, [error_item(e["loc"], error_message(e), e["type"], (
            (taken_query_text(request) if e["loc"][0] == "query" else accepted_keys(model, e["loc"]))
            if e["type"] == "extra_forbidden" else None) or _allowed(e, model, request),
                                               **({"input": e["input"]} if "input" in e else {})) for e in errors])

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException):
        if exc.status_code == 405:  # Starlette's Allow names the first route at the path; list every route's
            said = {m.strip() for m in (exc.headers or {}).get("Allow", "").split(",") if m.strip()}
            methods = said | {m.upper() for pattern, ms in _schema_paths() if pattern.match(request.url.path) for m in ms}
            methods = sorted(methods | ({"HEAD"} if "GET" in methods else set()))  # HEAD: api_guard.HeadAsGet
            exc.headers = {**(exc.headers or {}), "Allow": ", ".join(methods)}
        return http_exception_response(exc)

    def _schema_paths() -> list[tuple[Any, list[str]]]:
        if not hasattr(app.state, "schema_paths"):  # each path of the schema as a pattern, with its methods
            app.state.schema_paths = [(compile_path(path)[0], list(ops)) for path, ops in app.openapi()["paths"].items()]
        return app.state.schema_paths

    @app.exception_handler(ValidationError)
    async def library_validation_error(request: Request, exc: ValidationError):
        # a domain object the library builds from valid request parts turned out inconsistent
        first = exc.errors()[0]
        return error_response(422, [error_item(["body", *first["loc"]], error_message(first), first["type"], allowed_by(first))])

    @app.exception_handler(InferplanError)
    async def inferplan_error(request: Request, exc: InferplanError):
        # 404: a path names something that does not exist; 409: it would replace a saved one; 422: a body is wrong
        status = 404 if isinstance(exc, NotFoundError) else 409 if isinstance(exc, ConflictError) else 422
        if isinstance(exc, OutOfTimeError):  # a search past its own time limit: a 503 without Retry-After, as the
            # same request asked again runs past it again (a busy server's 503s, api_work's, carry Retry-After)
            allowed = exc.allowed and f"{exc.allowed}; the same request asked again runs past the limit again"
            return error_response(503, [error_item(_location(exc.field, request), exc, type(exc).__name__, allowed)])
        return _error(status, exc, request)
