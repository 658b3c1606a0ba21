"""Counts read as whole numbers where they are counts, and a latency without bound said in words."""

import math
import re

import pytest
from typer.testing import CliRunner

from inferplan.report.numbers import UNBOUNDED_NOTE, milliseconds_text, whole_count_text
from inferplan.shells.cli import app


@pytest.mark.parametrize(("count", "text"), [(23.0, "23"), (18.9, "18"), (22.9999999999, "23"), (1234.5, "1,234"),
                                             (1.0, "1"), (0.62, "0.62 of one")])
def test_a_count_held_as_a_fraction_is_the_whole_ones(count, text):
    assert whole_count_text(count) == text


def test_an_infinite_latency_is_unbounded_in_words():
    assert milliseconds_text(math.inf) == "unbounded" and milliseconds_text(0.0577) == "57.7"
    assert UNBOUNDED_NOTE.startswith("unbounded: the load exceeds")


def test_an_overloaded_simulation_prints_its_approximation_as_unbounded_not_inf():
    done = CliRunner().invoke(app, ["simulate", "--model", "qwen3-8b", "--gpu", "h100", "--request-rate", "200",
                                    "--input-len", "2k", "--output-len", "512", "--requests", "500"],
                              prog_name="inferplan", env={"COLUMNS": "200"})
    assert done.exit_code == 0, done.output
    approx = [line for line in done.output.splitlines() if " approx " in line]
    assert approx and all("unbounded" in line for line in approx)
    assert not re.search(r"\binf\b", done.output) and UNBOUNDED_NOTE in done.output


def test_the_homelab_rows_say_requests_at_once_as_whole_numbers(tmp_path):
    from fastapi.testclient import TestClient

    from inferplan.shells.api import create_app

    rows = TestClient(create_app(tmp_path / "h.db")).post("/api/views/homelab", json={"gpu": "h100", "gpus": 1}).json()
    counted = [r["at_once"] for r in rows["rows"] if r["at_once"] != "—"]
    assert counted and all(re.fullmatch(r"[\d,]+", c) for c in counted), counted
