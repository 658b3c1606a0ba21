"""A request body that never arrives in full (shells/api_body.py): a client announcing
``Content-Length: 1000`` and sending 9 bytes gets a 408 in the usual error shape and its connection
closed, instead of holding a connection and a request task open for ever. Against a real uvicorn,
with the deadline made short through ``create_app(body_deadline_s=...)``."""

import json
import socket
import urllib.parse

import httpx
import pytest

import live_server
from inferplan.shells.api import create_app
from inferplan.shells.api_body import BODY_DEADLINE_S

DEADLINE_S = 0.5
WAIT_S = 20  # how long the test waits for an answer: far past the deadline, far below the default one


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    db = tmp_path_factory.mktemp("deadline") / "d.db"
    with live_server.serving(lambda port: create_app(db, body_deadline_s=DEADLINE_S)) as base:
        yield base


def _send_part_of_a_body(base: str, route: str, announced: int, sent: bytes) -> tuple[bytes, bytes]:
    """What the server answers a POST whose Content-Length is ``announced`` but that sends only ``sent``,
    and what it sends after that answer (b"" once it has closed the connection)."""
    url = urllib.parse.urlsplit(base)
    with socket.create_connection((url.hostname, url.port), timeout=WAIT_S) as s:
        s.sendall(f"POST {route} HTTP/1.1\r\nHost: {url.netloc}\r\nContent-Type: application/json\r\n"
                  f"Content-Length: {announced}\r\n\r\n".encode() + sent)
        reply = b""
        while b"\r\n\r\n" not in reply or len(reply.split(b"\r\n\r\n", 1)[1]) < _length(reply):
            chunk = s.recv(65536)
            assert chunk, f"the server closed the connection without an answer: {reply!r}"
            reply += chunk
        head, body = reply.split(b"\r\n\r\n", 1)
        return head + b"\r\n\r\n" + body, s.recv(65536)


def _length(reply: bytes) -> int:
    head = reply.split(b"\r\n\r\n", 1)[0].decode("latin-1").lower()
    return next((int(line.split(":", 1)[1]) for line in head.split("\r\n") if line.startswith("content-length:")), 0)


@pytest.mark.parametrize("route", ["/api/fit", "/api/scenarios", "/api/measurements"])
def test_a_body_that_stops_short_gets_a_408_and_the_connection_closes(server, route):
    reply, after = _send_part_of_a_body(server, route, 1000, b'{"model":')
    head, body = reply.split(b"\r\n\r\n", 1)
    assert head.startswith(b"HTTP/1.1 408 "), head
    assert b"connection: close" in head.lower()
    error = json.loads(body)
    assert error["error"] == {"field": None, "message": f"the request body did not arrive within {DEADLINE_S:g} s",
                              "allowed": f"the whole body within {DEADLINE_S:g} s of the request's headers"}
    assert error["detail"][0]["loc"] == ["body"] and error["detail"][0]["type"] == "http_408"
    assert after == b""  # closed: the rest of the body is not waited for


def test_the_server_still_answers_a_whole_body_after_a_late_one(server):
    _send_part_of_a_body(server, "/api/fit", 50, b"{}")
    r = httpx.post(server + "/api/fit", json={"model": "qwen3-8b", "gpu": "h100-sxm"}, timeout=WAIT_S)
    assert r.status_code == 200, r.text[:300]


def test_the_default_deadline_is_the_documented_one():
    from pathlib import Path

    docs = Path(__file__).resolve().parents[1] / "docs"
    assert f"`BODY_DEADLINE_S` = {BODY_DEADLINE_S:g} s" in (docs / "reliability.md").read_text()
    assert "408" in (docs / "api.md").read_text()
