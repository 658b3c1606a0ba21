"""An app served by a real uvicorn on a free loopback port, in a thread, for tests that need a real
HTTP server (a browser, a raw socket)."""

import contextlib
import socket
import threading
import time

import httpx


@contextlib.contextmanager
def serving(make_app, **config):
    """The base URL of ``make_app(port)`` served on a free loopback port, for as long as the block runs
    (``config``: more of uvicorn's settings)."""
    import uvicorn

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    srv = uvicorn.Server(uvicorn.Config(make_app(port), host="127.0.0.1", port=port, log_level="warning", **config))
    thread = threading.Thread(target=srv.run, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{port}"
    for _ in range(100):
        try:
            httpx.get(base + "/api/catalog", timeout=1)
            break
        except httpx.HTTPError:
            time.sleep(0.1)
    try:
        yield base
    finally:
        srv.should_exit = True
        thread.join(timeout=10)

