"""Traces and result files as they are published and kept: the public traces' columns and dates and times
as arrival times (search/data/trace_formats.yaml), and gzip-compressed files read by their bytes."""

from __future__ import annotations

import base64
import gzip
from pathlib import Path

import pytest

from inferplan.errors import InvalidScenarioError
from inferplan.measurements.records import RunProvenance, read_runs
from inferplan.search.trace import TraceFile, parse_trace, read_trace, trace_of

DATA = Path(__file__).parent / "data" / "measurements"
# rows 1-3 of data/AzureLLMInferenceTrace_conv.csv (Azure/AzurePublicDataset, the 2023 trace), as published
AZURE_2023 = ("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,374,44\n"
              "2023-11-16 18:15:50.9951690,396,109\n2023-11-16 18:15:51.2224670,879,55\n")
# the 2024 trace's form (analysis/AzureLLMInferenceDataset2024.ipynb): a time zone, a whole second without digits
AZURE_2024 = ("TIMESTAMP,ContextTokens,GeneratedTokens\n2024-05-12 00:00:00+00:00,1452,3\n"
              "2024-05-12 00:00:00.041683+00:00,584,3\n2024-05-12 00:00:01.5+00:00,862,38\n")


def test_an_azure_trace_loads_as_published_with_seconds_after_its_first_row():
    trace = parse_trace(AZURE_2023, jsonl=False)
    assert trace.arrival_s == pytest.approx((0.0, 4.314579, 4.541877))
    assert (trace.input_tokens, trace.output_tokens) == ((374, 396, 879), (44, 109, 55))
    assert parse_trace(AZURE_2024, jsonl=False).arrival_s == pytest.approx((0.0, 0.041683, 1.5))


def test_iso_times_with_a_time_zone_are_read_across_zones():
    text = ("arrival_s,input_tokens,output_tokens\n2026-12-07T10:00:00Z,10,5\n2026-12-07T11:00:02+01:00,10,5\n"
            "2026-12-07T10:00:03.25+00:00,10,5\n")
    assert parse_trace(text, jsonl=False).arrival_s == (0.0, 2.0, 3.25)
    jsonl = '{"timestamp": "2026-12-07T10:00:00Z", "input_tokens": 1, "output_tokens": 1}\n' \
            '{"timestamp": "2026-12-07T10:00:04Z", "input_tokens": 1, "output_tokens": 1}\n'
    assert parse_trace(jsonl, jsonl=True).arrival_s == (0.0, 4.0)


@pytest.mark.parametrize(("second", "form", "first_form"), [
    ("2024-05-12 00:00:01", "a date and time without a time zone", "a date and time with a time zone"),
    ("1.5", "a number", "a date and time with a time zone"),
])
def test_arrival_times_in_mixed_forms_are_refused_naming_the_row(second, form, first_form):
    text = f"TIMESTAMP,ContextTokens,GeneratedTokens\n2024-05-12 00:00:00+00:00,1,1\n{second},1,1\n"
    with pytest.raises(InvalidScenarioError) as info:
        parse_trace(text, jsonl=False)
    assert f"row 2 (line 3), column TIMESTAMP: '{second}' is {form}, where row 1 gives {first_form}" in str(info.value)
    assert info.value.field == "trace.1.TIMESTAMP" and "every row in one form" in info.value.allowed


@pytest.mark.parametrize(("text", "words"), [
    ("2024-05-12 00:00:05,1,1\n2024-05-12 00:00:04,1,1\n", "2024-05-12 00:00:04 is earlier than the row before"),
    ("2024-05-12 00:00:05,1,1\n2024-13-12 00:00:06,1,1\n", "'2024-13-12 00:00:06' is not a number or a date and time"),
    ("0,1,1\nnan,1,1\n", "'nan' is out of range"),
    ("0,1,1\n-1,1,1\n", "'-1' is out of range"),
])
def test_a_bad_arrival_time_is_still_refused_naming_the_row(text, words):
    with pytest.raises(InvalidScenarioError) as info:
        parse_trace("TIMESTAMP,ContextTokens,GeneratedTokens\n" + text, jsonl=False)
    assert f"row 2 (line 3), column TIMESTAMP: {words}" in str(info.value) and info.value.field == "trace.1.TIMESTAMP"


def test_burstgpt_and_mooncake_columns_read_in_their_units():
    burst = ("Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"
             "5,ChatGPT,472,18,490,Conversation log\n45,ChatGPT,1087,12,1099,API log\n")
    assert parse_trace(burst, jsonl=False).arrival_s == (0.0, 40.0)
    mooncake = ('{"timestamp": 0, "input_length": 6758, "output_length": 500, "hash_ids": [0, 1]}\n'
                '{"timestamp": 3000, "input_length": 2290, "output_length": 316, "hash_ids": [0, 42]}\n')
    trace = parse_trace(mooncake, jsonl=True)
    assert trace.arrival_s == (0.0, 3.0) and trace.input_tokens == (6758, 2290)
    from inferplan.search.trace_columns import trace_formats

    assert {f.id for f in trace_formats()} == {"inferplan", "azure-llm-inference", "burstgpt", "mooncake"}


def test_a_header_naming_no_format_lists_the_published_ones():
    with pytest.raises(InvalidScenarioError) as info:
        parse_trace("time,prompt,completion\n0,1,1\n", jsonl=False)
    assert "TIMESTAMP" in info.value.allowed and "Request tokens" in info.value.allowed and "input_length" in info.value.allowed


@pytest.mark.parametrize("name", ["azure.csv.gz", "azure.csv", "azure"])
def test_a_gzip_trace_is_read_by_its_bytes_whatever_its_name(tmp_path, name):
    (tmp_path / name).write_bytes(gzip.compress(AZURE_2023.encode()))
    assert read_trace(tmp_path / name) == parse_trace(AZURE_2023, jsonl=False)


def test_a_gzip_jsonl_trace_is_read_as_jsonl(tmp_path):
    text = '{"arrival_s": 0, "input_tokens": 3, "output_tokens": 2}\n{"arrival_s": 2, "input_tokens": 4, "output_tokens": 1}\n'
    (tmp_path / "t.jsonl.gz").write_bytes(gzip.compress(text.encode()))
    assert read_trace(tmp_path / "t.jsonl.gz").arrival_s == (0.0, 2.0)


@pytest.mark.parametrize("name", ["excel.csv", "excel.csv.gz"])
def test_a_trace_with_a_utf8_bom_is_read_as_excel_writes_it(tmp_path, name):
    data = b"\xef\xbb\xbf" + AZURE_2023.encode()  # Excel's "CSV UTF-8" opens with a byte-order mark
    (tmp_path / name).write_bytes(gzip.compress(data) if name.endswith(".gz") else data)
    assert read_trace(tmp_path / name) == parse_trace(AZURE_2023, jsonl=False)
    sent = TraceFile(name=name, text=base64.b64encode(data).decode(), encoding="base64")
    assert trace_of(sent) == parse_trace(AZURE_2023, jsonl=False)


@pytest.mark.parametrize(("data", "words"), [
    (gzip.compress(b"\x00\x01binary\xff"), "its gzip content is not UTF-8 text"),
    (gzip.compress(b"trace.csv\x00\x00\x00\x000000644\x00"), "its gzip content holds NUL bytes, not text"),
    (gzip.compress(AZURE_2023.encode())[:30], "starts as gzip but does not decompress"),
], ids=["binary", "tar", "truncated"])
def test_a_gzip_file_that_is_not_text_is_refused_saying_so(tmp_path, data, words):
    (tmp_path / "t.csv.gz").write_bytes(data)
    with pytest.raises(InvalidScenarioError) as info:
        read_trace(tmp_path / "t.csv.gz")
    assert words in str(info.value) and info.value.field == "trace"


def test_a_gzip_file_sent_as_text_is_named_as_one():
    sent = gzip.compress(AZURE_2023.encode()).decode("utf-8", errors="replace")  # as a browser's file.text() reads it
    with pytest.raises(InvalidScenarioError, match="gzip-compressed file's bytes sent as text"):
        trace_of(TraceFile(name="azure.csv.gz", text=sent))


H100_VLLM = RunProvenance(model="llama-3.1-8b", gpu="h100", engine="vllm", engine_version="0.11.0", measured_by="lab")


@pytest.mark.parametrize("name", ["vllm_bench_serve_c8.json.gz", "vllm_bench_serve_c8.json"])
def test_a_gzip_vllm_result_file_imports_as_the_file_itself(catalog, name):
    plain = (DATA / "vllm_bench_serve_c8.json").read_bytes()
    (run,) = read_runs(catalog, [(name, gzip.compress(plain))], H100_VLLM)
    (same,) = read_runs(catalog, [("vllm_bench_serve_c8.json", plain)], H100_VLLM)
    assert run.format == "vllm" and run.points == same.points


def test_a_gzip_result_file_that_is_not_text_or_sent_as_text_is_refused(catalog):
    with pytest.raises(InvalidScenarioError, match=r"^r.json.gz: its gzip content is not UTF-8 text") as info:
        read_runs(catalog, [("r.json.gz", gzip.compress(b"\xff\xfe"))], H100_VLLM)
    assert info.value.field == "file"
    sent = gzip.compress(b'{"completed": 1}').decode("utf-8", errors="replace").encode()
    with pytest.raises(InvalidScenarioError, match="gzip-compressed file's bytes sent as text"):
        read_runs(catalog, [("r.json.gz", sent)], H100_VLLM)
