"""catalog show names a sourced number keyed by an enum by the key's value (peak_flop_per_s.bf16), which fits an
80-column table, not the enum's Python name (ComputeDtype.BF16)."""

from typer.testing import CliRunner

from inferplan.catalog.provenance import iter_sourced
from inferplan.shells.cli import app


def test_flop_rates_are_named_by_their_dtype(catalog):
    paths = [p for p, _ in iter_sourced(catalog.accelerator("b300")) if p.startswith("peak_flop_per_s")]
    assert "peak_flop_per_s.bf16" in paths and not any("ComputeDtype" in p for p in paths)


def test_catalog_show_at_80_columns_keeps_the_dtype():
    done = CliRunner().invoke(app, ["catalog", "show", "b300"], prog_name="inferplan", env={"COLUMNS": "80"})
    assert done.exit_code == 0 and "peak_flop_per_s.bf16" in done.stdout and "ComputeD" not in done.stdout
