"""What the HTTP server enforces before a request reaches a route, and the one error shape.

- A request body is at most ``MAX_BODY_BYTES``, counted on the stream before anything parses it
  (a ``Content-Length`` above it is refused unread): 413. A route that takes whole files (the
  measurements upload) is given its own larger bound (``BodyLimit(larger=...)``), and its 413 says it.
- Bound to a loopback address, only a ``Host`` naming loopback is served (a page on another site
  whose name resolves to 127.0.0.1 — DNS rebinding — gets a 400), see ``loopback_hosts``.
- Every response carries a Content-Security-Policy fitting the page and the docs (scripts and
  styles from /static only; vega compiles its chart expressions with ``new Function``, hence
  ``'unsafe-eval'``; vega-embed and Swagger UI set inline styles), X-Frame-Options DENY,
  X-Content-Type-Options nosniff and a Referrer-Policy.
- Every 4xx body has one shape (``Error``): ``{"error": {"field", "message", "allowed"}, "detail":
  [{"loc", "msg", "type", "allowed", "input"?}]}`` — ``error`` the first problem as the CLI's
  ``--json`` names it, ``detail`` every problem with its JSON location; an echoed input is cut to
  ``ECHO_CHARS`` characters and a lone surrogate in it is escaped, so a reply can always be encoded.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import re
from collections.abc import Collection
from typing import Annotated, Any

from fastapi import Path as PathParam

from pydantic import BaseModel, Field
from starlette.exceptions import HTTPException
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from inferplan.catalog.models import looks_like_path
from inferplan.errors import InvalidScenarioError
from inferplan.shells.pydantic_errors import plain_message
from inferplan.units import KiB

# Legitimate bodies are small: the default scenario written out in full with a 200-character name
# is 1.4 KB, a fits request naming every catalogue model, GPU, system and precision 2.4 KB, and the
# largest fits request its limits admit (160 names of 200 characters) 33 KB; 64 KiB is above all.
MAX_BODY_BYTES = 64 * KiB
ECHO_CHARS = 120  # how much of a bad input an error quotes back
NOT_FOUND_ALLOWED = "a path /openapi.json lists, the page at /, or a file under /static"
LOOPBACK = ("127.0.0.1", "localhost", "::1")

CONTENT_SECURITY_POLICY = "; ".join((
    "default-src 'self'", "script-src 'self' 'unsafe-eval'", "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data:", "connect-src 'self'", "object-src 'none'", "base-uri 'none'",
    "form-action 'self'", "frame-ancestors 'none'"))
SECURITY_HEADERS = (
    (b"content-security-policy", CONTENT_SECURITY_POLICY.encode()),
    (b"x-frame-options", b"DENY"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
)


class ErrorSummary(BaseModel):
    field: str | None = Field(description="the input at fault as a JSON path (scenario.name), a query or path parameter")
    message: str
    allowed: str | None = Field(None, description="what would be accepted")


class ErrorItem(BaseModel):
    loc: list[str | int] = Field(description="where: body, query or path, then the keys")
    msg: str
    type: str
    allowed: str | None = None
    input: Any = Field(None, description="the offending input, cut to a short excerpt")


class Error(BaseModel):
    error: ErrorSummary
    detail: list[ErrorItem]


def _error_doc(what: str) -> dict[str, Any]:
    return {"model": Error, "description": what}


ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    400: _error_doc("the body is not JSON, or the Host header does not name this server"),
    404: _error_doc("no such catalogue entry, saved scenario, quote or path"),
    408: _error_doc("the body did not arrive in time (api_body.BODY_DEADLINE_S)"),
    413: _error_doc(f"the body is larger than {MAX_BODY_BYTES} bytes"),
    422: _error_doc("a value is invalid: the field, the reason and what is allowed"),
}
# for a route whose own replies are not JSON (the HTML report): its errors still are
ERROR_RESPONSES_BESIDE_HTML: dict[int | str, dict[str, Any]] = {
    code: {"description": doc["description"],
           "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}
    for code, doc in ERROR_RESPONSES.items()}
# a body sent as anything but JSON, on any route that reads one (api_body.JsonBody): declared on each such
# operation once the schema is built (declare_media_refusal), as the body-taking methods are known only then
MEDIA_REFUSAL: dict[str, Any] = {
    "description": "the body is sent with a Content-Type other than application/json (or a +json type)",
    "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}
BODY_METHODS = ("post", "put", "patch")


def declare_media_refusal(paths: dict[str, dict[str, Any]]) -> None:
    """Add the 415 to every operation of an OpenAPI ``paths`` whose method sends a body."""
    for operations in paths.values():
        for method, operation in operations.items():
            if method in BODY_METHODS:
                operation.setdefault("responses", {}).setdefault("415", MEDIA_REFUSAL)


CONFLICT_RESPONSE: dict[int | str, dict[str, Any]] = {409: _error_doc("another saved scenario has that name")}
# a save past the store's bound for its kind (store.MAX_SAVED): the 409 names the bound and how to delete one
FULL_RESPONSE: dict[int | str, dict[str, Any]] = {409: _error_doc("the store holds its most items of this kind: delete one first")}
SAVE_RESPONSE: dict[int | str, dict[str, Any]] = {409: _error_doc(
    "another saved scenario has that name, or the store holds its most saved scenarios: delete one first")}
RUNS_RESPONSE: dict[int | str, dict[str, Any]] = {409: _error_doc(
    "a file's run is stored already, or the store would hold more than its most runs: delete some first")}
_SAVED_ID = {"scenario_id": "$response.body#/id"}
# OpenAPI links from a saved scenario to what can be done with it (clients and stateful fuzzers follow them)
SAVED_SCENARIO_LINKS: dict[int | str, dict[str, Any]] = {201: {"description": "the saved scenario, with its id", "links": {
    "GetScenario": {"operationId": "scenarios_get_api_scenarios__scenario_id__get", "parameters": _SAVED_ID},
    "RenameScenario": {"operationId": "scenarios_rename_api_scenarios__scenario_id__patch", "parameters": _SAVED_ID},
    "DeleteScenario": {"operationId": "scenarios_delete_api_scenarios__scenario_id__delete", "parameters": _SAVED_ID},
    "CompareScenario": {"operationId": "scenarios_compare_api_scenarios_compare_get",
                        "parameters": {"a": "$response.body#/id", "b": "$response.body#/id"}},
}}}


ItemId = Annotated[int, PathParam(ge=1, le=2**62, description="id of a saved item")]  # SQLite's integer range


def refuse_trace_path(trace: object) -> None:
    """Refuse a trace named by a path: the API takes a trace inline, never from the server's disk."""
    if isinstance(trace, str):
        raise InvalidScenarioError("the API does not read files on the server's disk; give the trace's rows inline",
                                   field="trace", allowed="a list of {arrival_s, input_tokens, output_tokens}, or the "
                                   "file's {name, text, encoding} (CSV, or JSONL when the name ends in .jsonl or .json)")


def refuse_server_path(name: str, field: str) -> None:
    """Refuse a model named by a path: the API plans catalogue models (and repos in the server's
    Hugging Face cache), never files on its disk. A name shaped like a path (absolute, from ``~`` or
    ``.``, with a backslash, ending in .json) is refused whether or not it exists, and a relative
    name that exists is answered as an unknown name is, so the answer does not tell a caller what
    the server's disk holds."""
    shaped = name.startswith(("/", "~", ".")) or "\\" in name or name.endswith(".json")
    if not shaped and looks_like_path(name):
        # a relative name that happens to exist beside the server is answered as any unknown name is
        # (close matches from the catalogue), so the answer does not tell that it exists
        from inferplan.catalog.loader import load_catalog

        load_catalog().model(name, field_name=field)
        return
    if shaped:
        raise InvalidScenarioError("the API does not read files on the server's disk: name a catalogue model id or "
                                   "a Hugging Face repo id (import a local config.json with `inferplan model import`)",
                                   field=field, allowed="a catalogue model id or alias, or a cached repo id")


def _printable(text: str) -> str:
    """``text`` that UTF-8 can carry: a lone surrogate becomes its escape (\\ud800)."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def excerpt(value: Any) -> Any:
    """A short, always-encodable quote of a bad input: a number as it was, a text or a structure
    (as its JSON) cut to ``ECHO_CHARS`` characters."""
    if value is None or isinstance(value, bool) or (isinstance(value, int) and abs(value) < 10**15):
        return value
    if isinstance(value, float) and math.isfinite(value):
        return value
    if isinstance(value, str):
        text = value
    else:
        try:
            text = json.dumps(value, default=str)
        except (TypeError, ValueError, RecursionError):
            text = repr(value)
    text = _printable(text)
    return text if len(text) <= ECHO_CHARS else text[:ECHO_CHARS] + "…"


def error_item(loc: Any, msg: Any, type_: str, allowed: Any = None, **extra: Any) -> dict[str, Any]:
    msg = plain_message(msg)  # a validator's own message, without the prefix pydantic puts before it
    if type_ == "tuple_type":  # a tuple inside is a JSON array outside
        msg, type_ = "Input should be a valid list (a JSON array)", "list_type"
    item = {"loc": [p if isinstance(p, int) else _printable(str(p)) for p in loc], "msg": _printable(str(msg)),
            "type": type_, "allowed": None if allowed is None else _printable(str(allowed))}
    if "input" in extra:
        item["input"] = excerpt(extra["input"])
    return item


def error_response(status: int, items: list[dict[str, Any]], headers: dict[str, str] | None = None) -> JSONResponse:
    first = items[0]
    where = [str(p) for p in first["loc"]]
    if where and where[0] in ("body", "query", "path", "header"):
        where = where[1:]  # the summary names the key (scenario.name, a), the items say where it sits
    summary = {"field": ".".join(where) or None, "message": first["msg"], "allowed": first.get("allowed")}
    return JSONResponse(status_code=status, content={"error": summary, "detail": items}, headers=headers)


def http_error(status: int, message: str, *, loc: tuple[str, ...] = (), allowed: str | None = None,
               headers: dict[str, str] | None = None) -> JSONResponse:
    return error_response(status, [error_item(loc, message, f"http_{status}", allowed)], headers)


def http_exception_response(exc: HTTPException) -> JSONResponse:
    """Starlette's and FastAPI's own errors (unknown path 404, wrong method 405, an unreadable body
    400) in the error shape instead of ``{"detail": "..."}``."""
    if isinstance(exc, BodyTooLarge):
        return _too_large(exc.limit_bytes)
    where = ("body",) if exc.status_code == 400 else ()
    headers = getattr(exc, "headers", None) or {}
    allowed = getattr(exc, "allowed", None)
    if allowed is None and exc.status_code == 405 and headers.get("Allow"):
        allowed = headers["Allow"]  # the methods the path takes, as the Allow header says them
    elif allowed is None and exc.status_code == 404:
        allowed = NOT_FOUND_ALLOWED
    return http_error(exc.status_code, str(exc.detail), loc=where, allowed=allowed, headers=headers or None)


class BodyTooLarge(HTTPException):
    def __init__(self, limit_bytes: int = MAX_BODY_BYTES) -> None:
        super().__init__(413, f"the request body is larger than {limit_bytes} bytes")
        self.limit_bytes = limit_bytes


def _too_large(limit_bytes: int = MAX_BODY_BYTES) -> JSONResponse:
    return http_error(413, str(BodyTooLarge(limit_bytes).detail), loc=("body",), allowed=f"at most {limit_bytes} bytes")


def inline_script_policy(html: str) -> str:
    """``CONTENT_SECURITY_POLICY`` that also runs the inline scripts of ``html`` (by their SHA-256),
    for a page such as Swagger UI's that starts itself from one."""
    hashes = " ".join(f"'sha256-{base64.b64encode(hashlib.sha256(s.encode()).digest()).decode()}'"
                      for s in re.findall(r"<script>(.*?)</script>", html, flags=re.S))
    return CONTENT_SECURITY_POLICY.replace("script-src 'self'", f"script-src 'self' {hashes}")


class BodyLimit:
    """Refuse a body over ``MAX_BODY_BYTES`` (or the bound ``larger`` gives its method and path): at
    once when Content-Length says so, else as soon as the received chunks add up to more (chunked
    uploads), before a route parses anything."""

    def __init__(self, app: ASGIApp, larger: dict[tuple[str, str], int] | None = None) -> None:
        self.app = app
        self.larger = dict(larger or {})

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        limit = self.larger.get((scope.get("method", ""), scope.get("path", "")), MAX_BODY_BYTES)
        length = dict(scope["headers"]).get(b"content-length")
        if length is not None and (not length.isdigit() or int(length) > limit):
            return await _too_large(limit)(scope, receive, send)
        seen = 0

        async def counted() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > limit:
                    raise BodyTooLarge(limit)  # FastAPI passes an HTTPException through; the handler writes the 413
            return message

        await self.app(scope, counted, send)


def loopback_hosts(port: int) -> tuple[str, ...]:
    """The Host headers a browser sends for this server on loopback: each name, bare or with the port."""
    names = ("localhost", "127.0.0.1", "[::1]")
    return names + tuple(f"{n}:{port}" for n in names)


def is_loopback(host: str) -> bool:
    return host in LOOPBACK or host.startswith("127.")


class HostCheck:
    """Serve only requests whose Host header is one of ``allowed`` (case-insensitive)."""

    def __init__(self, app: ASGIApp, allowed: Collection[str]) -> None:
        self.app = app
        self.allowed = frozenset(h.lower() for h in allowed)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            host = dict(scope["headers"]).get(b"host", b"").decode("latin-1").lower()
            if host not in self.allowed:
                return await http_error(400, "this server answers only requests addressed to it on loopback",
                                        loc=("header", "host"), allowed=", ".join(sorted(self.allowed)))(scope, receive, send)
        await self.app(scope, receive, send)


class HeadAsGet:
    """Answer HEAD as GET without the body (RFC 9110 9.3.2): FastAPI's GET routes take no HEAD, so a
    monitor's or ``curl -I``'s check of the page or the catalogue would get a 405."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("method") != "HEAD":
            return await self.app(scope, receive, send)

        async def headers_only(message: Message) -> None:
            if message["type"] == "http.response.body":
                if message.get("more_body", False):
                    return  # the body is left out; its headers (Content-Length included) are kept
                message = {"type": "http.response.body", "body": b"", "more_body": False}
            await send(message)

        await self.app({**scope, "method": "GET"}, receive, headers_only)


class SecurityHeaders:
    """Add ``SECURITY_HEADERS`` to every HTTP response (a header the route set itself is kept)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                present = {k.lower() for k, _ in message.get("headers", [])}
                message["headers"] = [*message.get("headers", []), *(h for h in SECURITY_HEADERS if h[0] not in present)]
            await send(message)

        await self.app(scope, receive, with_headers)
