"""``inferplan serve``: uvicorn with one or more worker processes around ``api.create_app``.

Each worker builds its own app (``app_from_env``) from what ``serve`` puts in the environment —
the SQLite file and the Host names to answer — since uvicorn starts workers from an import path,
not from an app object. The store is safe across processes (store.py: WAL, ``BEGIN IMMEDIATE``,
``busy_timeout``).
"""

from __future__ import annotations

import os
import socket
from pathlib import Path

from fastapi import FastAPI

from inferplan.shells.api_guard import is_loopback, loopback_hosts

ENV_DB = "INFERPLAN_SERVE_DB"
ENV_HOSTS = "INFERPLAN_SERVE_ALLOWED_HOSTS"  # comma-separated; absent: any Host
HTTP_PROTOCOL = "inferplan.shells.server_protocol:JsonErrorsH11"  # uvicorn's h11, its 400 before the app as JSON


def default_workers() -> int:
    """One worker per CPU this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def allowed_hosts(host: str, port: int) -> tuple[str, ...] | None:
    """Bound to loopback: only loopback names and the address bound (DNS rebinding defence); bound
    elsewhere: any Host."""
    if not is_loopback(host):
        return None
    bound = f"[{host}]" if ":" in host else host
    return tuple(dict.fromkeys((*loopback_hosts(port), bound, f"{bound}:{port}")))


def app_from_env() -> FastAPI:
    from inferplan.catalog.loader import load_catalog
    from inferplan.shells.api import create_app

    hosts = os.environ.get(ENV_HOSTS)
    app = create_app(os.environ.get(ENV_DB) or None, allowed_hosts=hosts.split(",") if hosts else None)
    load_catalog()  # read the catalogue before the first request, not during it
    return app


def bind_error(host: str, port: int) -> OSError | None:
    """Why ``host:port`` cannot be listened on (another server holds the port — vLLM's default is 8000
    too —, a privileged port, or the address is not this machine's), else None: tried before the workers start,
    so the refusal (``listen.check_listen``) is one line instead of uvicorn's log after the calculator's address
    was printed."""
    try:
        family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds it
            probe.bind((host, port))
    except OSError as exc:  # socket.gaierror included: a host name that does not resolve
        return exc
    return None


def serve(host: str, port: int, db: Path | None, workers: int) -> None:
    import uvicorn

    os.environ[ENV_DB] = str(db) if db else ""
    hosts = allowed_hosts(host, port)
    if hosts:
        os.environ[ENV_HOSTS] = ",".join(hosts)
    else:
        os.environ.pop(ENV_HOSTS, None)
    uvicorn.run("inferplan.shells.server:app_from_env", factory=True, host=host, port=port, workers=workers,
                log_level="warning", http=HTTP_PROTOCOL)
