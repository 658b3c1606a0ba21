"""Helpers for tests that run an acceptance pack's import line: a result file measured off the pack's predictions,
and what ``validate --mine`` predicts for the stored run beside what the pack predicted."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from inferplan.shells.cli import app

FIGURES = ("ttft_s", "tpot_s", "output_tokens_per_s_total")


def result_file(out: Path, predictions: dict) -> Path:
    """A benchmark result at the pack's lengths and concurrencies (the documented CSV), measured off the predictions."""
    rows = ["concurrency,input_tokens,output_tokens,ttft_ms,tpot_ms,output_tokens_per_s"]
    rows += [f"{p['concurrency']},{p['input_tokens']},{p['output_tokens']},{p['ttft_s'] * 1.1e3:.3f},"
             f"{p['tpot_s'] * 0.9e3:.4f},{p['output_tokens_per_s_total'] * 1.05:.2f}" for p in predictions["predictions"]]
    (out / "results").mkdir(exist_ok=True)
    path = out / "results" / "run.csv"
    path.write_text("\n".join(rows) + "\n")
    return path


def run_the_import_line(out: Path, predictions: dict, line: list[str], db: Path) -> dict:
    """The pack's README import line run on ``result_file``, its engine version filled in: the stored run."""
    assert line[:4] == ["inferplan", "measurements", "import", "results/*"] and line[-1] == "<version>"
    r = CliRunner().invoke(app, [str(a) for a in (*line[1:3], result_file(out, predictions), *line[4:-1], "0.11.0",
                                                  "--db", db, "--json")])
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)["imported"][0]


def compared(db: Path) -> dict[int, dict[str, float]]:
    """What ``validate --mine`` predicts for the one stored run, per concurrency."""
    r = CliRunner().invoke(app, ["validate", "--mine", "--db", str(db), "--json"])
    assert r.exit_code == 0, r.output
    (mine,) = json.loads(r.stdout)["mine"]
    return {p["concurrency"]: {m["metric"]: m["predicted"] for m in p["metrics"]} for p in mine["points"]}


def predicted(predictions: dict) -> dict[int, dict[str, float]]:
    """The pack's predictions (predictions.json), per concurrency."""
    return {p["concurrency"]: {k: p[k] for k in FIGURES} for p in predictions["predictions"]}
