"""A run whose client counted failed requests (vLLM's ``failed``, SGLang's ``errors`` with --output-details, guidellm's
``request_totals``) keeps the count in the store and says it in every view (show, list, export, validate --mine, the
API and the page's text); a run none of whose requests completed is refused naming the key."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from inferplan.errors import InvalidScenarioError
from inferplan.measurements.compare import compare_run
from inferplan.measurements.export import run_as_catalogue
from inferplan.measurements.records import RunProvenance, failed_requests, read_runs
from inferplan.shells.api import create_app
from inferplan.shells.cli import app
from inferplan.store import Store

DATA = Path(__file__).parent / "data" / "measurements"
GIVEN = RunProvenance(model="llama-3.1-8b", gpu="h100", engine="vllm", engine_version="0.11.0")
SAID = "requests failed (100 of 400 at concurrency 8)"


def _vllm(completed: int, failed: int) -> bytes:
    """The c8 vLLM result of 400 prompts with ``failed`` of them failing (its totals over the ones that completed)."""
    run = json.loads((DATA / "vllm_bench_serve_c8.json").read_text())
    run.update(completed=completed, failed=failed, total_input_tokens=1024 * completed, total_output_tokens=256 * completed)
    return json.dumps(run).encode()


def _flat(output: str) -> str:
    return " ".join(output.split())


def test_a_vllm_run_keeps_its_failed_requests_and_every_view_says_them(catalog, tmp_path):
    (run,) = read_runs(catalog, [("vllm_c8_failed.json", _vllm(300, 100))], GIVEN)
    (tmp_path / "vllm_c8_failed.json").write_bytes(_vllm(300, 100))
    assert run.points[0].failed_requests == 100 and failed_requests(run) == 100
    assert run.points[0].requests == 400 and run.points[0].input_tokens == 1024  # lengths over the completed ones
    db = tmp_path / "runs.db"
    (stored,) = Store(db).add_measurements([run])
    assert Store(db).get_measurement(stored.id).points[0].failed_requests == 100  # kept in the store
    assert compare_run(stored).notes[0].startswith(SAID)
    exported = run_as_catalogue(stored)
    assert SAID in exported["sources"][0]["note"]
    assert all("100 requests failed" in c for p in exported["speed_points"] for c in p["caveats"][-1:])

    cli = CliRunner()
    imported = cli.invoke(app, ["measurements", "import", str(tmp_path / "vllm_c8_failed.json"), "--gpu", "h100",
                                "--model", "llama-3.1-8b", "--db", str(tmp_path / "imported.db")])
    assert imported.exit_code == 0 and SAID in _flat(imported.output)  # said at import too
    for command in (["measurements", "show", "1"], ["measurements", "list"], ["validate", "--mine"]):
        shown = cli.invoke(app, [*command, "--db", str(db)], env={"COLUMNS": "80"})
        assert shown.exit_code == 0, shown.output
        assert SAID in _flat(shown.output), command
    listed = json.loads(cli.invoke(app, ["measurements", "list", "--db", str(db), "--json"]).output)
    assert listed["measurements"][0]["points"][0]["failed_requests"] == 100
    assert "failed" in _flat(cli.invoke(app, ["measurements", "export", "--db", str(db)]).output)

    client = TestClient(create_app(db))
    assert client.get("/api/measurements").json()[0]["points"][0]["failed_requests"] == 100
    assert client.get("/api/measurements/1").json()["notes"][0].startswith(SAID)
    assert SAID in client.get("/api/measurements/view").json()["texts"][0]


def test_a_run_without_failures_says_none(catalog):
    (run,) = read_runs(catalog, [("vllm_bench_serve_c8.json", (DATA / "vllm_bench_serve_c8.json").read_bytes())], GIVEN)
    assert run.points[0].failed_requests == 0 and not any("failed" in n for n in compare_run(run).notes)


def test_a_run_none_of_whose_requests_completed_is_refused_naming_the_key(catalog):
    with pytest.raises(InvalidScenarioError) as refused:
        read_runs(catalog, [("vllm_all_failed.json", _vllm(0, 400))], GIVEN)
    assert refused.value.field == "completed" and "no request completed (400 failed)" in str(refused.value)


def test_sglang_failures_are_its_errors_and_count_among_the_requests_sent(catalog):
    line = json.loads((DATA / "sglang_bench_serving.jsonl").read_text().splitlines()[0])
    line.update(max_concurrency=None, errors=[""] * line["completed"] + ["timed out"] * 20)  # --output-details
    given = GIVEN.model_copy(update={"engine": "sglang"})
    (run,) = read_runs(catalog, [("sglang.jsonl", json.dumps(line).encode())], given)
    p = run.points[0]
    assert p.failed_requests == 20 and p.requests == p.concurrency == line["completed"] + 20  # every request sent at once
    del line["errors"]  # without --output-details SGLang counts none
    (run,) = read_runs(catalog, [("sglang.jsonl", json.dumps(line).encode())], given)
    assert run.points[0].failed_requests is None and run.points[0].requests == line["completed"]


def _guidellm(**totals) -> bytes:
    report = json.loads((DATA / "guidellm_report.json").read_text())
    report["benchmarks"][0]["request_totals"] = {"successful": 90, "incomplete": 4, "errored": 6, "total": 100, **totals}
    return json.dumps(report).encode()


def test_guidellm_failures_are_its_errored_and_incomplete_requests(catalog):
    (run,) = read_runs(catalog, [("report.json", _guidellm())], GIVEN)
    assert [p.failed_requests for p in run.points] == [10, None]
    assert compare_run(run).notes[0].startswith("requests failed (10 at concurrency 4)")
    with pytest.raises(InvalidScenarioError) as refused:
        read_runs(catalog, [("report.json", _guidellm(successful=0))], GIVEN)
    assert refused.value.field == "benchmarks[0].request_totals.successful" and "10 errored or incomplete" in str(refused.value)


def _aiperf(**blocks) -> bytes:
    report = json.loads((DATA / "profile_export_genai_perf.json").read_text())
    report.update({key: {"unit": "requests", "avg": value} for key, value in blocks.items()})
    return json.dumps(report).encode()


def test_aiperf_failures_are_its_error_request_count(catalog):
    (run,) = read_runs(catalog, [("profile_export_aiperf.json", _aiperf(request_count=90, error_request_count=10))],
                       GIVEN)
    assert run.points[0].failed_requests == 10
    assert compare_run(run).notes[0].startswith("requests failed (10 at concurrency 16)")
    (run,) = read_runs(catalog, [("profile_export_genai_perf.json", _aiperf())], GIVEN)
    assert run.points[0].failed_requests is None  # genai-perf counts none
    for blocks, field, said in [({"error_request_count": 2.5}, "error_request_count.avg", "not a whole number"),
                                ({"error_request_count": -1}, "error_request_count.avg", "non-negative"),
                                ({"request_count": 0, "error_request_count": 40}, "request_count.avg",
                                 "no request completed (40 failed)")]:
        with pytest.raises(InvalidScenarioError) as refused:
            read_runs(catalog, [("profile_export_aiperf.json", _aiperf(**blocks))], GIVEN)
        assert refused.value.field == field and said in str(refused.value), blocks


def test_an_aiperf_run_whose_every_request_failed_is_refused_at_request_count(catalog):
    """AIPerf leaves ``request_count`` (the requests that completed) and every per-request figure out of a run whose
    every request failed, and writes ``error_request_count`` and ``completed_request_count`` (successes plus
    errors: ai-dynamo/aiperf src/aiperf/metrics/types/completed_request_count_metric.py)."""
    report = {key: value for key, value in json.loads((DATA / "profile_export_genai_perf.json").read_text()).items()
              if key == "input_config"}
    report.update({key: {"unit": "requests", "avg": 40} for key in ("error_request_count", "completed_request_count")})
    with pytest.raises(InvalidScenarioError) as refused:
        read_runs(catalog, [("profile_export_aiperf.json", json.dumps(report).encode())], GIVEN)
    assert refused.value.field == "request_count" and "no request completed (40 failed)" in str(refused.value)


def test_a_csv_level_keeps_its_failed_requests_and_a_bad_count_is_named_by_line(catalog):
    text = "concurrency,input_tokens,output_tokens,tpot_ms,requests,failed_requests\n8,1024,256,9.1,400,25\n16,1024,256,11.0,400,\n"
    (run,) = read_runs(catalog, [("mine.csv", text.encode())], GIVEN)
    assert [p.failed_requests for p in run.points] == [25, None]
    assert compare_run(run).notes[0].startswith("requests failed (25 of 400 at concurrency 8)")
    with pytest.raises(InvalidScenarioError) as refused:
        read_runs(catalog, [("mine.csv", text.replace(",25\n", ",2.5\n").encode())], GIVEN)
    assert refused.value.field == "line 2: failed_requests" and "not a whole number" in str(refused.value)
