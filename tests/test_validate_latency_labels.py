"""validate --latency labels each row with the unit its figures are printed in ("TTFT p50 (ms)"), not the field's
name in seconds (ttft_p50_s)."""

from typer.testing import CliRunner

from inferplan.shells.cli import app


def test_latency_rows_are_labelled_in_milliseconds():
    done = CliRunner().invoke(app, ["validate", "--latency"], prog_name="inferplan", env={"COLUMNS": "200"})
    assert done.exit_code == 0
    assert "TTFT p50 (ms)" in done.stdout and "TPOT p99 (ms)" in done.stdout and "ttft_p50_s" not in done.stdout
