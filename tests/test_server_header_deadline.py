"""A client that never finishes its request's headers gets a 408 in the API's error shape and its connection
closed, instead of holding the connection for ever (shells/server_protocol.py: uvicorn sets no such limit).
Against a real uvicorn running the protocol ``inferplan serve`` runs, its deadline made short."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import httpx
import pytest

from inferplan.shells.api import create_app
from inferplan.shells.api_body import HEADER_DEADLINE_S
from inferplan.shells.server_protocol import JsonErrorsH11
from live_server import serving

DEADLINE_S = 0.5
WAIT_S = 20  # how long the test waits for an answer: far past the deadline, below the default one


class ShortHeaders(JsonErrorsH11):
    header_deadline_s = DEADLINE_S


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    with serving(lambda _port: create_app(tmp_path_factory.mktemp("hdr") / "h.db"), http=ShortHeaders) as url:
        yield url


def _reply_to(base: str, sent: bytes) -> tuple[bytes, bytes]:
    """What the server answers once ``sent`` and nothing more has come, read until it closes the connection."""
    port = int(base.rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port), timeout=WAIT_S) as s:
        s.sendall(sent)
        reply = b""
        while chunk := s.recv(65536):
            reply += chunk
    head, _, body = reply.partition(b"\r\n\r\n")
    return head, body


def _error(head: bytes, body: bytes) -> dict:
    assert head.startswith(b"HTTP/1.1 408 "), head
    assert b"connection: close" in head.lower() and b"content-type: application/json" in head.lower(), head
    return json.loads(body)


def test_headers_that_never_end_get_a_408_and_the_connection_closes(base):
    host = base.removeprefix("http://")
    error = _error(*_reply_to(base, f"POST /api/fit HTTP/1.1\r\nHost: {host}\r\n".encode()))
    assert error["error"] == {"field": None,
                              "message": f"the request's headers did not arrive within {DEADLINE_S:g} s",
                              "allowed": f"the request line and every header within {DEADLINE_S:g} s"}
    assert error["detail"][0]["loc"] == ["header"] and error["detail"][0]["type"] == "http_408"


def test_a_later_request_on_a_kept_alive_connection_has_the_same_deadline(base):
    host, port = base.removeprefix("http://"), int(base.rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port), timeout=WAIT_S) as s:
        s.sendall(f"GET /api/catalog HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
        first = b""
        while b"\r\n\r\n" not in first or not first.endswith(b"]"):  # the catalogue's kinds, a JSON list
            first += s.recv(65536)
        assert first.startswith(b"HTTP/1.1 200 "), first[:200]
        s.sendall(b"GET /api/catalog HTTP/1.1\r\n")  # the next request, its headers never ended
        reply = b""
        while chunk := s.recv(65536):
            reply += chunk
    _error(*reply.partition(b"\r\n\r\n")[::2])


def test_headers_sent_in_time_reach_the_app(base):
    r = httpx.post(base + "/api/fit", json={"model": "qwen3-8b", "gpu": "h100-sxm"}, timeout=WAIT_S)
    assert r.status_code == 200, r.text[:300]


def test_the_default_deadline_is_the_documented_one():
    docs = Path(__file__).resolve().parents[1] / "docs" / "reliability.md"
    assert f"`HEADER_DEADLINE_S` = {HEADER_DEADLINE_S:g} s" in docs.read_text()
    assert JsonErrorsH11.header_deadline_s == HEADER_DEADLINE_S
