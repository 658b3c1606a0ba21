"""A result file that reads as JSON (first byte ``{`` or ``[``, once decompressed) but does not parse is refused
naming the file, "not valid JSON", the line and column the parser stopped at and its message, by the library,
the CLI and the API; a JSON-lines file names the line of the bad record. Other broken files: an empty one, and
a whole number longer than Python converts."""

import gzip
import json
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from inferplan.catalog.loader import load_catalog
from inferplan.errors import InvalidScenarioError
from inferplan.measurements.records import RunProvenance, read_run
from inferplan.shells.api import create_app
from inferplan.shells.cli import app

DATA = Path(__file__).parent / "data" / "measurements"
SGLANG_RUN = (DATA / "sglang_bench_serving.jsonl").read_bytes().splitlines()[0]
GIVEN = RunProvenance(model="llama-3.1-8b", gpu="h100")
BROKEN = [  # name, bytes, the message after "<name>: ", its field
    ("keys.json", b'{"foo": 1,,}', "line 1, column 11: not valid JSON (Expecting property name enclosed in double quotes)",
     "line 1"),
    ("vllm.json", b'{"mean_ttft_ms": 1,\n "output_throughput": "ab', "line 2, column 23: not valid JSON "
     "(Unterminated string starting at)", "line 2"),
    ("run.jsonl", SGLANG_RUN + b'\n\n{"completed": 2, \n', "line 3, column 18: not valid JSON (Expecting property "
     "name enclosed in double quotes); one run per line", "line 3"),
    ("keys.json.gz", gzip.compress(b'[{"foo": 1}\n{"bar"'), "line 2, column 1: not valid JSON (Expecting ',' delimiter)",
     "line 2"),
    ("empty.json", b" \n", "the file is empty (nothing but white space)", "file"),
    ("long.json", b'{"mean_ttft_ms": 1' + b"0" * 5000 + b', "output_throughput": 1}',
     "line 1: not read as JSON: a whole number of more than 4,300 digits", "line 1"),
]


@pytest.mark.parametrize(("name", "data", "said", "field"), BROKEN)
def test_the_library_says_a_file_is_not_valid_json_where(name, data, said, field):
    with pytest.raises(InvalidScenarioError) as info:
        read_run(load_catalog(), name, data, GIVEN)
    assert str(info.value).startswith(f"{name}: {said}"), str(info.value)
    assert info.value.field == field


@pytest.mark.parametrize(("name", "data", "said", "field"), BROKEN[:3])
def test_the_cli_refuses_a_file_that_is_not_valid_json_with_exit_2(tmp_path, name, data, said, field):
    path = tmp_path / name
    path.write_bytes(data)
    done = CliRunner().invoke(app, ["measurements", "import", str(path), "--gpu", "H100", "--model", "llama-3.1-8b",
                                    "--db", str(tmp_path / "m.db"), "--json"], prog_name="inferplan")
    assert done.exit_code == 2
    assert json.loads(done.stdout)["error"]["message"].startswith(f"{name}: {said}"), done.stdout


def test_the_api_names_the_file_content_that_is_not_valid_json(tmp_path):
    client = TestClient(create_app(tmp_path / "t.db"))
    files = [{"name": "c8.json", "content": (DATA / "vllm_bench_serve_c8.json").read_text()},
             {"name": "keys.json", "content": '{"foo": 1,,}'}]
    r = client.post("/api/measurements", json={"files": files, "provenance": {"model": "llama-3.1-8b", "gpu": "h100"}})
    assert r.status_code == 422, r.text
    error = r.json()["error"]
    assert error["field"] == "files.1.content"
    assert error["message"].startswith("keys.json: line 1, column 11: not valid JSON (Expecting property name"), error


def test_a_json_list_of_results_is_said_to_be_one_rather_than_of_no_client():
    run = (DATA / "vllm_bench_serve_c8.json").read_text()
    with pytest.raises(InvalidScenarioError) as info:
        read_run(load_catalog(), "runs.json", f"[{run}, {run}]".encode(), GIVEN)
    assert str(info.value).startswith("runs.json: a JSON list that is not llama-bench -o json's tests"), str(info.value)
    assert "import each result as a file of its own" in str(info.value) and info.value.field == "format"
