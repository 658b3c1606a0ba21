"""A request body is JSON, said so, and means one thing: checked before a route parses it.

- A body sent as anything but ``application/json`` (``text/plain``, a form, no Content-Type) gets a
  415 naming the type the API takes, not pydantic's "Input should be a valid dictionary".
- A key given twice in one object gets a 422 naming the key and where it sits: JSON parsers keep the
  last one without a word, so ``{"model": "qwen3-8b", "model": "deepseek-v3"}`` would plan
  DeepSeek-V3 (scenario files refuse duplicate keys the same way).
- Lists and objects nested more than ``MAX_NESTING_DEPTH`` levels (the bound input files have) get a
  400 naming it; the check walks the body without recursing.
"""

from __future__ import annotations

import json
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from inferplan.input_files import MAX_NESTING_DEPTH
from inferplan.shells.api_guard import BodyTooLarge, error_item, error_response, http_error, http_exception_response

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


def body_problem(data: Any) -> tuple[int, list, str, str] | None:
    """(status, where, message, allowed) for a body nested too deeply or with a key given twice, else None."""
    stack: list[tuple[Any, list]] = [(data, [])]
    while stack:
        value, path = stack.pop()
        if not isinstance(value, (dict, list)):
            continue
        if len(path) >= MAX_NESTING_DEPTH:
            return 400, [], TOO_DEEP, DEPTH_ALLOWED
        if isinstance(value, _Twice):
            return 422, [*path, value.key], f"the key {value.key!r} is given more than once", "each key once"
        items = value.items() if isinstance(value, dict) else enumerate(value)
        stack.extend((v, [*path, k]) for k, v in reversed(list(items)))
    return None


class JsonBody:
    """The checks above on every request with a body; the body then reaches the route as it came."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("method") not in ("POST", "PUT", "PATCH"):
            return await self.app(scope, receive, send)
        chunks, more = [], True
        try:
            while more:
                message = await receive()
                if message["type"] != "http.request":
                    return  # the client has gone before sending its body
                chunks.append(message.get("body", b""))
                more = message.get("more_body", False)
        except BodyTooLarge as exc:
            return await http_exception_response(exc)(scope, receive, send)
        body = b"".join(chunks)
        refusal = self._refusal(scope, body)
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
            data = json.loads(body, object_pairs_hook=_pairs)
        except RecursionError:
            return http_error(400, TOO_DEEP, loc=("body",), allowed=DEPTH_ALLOWED)
        except ValueError:
            return None  # not JSON: the route's parser says where it stops being JSON
        problem = body_problem(data)
        if problem is None:
            return None
        status, where, message, allowed = problem
        return error_response(status, [error_item(["body", *where], message, f"http_{status}" if status == 400
                                                  else "duplicate_key", allowed)])
