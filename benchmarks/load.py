"""Load on POST /api/plan over loopback (a benchmark, not a test).

Starts `inferplan serve` on a free 127.0.0.1 port with a fresh database, runs CLIENTS concurrent
httpx clients (asyncio tasks) for SECONDS — at most MAX_REQUESTS in all — then stops the server and
prints requests, errors, throughput and latency percentiles. Each request asks the web page's
question (draws 2000) with its own target_users, so no two requests are the same plan (no cached
answer); --same sends one body throughout.

Target (issue 28): 50 clients x 30 s, 0 errors, p99 <= 1 s on a 2-core machine.
Run: .venv/bin/python benchmarks/load.py [--clients 50] [--seconds 30] [--workers N] [--same]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

MAX_REQUESTS = 200_000
SCENARIO = {"model": "llama-3.3-70b", "quantization": "fp8", "platform": {"system": "hgx-h100"},
            "workload": {"preset": "chat-seat"}, "target_users": 2000}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(port: int, db: Path, workers: int | None) -> subprocess.Popen:
    exe = shutil.which("inferplan", path=os.path.dirname(sys.executable)) or "inferplan"
    cmd = [exe, "serve", "--host", "127.0.0.1", "--port", str(port), "--db", str(db)]
    if workers:
        cmd += ["--workers", str(workers)]
    # its own process group, so that stopping it reaches its worker processes and nothing else
    return subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)


def wait_until_up(base: str, proc: subprocess.Popen, timeout_s: float = 90) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the server exited: {proc.stderr.read().decode()[-2000:]}")
        try:
            if httpx.get(base + "/api/catalog", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise RuntimeError("the server did not answer in time")


def group_cpu_s(pgid: int) -> float:
    """CPU seconds used so far by the live processes of a process group (the server and its workers)."""
    total = 0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid:  # fields after the name: state ppid pgrp ... utime(11) stime(12)
            total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


def stop_server(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGINT)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


async def hammer(base: str, clients: int, seconds: float, same: bool) -> tuple[list[float], list[float], dict[str, int]]:
    latencies: list[float] = []
    starts: list[float] = []
    errors: dict[str, int] = {}
    stop_at = time.monotonic() + seconds
    counter = iter(range(MAX_REQUESTS))
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)

    async with httpx.AsyncClient(base_url=base, timeout=60, limits=limits) as client:
        async def one_client() -> None:
            for n in counter:
                if time.monotonic() >= stop_at:
                    return
                scenario = SCENARIO if same else {**SCENARIO, "target_users": 1000 + n}
                t0 = time.perf_counter()
                try:
                    r = await client.post("/api/plan", json={"scenario": scenario, "draws": 2000})
                    if r.status_code != 200:
                        errors[str(r.status_code)] = errors.get(str(r.status_code), 0) + 1
                except httpx.HTTPError as exc:
                    errors[type(exc).__name__] = errors.get(type(exc).__name__, 0) + 1
                latencies.append(time.perf_counter() - t0)
                starts.append(t0)

        await asyncio.gather(*(one_client() for _ in range(clients)))
    return starts, latencies, errors


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=30)
    parser.add_argument("--workers", type=int, default=None, help="server worker processes (default: serve's, one per CPU)")
    parser.add_argument("--same", action="store_true", help="send one body throughout (cached answers)")
    args = parser.parse_args()

    port = free_port()
    base = f"http://127.0.0.1:{port}"
    with tempfile.TemporaryDirectory(prefix="inferplan-load-") as tmp:
        proc = start_server(port, Path(tmp) / "load.db", args.workers)
        try:
            wait_until_up(base, proc)
            cpu0, client0, t0 = group_cpu_s(proc.pid), time.process_time(), time.perf_counter()
            starts, latencies, errors = asyncio.run(hammer(base, args.clients, args.seconds, args.same))
            wall = time.perf_counter() - t0
            server_cpu, client_cpu = group_cpu_s(proc.pid) - cpu0, time.process_time() - client0
        finally:
            stop_server(proc)
    n = len(latencies)
    first = min(starts)
    for second in range(int(args.seconds) + 1):  # a tail all along, or only while the workers warm up?
        window = [lat for t, lat in zip(starts, latencies) if second <= t - first < second + 1]
        if window:
            print(f"  second {second:3d}: {len(window):5d} requests, p50 {1e3 * percentile(window, 0.5):5.0f} ms, "
                  f"max {1e3 * max(window):5.0f} ms")
    print(f"POST /api/plan, {args.clients} clients x {args.seconds:g} s, workers {args.workers or 'default'}, "
          f"{'one body' if args.same else 'distinct bodies'}: {n} requests, {sum(errors.values())} errors {errors or ''}, "
          f"{n / wall:.1f} req/s, p50 {1e3 * percentile(latencies, 0.5):.0f} ms, p99 {1e3 * percentile(latencies, 0.99):.0f} ms, "
          f"max {1e3 * max(latencies):.0f} ms; CPU {1e3 * server_cpu / max(n, 1):.1f} ms a request in the server, "
          f"{1e3 * client_cpu / max(n, 1):.1f} ms in the clients; load average {os.getloadavg()[0]:.2f} (shared machine)")


if __name__ == "__main__":
    main()
