"""uvicorn's HTTP/1.1 protocol (h11) with the replies it writes before the app runs in the API's error shape.

A request h11 cannot read — a ``Content-Length`` that is not one whole number (``abc``, ``-1``, ``1, 2``,
``0x10``), a malformed request line or header — never reaches the app: uvicorn answers it with a plain-text
400, "Invalid HTTP request received.", and closes the connection. ``serve`` runs this protocol instead
(uvicorn's ``http`` setting takes a protocol class), whose 400 is the JSON every other error is
(``api_guard.error_response``); the connection is closed as before.

uvicorn sets no limit on the time a request's headers take: a client that connects and sends
``POST /api/fit HTTP/1.1`` and one header, then nothing, holds its connection for ever. This protocol gives the
headers ``api_body.HEADER_DEADLINE_S`` from the connection (or from the first byte of a later request on a
kept-alive connection) and answers a 408 in the same shape when they have not ended by then, then closes the
connection; the body has its own deadline after them (``api_body.BODY_DEADLINE_S``).
"""

from __future__ import annotations

import asyncio

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from inferplan.shells.api_body import HEADER_DEADLINE_S
from inferplan.shells.api_guard import error_item, error_response

UNREADABLE = "the request is not HTTP/1.1 this server can read (a malformed request line or header)"
READABLE = ("a request line, then headers of a name and a value each; a Content-Length of one whole number of "
            "bytes, or Transfer-Encoding: chunked")


def _json_headers(body: bytes) -> list[tuple[bytes, bytes]]:
    return [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
            (b"connection", b"close")]


class JsonErrorsH11(H11Protocol):
    """uvicorn's h11 protocol, its 400 for an unreadable request written as the API's JSON error, and a 408 for
    headers not ended ``header_deadline_s`` after they began."""

    header_deadline_s = HEADER_DEADLINE_S
    _headers_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._start_header_clock()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self.conn.their_state is h11.IDLE:
            self._start_header_clock()  # a request begun on a kept-alive connection: its headers' clock runs
        else:
            self._stop_header_clock()  # the headers have ended (the body has its own deadline: api_body)

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_header_clock()
        super().connection_lost(exc)

    def _start_header_clock(self) -> None:
        if self._headers_timer is None:
            self._headers_timer = self.loop.call_later(self.header_deadline_s, self._headers_late)

    def _stop_header_clock(self) -> None:
        if self._headers_timer is not None:
            self._headers_timer.cancel()
            self._headers_timer = None

    def _headers_late(self) -> None:
        """The 408, written as bytes: h11 sends no response before it has read a request."""
        self._headers_timer = None
        if self.transport.is_closing() or self.conn.their_state is not h11.IDLE:
            return
        limit = f"{self.header_deadline_s:g} s"
        body = error_response(408, [error_item(["header"], f"the request's headers did not arrive within {limit}",
                                               "http_408", f"the request line and every header within {limit}")]).body
        head = b"".join(name + b": " + value + b"\r\n" for name, value in _json_headers(body))
        self.transport.write(b"HTTP/1.1 408 Request Timeout\r\n" + head + b"\r\n" + body)
        self.transport.close()

    def send_400_response(self, msg: str) -> None:
        self._stop_header_clock()
        body = error_response(400, [error_item(["header"], UNREADABLE, "http_400", READABLE)]).body
        for event in (h11.Response(status_code=400, headers=_json_headers(body), reason=b"Bad Request"),
                      h11.Data(data=body), h11.EndOfMessage()):
            self.transport.write(self.conn.send(event))
        self.transport.close()
