"""``inferplan measurements import`` refuses a place inside a result file (a line, a missing key) on
one line that says the file and the place once; ``--json`` names the place as the field."""

import json

import pytest
from typer.testing import CliRunner

from inferplan.shells.cli import app


@pytest.mark.parametrize(("content", "fmt", "field", "place"), [
    ('{"bad json', "vllm", "line 1", "line 1, column 2: not valid JSON (Unterminated string"),
    ("{}", "vllm", "completed", "completed: missing"),
    ("concurrency,ttft_ms\n1,2\n", "csv", "line 1", "line 1: the header lacks"),
])
def test_a_refused_place_in_a_result_file_is_said_once(tmp_path, content, fmt, field, place):
    path = tmp_path / f"run.{'csv' if fmt == 'csv' else 'json'}"
    path.write_text(content)
    done = CliRunner().invoke(app, ["measurements", "import", str(path), "--gpu", "H100", "--model", "llama-3.1-8b",
                                    "--format", fmt, "--db", str(tmp_path / "m.db"), "--json"], prog_name="inferplan")
    assert done.exit_code == 2
    error = json.loads(done.stdout)["error"]
    assert error["field"] == field and error["message"].startswith(f"{path.name}: {place}")
    assert done.stderr.startswith(f"error: {path.name}: {place}"), done.stderr


def test_a_provenance_field_the_file_lacks_is_still_named_by_its_flag(tmp_path):
    path = tmp_path / "run.csv"
    path.write_text("concurrency,input_tokens,output_tokens,ttft_ms\n1,10,10,5\n")
    done = CliRunner().invoke(app, ["measurements", "import", str(path), "--model", "llama-3.1-8b",
                                    "--db", str(tmp_path / "m.db"), "--json"], prog_name="inferplan")
    assert done.exit_code == 2 and json.loads(done.stdout)["error"]["field"] == "--gpu"
    assert done.stderr.startswith("error: --gpu: run.csv: say which accelerator ran it")


def test_importing_the_same_file_twice_is_refused_on_one_line(tmp_path):
    path = tmp_path / "run.csv"
    path.write_text("concurrency,input_tokens,output_tokens,ttft_ms\n1,10,10,5\n")
    argv = ["measurements", "import", str(path), "--gpu", "H100", "--model", "llama-3.1-8b", "--db", str(tmp_path / "m.db")]
    assert CliRunner().invoke(app, argv, prog_name="inferplan").exit_code == 0
    again = CliRunner().invoke(app, [*argv, "--json"], prog_name="inferplan")
    assert again.exit_code == 2 and json.loads(again.stdout)["error"]["field"] == "file"
    assert again.stderr.startswith("error: run.csv: the same run is stored already as run 1"), again.stderr
    listed = CliRunner().invoke(app, ["measurements", "list", "--db", str(tmp_path / "m.db"), "--json"])
    assert len(json.loads(listed.stdout)["measurements"]) == 1


def test_one_run_given_twice_in_one_import_names_no_run_that_is_not_stored(tmp_path):
    # the import is all or none: the first copy is rolled back, so there is no stored run to name
    path = tmp_path / "run.csv"
    path.write_text("concurrency,input_tokens,output_tokens,ttft_ms\n1,10,10,5\n")
    argv = ["measurements", "import", str(path), str(path), "--gpu", "H100", "--model", "llama-3.1-8b",
            "--db", str(tmp_path / "m.db")]
    done = CliRunner().invoke(app, argv, prog_name="inferplan")
    assert done.exit_code == 2 and done.stderr.startswith("error: run.csv: the same run as run.csv earlier in this import")
    assert "stored already" not in done.stderr
    listed = CliRunner().invoke(app, ["measurements", "list", "--db", str(tmp_path / "m.db"), "--json"])
    assert json.loads(listed.stdout)["measurements"] == []


def test_a_run_stored_before_percentiles_were_read_is_still_the_same_run(tmp_path):
    """A run stored by an importer that read only the means (its points lack the percentile keys) is
    the same run when its file comes again with percentiles: refused, not stored twice."""
    import sqlite3

    path = tmp_path / "run.csv"
    path.write_text("concurrency,input_tokens,output_tokens,ttft_ms,ttft_p99_ms\n1,10,10,5,9\n")
    db = tmp_path / "m.db"
    argv = ["measurements", "import", str(path), "--gpu", "H100", "--model", "llama-3.1-8b", "--db", str(db)]
    assert CliRunner().invoke(app, argv, prog_name="inferplan").exit_code == 0
    with sqlite3.connect(db) as con:  # the row as the means-only importer wrote it
        body = json.loads(con.execute("SELECT body FROM measurements").fetchone()[0])
        for point in body["points"]:
            for key in ("ttft_p50_s", "ttft_p99_s", "tpot_p50_s", "tpot_p99_s", "request_rate_per_s", "requests"):
                point.pop(key, None)
        con.execute("UPDATE measurements SET body = ?", (json.dumps(body),))
    again = CliRunner().invoke(app, argv, prog_name="inferplan")
    assert again.exit_code == 2 and "the same run is stored already as run 1" in again.stderr, again.stderr


def test_a_file_holding_a_stored_runs_point_and_more_is_refused_naming_the_run(tmp_path):
    # SGLang's bench_serving appends each run to its output file: imported again, the first line's point is stored
    from pathlib import Path
    lines = (Path(__file__).parent / "data" / "measurements" / "sglang_bench_serving.jsonl").read_text().splitlines()
    path = tmp_path / "sglang.jsonl"
    path.write_text(lines[0] + "\n")
    argv = ["measurements", "import", str(path), "--gpu", "H100", "--model", "llama-3.1-8b", "--db", str(tmp_path / "m.db")]
    assert CliRunner().invoke(app, argv, prog_name="inferplan").exit_code == 0
    path.write_text("\n".join(lines[:2]) + "\n")
    again = CliRunner().invoke(app, [*argv, "--json"], prog_name="inferplan")
    assert again.exit_code == 2 and json.loads(again.stdout)["error"]["field"] == "file"
    assert again.stderr.startswith("error: sglang.jsonl: point 1 (concurrency 1,"), again.stderr
    assert "stored already in run 1" in again.stderr
    listed = CliRunner().invoke(app, ["measurements", "list", "--db", str(tmp_path / "m.db"), "--json"])
    assert len(json.loads(listed.stdout)["measurements"]) == 1


def test_an_import_counts_a_files_one_point_as_one_point(tmp_path):
    path = tmp_path / "run.csv"
    path.write_text("concurrency,input_tokens,output_tokens,ttft_ms\n1,10,10,5\n")
    argv = ["measurements", "import", str(path), "--gpu", "H100", "--model", "llama-3.1-8b", "--db", str(tmp_path / "m.db")]
    done = CliRunner().invoke(app, argv, prog_name="inferplan", env={"COLUMNS": "200"})
    assert done.exit_code == 0 and "(csv, 1 point)" in done.stdout, done.output
