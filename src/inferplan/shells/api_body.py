"""A request body is JSON, said so, and means one thing: checked before a route parses it.

- A body sent as anything but ``application/json`` (``text/plain``, a form, no Content-Type) gets a
  415 naming the type the API takes, not pydantic's "Input should be a valid dictionary".
- A key given twice in one object gets a 422 naming the key and where it sits: JSON parsers keep the
  last one without a word, so ``{"model": "qwen3-8b", "model": "deepseek-v3"}`` would plan
  DeepSeek-V3 (scenario files refuse duplicate keys the same way).
- Lists and objects nested more than ``MAX_NESTING_DEPTH`` levels (the bound input files have) get a
  400 naming it; the check walks the body without recursing.
- A body that is not UTF-8 gets a 400 naming the first byte that is not; a whole number written with more
  digits than Python reads (``sys.get_int_max_str_digits``, 4,300) a 422 at its place: either would
  otherwise be FastAPI's "There was an error parsing the body", naming nothing.
- A body that has not arrived in full ``BODY_DEADLINE_S`` after the request's headers gets a 408 and
  the connection is closed: a client announcing ``Content-Length: 1000`` and sending 9 bytes would
  otherwise hold a connection and a request task open for ever (uvicorn sets no such limit).
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

import anyio
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from inferplan.input_files import MAX_NESTING_DEPTH
from inferplan.shells.api_guard import (MAX_BODY_BYTES, BodyTooLarge, error_item, error_response, http_error,
                                       http_exception_response)

# Every client of the API sends its body at once (the page's fetch, curl, a script); the largest body
# taken, a 16 MiB measurements upload (api_measurements.MAX_UPLOAD_BYTES), arrives within 30 s over
# any uplink of 4.5 Mbit/s or more, and a 64 KiB body over one of 18 kbit/s.
BODY_DEADLINE_S = 30.0
# The same holds for a request's line and headers (a few hundred bytes; h11 reads at most 16 KiB of them):
# a client that opens a connection and never finishes its headers gets a 408 this long after it connected,
# or after the first byte of a later request on a kept-alive connection (``server_protocol``).
HEADER_DEADLINE_S = 30.0
JSON_TYPE = "application/json"
TOO_DEEP = f"the body is nested more than {MAX_NESTING_DEPTH} levels deep"
DEPTH_ALLOWED = f"at most {MAX_NESTING_DEPTH} levels of nested lists and objects"


class _Twice(dict):
    """An object in which ``key`` was given more than once."""

    key: str


def _pairs(pairs: list[tuple[str, Any]]) -> dict:
    out = dict(pairs)
    if len(out) == len(pairs):
        return out
    seen: set[str] = set()
    twice = _Twice(out)
    twice.key = next(k for k, _ in pairs if k in seen or seen.add(k))
    return twice


class _LongNumber(str):
    """A whole number written with more digits than Python reads, kept as its text."""


def _whole_number(text: str) -> int | _LongNumber:
    limit = sys.get_int_max_str_digits()
    return _LongNumber(text) if limit and len(text.lstrip("-")) > limit else int(text)


def body_problem(data: Any) -> tuple[int, list, str, str] | None:
    """(status, where, message, allowed) for a body nested too deeply, with a key given twice or a number
    too long to read, else None."""
    stack: list[tuple[Any, list]] = [(data, [])]
    while stack:
        value, path = stack.pop()
        if isinstance(value, _LongNumber):
            limit = sys.get_int_max_str_digits()
            return 422, path, f"a number written with {len(value.lstrip('-')):,} digits", (
                f"a number of at most {limit:,} digits")
        if not isinstance(value, (dict, list)):
            continue
        if len(path) >= MAX_NESTING_DEPTH:
            return 400, [], TOO_DEEP, DEPTH_ALLOWED
        if isinstance(value, _Twice):
            return 422, [*path, value.key], f"the key {value.key!r} is given more than once", "each key once"
        items = value.items() if isinstance(value, dict) else enumerate(value)
        stack.extend((v, [*path, k]) for k, v in reversed(list(items)))
    return None


def late_body(deadline_s: float):
    """The 408 for a body that did not arrive in time; the connection is closed after it, since the
    rest of the body may still come."""
    return http_error(408, f"the request body did not arrive within {deadline_s:g} s", loc=("body",),
                      allowed=f"the whole body within {deadline_s:g} s of the request's headers",
                      headers={"connection": "close"})


BODY_STATE = "body"  # the request's body bytes, kept in the scope's state for its errors (``api_keys.as_sent``)


class JsonBody:
    """The checks above on every request with a body; the body then reaches the route as it came.
    ``deadline_s``: how long the whole body may take to arrive (``BODY_DEADLINE_S``)."""

    def __init__(self, app: ASGIApp, deadline_s: float = BODY_DEADLINE_S) -> None:
        self.app = app
        self.deadline_s = deadline_s

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("method") not in ("POST", "PUT", "PATCH"):
            return await self.app(scope, receive, send)
        chunks, more = [], True
        try:
            async with asyncio.timeout(self.deadline_s):
                while more:
                    message = await receive()
                    if message["type"] != "http.request":
                        return  # the client has gone before sending its body
                    chunks.append(message.get("body", b""))
                    more = message.get("more_body", False)
        except BodyTooLarge as exc:
            return await http_exception_response(exc)(scope, receive, send)
        except TimeoutError:
            return await late_body(self.deadline_s)(scope, receive, send)
        body = b"".join(chunks)
        scope.setdefault("state", {})[BODY_STATE] = body  # an error names a key as the body sent it (api_keys.as_sent)
        # a body past the ordinary limit (only the measurements upload takes one: up to 16 MiB, 0.2 s to read
        # here) is read in the threadpool, not in the event loop every other request waits on
        big = len(body) > MAX_BODY_BYTES
        refusal = await anyio.to_thread.run_sync(self._refusal, scope, body) if big else self._refusal(scope, body)
        if refusal is not None:
            return await refusal(scope, receive, send)
        sent = False

        async def replay() -> Message:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()  # after the body: the disconnect, when the client goes

        await self.app(scope, replay, send)

    @staticmethod
    def _refusal(scope: Scope, body: bytes):
        if not body.strip():
            return None  # no body: the route says what it needs
        media = dict(scope["headers"]).get(b"content-type", b"").split(b";")[0].strip().lower().decode("latin-1")
        if media != JSON_TYPE and not media.endswith("+json"):
            return http_error(415, f"the body is sent as {media or 'no Content-Type'}: the API reads JSON",
                              loc=("header", "content-type"), allowed=JSON_TYPE)
        try:
            data = json.loads(body, object_pairs_hook=_pairs, parse_int=_whole_number)
        except RecursionError:
            return http_error(400, TOO_DEEP, loc=("body",), allowed=DEPTH_ALLOWED)
        except UnicodeDecodeError as exc:
            return http_error(400, f"the body is not UTF-8 (byte 0x{exc.object[exc.start]:02x} at position "
                                   f"{exc.start})", loc=("body",), allowed="JSON in UTF-8")
        except ValueError:
            return None  # not JSON: the route's parser says where it stops being JSON
        problem = body_problem(data)
        if problem is None:
            return None
        status, where, message, allowed = problem
        kind = "http_400" if status == 400 else "duplicate_key" if message.startswith("the key") else "number_too_long"
        return error_response(status, [error_item(["body", *where], message, kind, allowed)])
