"""A request uvicorn's h11 cannot read (a malformed Content-Length) never reaches the app; the server
``inferplan serve`` runs answers it with a 400 in the API's JSON error shape, not uvicorn's plain text
(shells/server_protocol.py)."""

from __future__ import annotations

import json
import socket

import pytest

from inferplan.shells.api import create_app
from inferplan.shells.server import HTTP_PROTOCOL
from live_server import serving


def _raw(port: int, content_length: str) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(f"POST /api/scenarios HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\nConnection: close\r\n"
                  f"Content-Length: {content_length}\r\n\r\n{{}}".encode())
        reply = b""
        while chunk := s.recv(65536):  # the server closes the connection after its reply
            reply += chunk
    return reply


@pytest.fixture(scope="module")
def port(tmp_path_factory):
    with serving(lambda _port: create_app(tmp_path_factory.mktemp("proto") / "p.db"), http=HTTP_PROTOCOL) as base:
        yield int(base.rsplit(":", 1)[1])


@pytest.mark.parametrize("content_length", ["abc", "-1", "1, 2", "0x10", "", "+5"])
def test_a_malformed_content_length_is_a_json_400(port, content_length):
    head, _, body = _raw(port, content_length).partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 400 "), head
    assert b"content-type: application/json" in head.lower() and b"connection: close" in head.lower(), head
    error = json.loads(body)["error"]
    assert "not HTTP/1.1" in error["message"] and "Content-Length of one whole number" in error["allowed"], error


def test_a_readable_request_still_reaches_the_app(port):
    head, _, body = _raw(port, "2").partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 422 "), head  # the app's own refusal of {} as a scenario
    assert json.loads(body)["detail"]


def test_serve_runs_this_protocol(monkeypatch, tmp_path):
    import uvicorn

    from inferplan.shells import server

    seen = {}
    monkeypatch.setattr(uvicorn, "run", lambda target, **kw: seen.update(kw))
    for name in (server.ENV_DB, server.ENV_HOSTS):  # serve sets them: put back after the test
        monkeypatch.setenv(name, "")
    server.serve("127.0.0.1", 8125, tmp_path / "s.db", 1)
    assert seen["http"] == HTTP_PROTOCOL
    assert uvicorn.importer.import_from_string(HTTP_PROTOCOL).__name__ == "JsonErrorsH11"
