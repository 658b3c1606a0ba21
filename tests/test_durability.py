"""Kill the server while clients save: every acknowledged save survives and the database is sound.

`inferplan serve` with two worker processes on a free loopback port; six clients save scenarios
concurrently; the whole server (its process group) gets SIGKILL mid-write; then the SQLite file
passes `PRAGMA integrity_check`, holds every save that was answered 201, and a server restarted on
it lists them all and saves again.
"""

import os
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

pytestmark = pytest.mark.slow

SCENARIO = {"model": "llama-3.1-8b", "platform": {"system": "hgx-h100"}, "workload": {"preset": "chat-seat"},
            "target_users": 100}
CLIENTS = 6


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(db: Path, port: int) -> subprocess.Popen:
    exe = Path(sys.executable).with_name("inferplan")
    proc = subprocess.Popen([str(exe), "serve", "--host", "127.0.0.1", "--port", str(port), "--db", str(db), "--workers", "2"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        assert proc.poll() is None, "the server exited"
        try:
            if httpx.get(f"http://127.0.0.1:{port}/api/catalog", timeout=2).status_code == 200:
                return proc
        except httpx.HTTPError:
            time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGKILL)
    raise AssertionError("the server did not start")


def kill(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)


def test_acknowledged_saves_survive_a_sigkill_mid_write(tmp_path):
    db, port = tmp_path / "durable.db", free_port()
    base = f"http://127.0.0.1:{port}"
    proc = start(db, port)
    acknowledged: set[str] = set()
    lock, stop = threading.Lock(), threading.Event()

    def client(i: int) -> None:
        with httpx.Client(base_url=base, timeout=30) as http:
            n = 0
            while not stop.is_set():
                name = f"client {i} save {n}"
                try:
                    r = http.post("/api/scenarios", json={"name": name, "scenario": {**SCENARIO, "target_users": 100 + n}})
                except httpx.HTTPError:
                    return  # the server is gone
                if r.status_code == 201:
                    with lock:
                        acknowledged.add(name)
                n += 1

    threads = [threading.Thread(target=client, args=(i,)) for i in range(CLIENTS)]
    try:
        for t in threads:
            t.start()
        deadline = time.monotonic() + 60
        while len(acknowledged) < 60 and time.monotonic() < deadline:
            time.sleep(0.05)
        kill(proc)  # mid-write: the clients are still saving
    finally:
        stop.set()
        kill(proc)
        for t in threads:
            t.join(timeout=60)
    assert len(acknowledged) >= 20, "too few saves before the kill to prove anything"

    with sqlite3.connect(db) as con:
        assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        stored = {row[0] for row in con.execute("SELECT name FROM scenarios")}
    assert acknowledged <= stored, sorted(acknowledged - stored)
    print(f"{len(acknowledged)} saves acknowledged before the SIGKILL, {len(stored)} rows stored, all acknowledged present")

    proc = start(db, port)
    try:
        listed = {s["name"] for s in httpx.get(base + "/api/scenarios", timeout=30).json()}
        assert acknowledged <= listed
        r = httpx.post(base + "/api/scenarios", json={"name": "after the restart", "scenario": SCENARIO}, timeout=30)
        assert r.status_code == 201
    finally:
        kill(proc)
