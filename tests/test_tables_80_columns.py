"""At 80 columns the measurements list, racks and simulate tables cut no id and no number ("1,142,37…"):
ids stay whole (or fold onto a second line), numbers whole, headers short."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

INFERPLAN = str(Path(sys.executable).parent / "inferplan")
DATA = Path(__file__).resolve().parent / "data" / "measurements"


def at_80(*args: str) -> str:
    env = {**os.environ, "COLUMNS": "80", "LINES": "50"}
    done = subprocess.run([INFERPLAN, *args], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert all(len(line) <= 80 for line in done.stdout.splitlines()), done.stdout
    return done.stdout


def test_measurements_list_keeps_ids_dates_and_models_whole(tmp_path):
    db = str(tmp_path / "m.db")
    subprocess.run([INFERPLAN, "measurements", "import", str(DATA / "vllm_bench_serve_c8.json"), "--model", "llama-3.1-8b",
                    "--gpu", "h100", "--engine", "vllm", "--engine-version", "0.11.0", "--db", db], check=True,
                   capture_output=True)
    out = at_80("measurements", "list", "--db", db)
    assert "…" not in out and "llama-3.1-8b" in out and "h100-sxm" in out
    assert any(ch.isdigit() for ch in out.split("│")[2])  # the date column, whole: 2026-…


def test_racks_cut_no_number_and_no_id():
    out = at_80("racks")
    assert "…" not in out
    joined = out.replace("│\n│", "")  # a folded id continues on the next line of its cell
    racks = json.loads(subprocess.run([INFERPLAN, "racks", "--json"], capture_output=True, text=True, check=True).stdout)
    for row in racks["rows"]:
        assert row["profile"][:20] in joined


def test_simulate_shows_seven_digit_milliseconds_whole():
    args = ("simulate", "--model", "qwen3-8b", "--gpu", "h100", "--request-rate", "50", "--input-len", "4000",
            "--output-len", "16000", "--requests", "600", "--seed", "0")  # overloaded: latencies past 1,000 s
    out = at_80(*args)
    assert "…" not in out
    report = json.loads(subprocess.run([INFERPLAN, *args, "--json"], capture_output=True, text=True, check=True).stdout)
    assert report["simulation"]["e2e_p99_s"] > 1000
    assert f"{report['simulation']['e2e_p99_s'] * 1e3:,.1f}" in out
