"""A trace given inline to POST /api/search and /api/simulate, as rows or as a CSV or JSONL file's name
and text: the library reads it as the CLI reads a trace file, and a bad row is refused (422) naming
its row, its index or file line, and its column."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from inferplan.search.trace import parse_trace, trace_from_rows
from inferplan.shells.api import create_app

ROWS = [{"arrival_s": 0.25 * i, "input_tokens": 1500, "output_tokens": 300} for i in range(40)]
SEARCH = {"models": ["qwen3-8b"], "systems": ["hgx-h100"], "engines": ["vllm"], "trace": ROWS,
          "targets": {"ttft_p95_s": 1.5, "tpot_p95_s": 0.04}, "top": 3}
SIMULATE = {"deployment": {"model": "llama-3.3-70b", "gpu": "H100", "quantization": "fp8", "tensor_parallel_size": 2},
            "trace": ROWS, "requests": 200}


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    return TestClient(create_app(tmp_path_factory.mktemp("db") / "t.db"))


def test_inline_rows_read_as_the_same_rows_in_a_jsonl_file():
    import json

    assert trace_from_rows(ROWS) == parse_trace("\n".join(json.dumps(r) for r in ROWS), jsonl=True)


def test_api_search_plans_for_an_inline_trace(client):
    r = client.post("/api/search", json=SEARCH)
    assert r.status_code == 200, r.text
    data = r.json()
    assert data["results"] and data["load"]["trace"] == "40 rows given inline"
    assert data["load"]["request_rate_per_s"] == pytest.approx(4.0, rel=0.05)  # 40 requests, 0.25 s apart


def test_api_simulate_replays_an_inline_trace(client):
    r = client.post("/api/simulate", json=SIMULATE)
    assert r.status_code == 200, r.text
    assert r.json()["load"].startswith("trace of 40 requests")


@pytest.mark.parametrize("route, body", [("/api/search", SEARCH), ("/api/simulate", SIMULATE)])
@pytest.mark.parametrize("row, bad, column", [
    (2, {"input_tokens": "many"}, "input_tokens"),
    (5, {"output_tokens": 0}, "output_tokens"),
    (7, {"arrival_s": 0.1}, "arrival_s"),  # earlier than the row before
])
def test_a_bad_inline_row_is_refused_naming_its_index_and_column(client, route, body, row, bad, column):
    rows = [dict(r) for r in ROWS]
    rows[row].update(bad)
    r = client.post(route, json={**body, "trace": rows})
    assert r.status_code == 422, r.text
    error = r.json()["detail"][0]
    assert error["loc"] == ["body", "trace", str(row), column]
    assert f"row {row + 1} (index {row})" in error["msg"]  # rows count from 1, as a trace file's do


def test_an_empty_or_oversized_trace_is_refused(client, monkeypatch):
    r = client.post("/api/simulate", json={**SIMULATE, "trace": []})
    assert r.status_code == 422 and r.json()["detail"][0]["loc"] == ["body", "trace"]
    r = client.post("/api/search", json={**SEARCH, "trace": [ROWS[0]] * 100_001})
    assert r.status_code in (413, 422)


@pytest.mark.parametrize("route,body", [("/api/search", SEARCH), ("/api/simulate", SIMULATE)])
@pytest.mark.parametrize("column", ["input_tokens", "output_tokens"])
def test_a_token_count_past_the_bound_is_refused_at_its_row(client, route, body, column):
    from inferplan.search.trace import MAX_TRACE_TOKENS

    rows = [dict(r) for r in ROWS]
    rows[1][column] = MAX_TRACE_TOKENS + 1
    r = client.post(route, json={**body, "trace": rows})
    assert r.status_code == 422, r.text
    assert r.json()["error"]["field"] == f"trace.1.{column}"
    assert f"at most {MAX_TRACE_TOKENS:,}" in r.json()["error"]["allowed"]


CSV = "arrival_s,input_tokens,output_tokens\n" + "".join(f"{r['arrival_s']},{r['input_tokens']},{r['output_tokens']}\n" for r in ROWS)


@pytest.mark.parametrize("route, body", [("/api/search", SEARCH), ("/api/simulate", SIMULATE)])
def test_a_csv_trace_file_reads_as_the_cli_reads_it(client, route, body, tmp_path):
    from inferplan.search.trace import TraceFile, read_trace, trace_of

    (tmp_path / "t.csv").write_text(CSV)
    assert trace_of(TraceFile(name="t.csv", text=CSV)) == read_trace(tmp_path / "t.csv") == trace_from_rows(ROWS)
    r = client.post(route, json={**body, "trace": {"name": "t.csv", "text": CSV}})
    assert r.status_code == 200, r.text
    if route == "/api/search":
        assert r.json()["load"]["trace"] == "t.csv"
    bad = CSV.replace("\n0.75,1500,", "\n0.75,many,")  # the 4th request, on line 5 under the header
    r = client.post(route, json={**body, "trace": {"name": "t.csv", "text": bad}})
    assert r.status_code == 422, r.text
    error = r.json()["error"]
    assert error["field"] == "trace.3.input_tokens" and "row 4 (line 5)" in error["message"], error


def test_rows_that_are_not_objects_or_a_file_without_its_text_are_refused_naming_what_is_allowed(client):
    r = client.post("/api/search", json={**SEARCH, "trace": ["0.1,1500,300"]})
    assert r.status_code == 422 and r.json()["error"]["field"] == "trace.0", r.text
    assert "arrival_s" in r.json()["error"]["allowed"]
    r = client.post("/api/search", json={**SEARCH, "trace": {"name": "t.csv"}})
    assert r.status_code == 422 and r.json()["error"]["field"] == "trace.text", r.text
    assert "{name, text, encoding}" in r.json()["error"]["allowed"]


def test_a_json_file_holding_an_array_of_rows_is_told_to_hold_one_object_per_line(client):
    import json

    r = client.post("/api/search", json={**SEARCH, "trace": {"name": "t.json", "text": json.dumps(ROWS)}})
    assert r.status_code == 422 and r.json()["error"]["field"] == "trace.0", r.text
    assert "a JSON array" in r.json()["error"]["message"] and "no enclosing array" in r.json()["error"]["allowed"]


def test_an_azure_trace_file_is_simulated_and_its_gzip_bytes_sent_as_text_are_named(client):
    import gzip

    azure = "TIMESTAMP,ContextTokens,GeneratedTokens\n" + "".join(
        f"2023-11-16 18:15:{10 + i // 4}.{25 * (i % 4):02d}00000,1500,300\n" for i in range(40))
    r = client.post("/api/simulate", json={**SIMULATE, "trace": {"name": "AzureLLMInferenceTrace_conv.csv", "text": azure}})
    assert r.status_code == 200, r.text
    sent = gzip.compress(azure.encode(), mtime=0).decode("utf-8", errors="replace")  # a browser's file.text()
    r = client.post("/api/simulate", json={**SIMULATE, "trace": {"name": "t.csv.gz", "text": sent}})
    assert r.status_code == 422 and r.json()["error"]["field"] == "trace", r.text
    assert "gzip-compressed file's bytes sent as text" in r.json()["error"]["message"]
