"""uvicorn's HTTP/1.1 protocol (h11) with the one reply it writes before the app runs in the API's error shape.

A request h11 cannot read — a ``Content-Length`` that is not one whole number (``abc``, ``-1``, ``1, 2``,
``0x10``), a malformed request line or header — never reaches the app: uvicorn answers it with a plain-text
400, "Invalid HTTP request received.", and closes the connection. ``serve`` runs this protocol instead
(uvicorn's ``http`` setting takes a protocol class), whose 400 is the JSON every other error is
(``api_guard.error_response``); the connection is closed as before.
"""

from __future__ import annotations

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from inferplan.shells.api_guard import error_item, error_response

UNREADABLE = "the request is not HTTP/1.1 this server can read (a malformed request line or header)"
READABLE = ("a request line, then headers of a name and a value each; a Content-Length of one whole number of "
            "bytes, or Transfer-Encoding: chunked")


class JsonErrorsH11(H11Protocol):
    """uvicorn's h11 protocol, its 400 for an unreadable request written as the API's JSON error."""

    def send_400_response(self, msg: str) -> None:
        body = error_response(400, [error_item(["header"], UNREADABLE, "http_400", READABLE)]).body
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                   (b"connection", b"close")]
        for event in (h11.Response(status_code=400, headers=headers, reason=b"Bad Request"), h11.Data(data=body),
                      h11.EndOfMessage()):
            self.transport.write(self.conn.send(event))
        self.transport.close()
