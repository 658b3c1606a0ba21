"""validate --latency labels each row with the unit its figures are printed in ("TTFT p50 (ms)"), not the field's
name in seconds (ttft_p50_s)."""

import pytest
from rich.console import Console
from typer.testing import CliRunner

from inferplan.shells.cli import app
from inferplan.shells.render_latency import print_latency_validation
from inferplan.validation.latency import validate_latency
from test_tail_validation import latency_sample


def _labelled(text: str) -> bool:
    return "TTFT p50 (ms)" in text and "TPOT p99 (ms)" in text and "ttft_p50_s" not in text


def test_latency_rows_are_labelled_in_milliseconds(catalog):
    console = Console(width=200, record=True)
    print_latency_validation(console, validate_latency(latency_sample(catalog)))
    assert _labelled(console.export_text())


@pytest.mark.slow
def test_the_command_labels_every_point_in_milliseconds():
    done = CliRunner().invoke(app, ["validate", "--latency"], prog_name="inferplan", env={"COLUMNS": "200"})
    assert done.exit_code == 0 and _labelled(done.stdout)
