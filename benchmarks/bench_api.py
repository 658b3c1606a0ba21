"""API latency and page start-up on loopback (a benchmark, not a test).

Targets (issue #5): API p50 for /plan in milliseconds; the page interactive in under a second.
Run: .venv/bin/python benchmarks/bench_api.py   (the page timing needs Debian's chromium)
"""

from __future__ import annotations

import shutil
import socket
import statistics
import tempfile
import threading
import time

import httpx
import uvicorn

from inferplan.shells.api import create_app

SCENARIO = {"model": "llama-3.3-70b", "quantization": "fp8", "platform": {"system": "hgx-h100"},
            "workload": {"preset": "chat-seat"}, "target_users": 2000}


def main() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(create_app(tempfile.mkdtemp() + "/b.db"), port=port, log_level="warning"))
    threading.Thread(target=server.run, daemon=True).start()
    base = f"http://127.0.0.1:{port}"
    with httpx.Client(base_url=base, timeout=60) as client:
        for _ in range(100):
            try:
                client.get("/api/catalog")
                break
            except httpx.HTTPError:
                time.sleep(0.1)
        for draws in (0, 2000):
            times = []
            for _ in range(30):
                t0 = time.perf_counter()
                client.post("/api/plan", json={"scenario": SCENARIO, "draws": draws}).raise_for_status()
                times.append(time.perf_counter() - t0)
            print(f"POST /api/plan (draws={draws}): p50 {1e3 * statistics.median(times):7.1f} ms, "
                  f"p90 {1e3 * sorted(times)[int(0.9 * len(times))]:7.1f} ms")
    chromium = shutil.which("chromium")
    if chromium:
        from playwright.sync_api import sync_playwright

        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox", "--disable-gpu"])
            page = browser.new_page()
            runs = []
            for _ in range(5):
                t0 = time.perf_counter()
                page.goto(base + "/")
                page.wait_for_function("window.inferplan && window.inferplan.ready")
                runs.append(time.perf_counter() - t0)
            print(f"page interactive (controls wired): median {1e3 * statistics.median(runs):7.1f} ms")
            browser.close()
    server.should_exit = True


if __name__ == "__main__":
    main()
