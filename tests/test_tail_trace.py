"""Trace files: a good one is read, a bad row is refused naming its row and column."""

from __future__ import annotations

import json

import pytest

from inferplan.errors import InvalidScenarioError
from inferplan.search import trace as trace_module
from inferplan.search.arrivals import Load
from inferplan.search.trace import parse_trace, read_trace, trace_from_rows


def test_a_csv_and_a_jsonl_trace_read_the_same():
    csv_text = "arrival_s,input_tokens,output_tokens,user\n10.0,100,20,a\n10.5,200,30,b\n12.0,50,5,c\n"
    jsonl_text = ('{"timestamp": 10.0, "input_tokens": 100, "output_tokens": 20}\n'
                  '{"timestamp": 10.5, "input_tokens": 200, "output_tokens": 30}\n\n'
                  '{"timestamp": 12.0, "input_tokens": 50, "output_tokens": 5}\n')
    a, b = parse_trace(csv_text, jsonl=False), parse_trace(jsonl_text, jsonl=True)
    assert a == b
    assert a.arrival_s == (0.0, 0.5, 2.0) and a.input_tokens == (100, 200, 50)
    load = Load.from_trace(a)
    assert load.request_rate_per_s == pytest.approx(1.0) and load.output_tokens == pytest.approx(55 / 3)


@pytest.mark.parametrize("text, row, line, column", [
    ("arrival_s,input_tokens,output_tokens\n0,10,5\n1,,5\n", 2, 3, "input_tokens"),  # missing
    ("arrival_s,input_tokens,output_tokens\n0,10,5\n1,ten,5\n", 2, 3, "input_tokens"),  # not a number
    ("arrival_s,input_tokens,output_tokens\n0,10,5\n1,10,-5\n", 2, 3, "output_tokens"),  # negative
    ("arrival_s,input_tokens,output_tokens\n0,10,5\n-1,10,5\n", 2, 3, "arrival_s"),  # negative time
    ("arrival_s,input_tokens,output_tokens\n0,10,5\n5,10,5\n4,10,5\n", 3, 4, "arrival_s"),  # earlier than the row before
    ("arrival_s,input_tokens,output_tokens\n0,10.5,5\n", 1, 2, "input_tokens"),  # not whole
    ("arrival_s,input_tokens,output_tokens\n0,10,5\n\n1,,5\n", 2, 4, "input_tokens"),  # a blank line is no row
])
def test_a_bad_csv_row_is_refused_naming_row_line_and_column(text, row, line, column):
    """Rows count the trace's requests from 1, the file's line beside; the field is the row's JSON index."""
    with pytest.raises(InvalidScenarioError) as info:
        parse_trace(text, jsonl=False)
    assert f"row {row} (line {line}), column {column}" in str(info.value)
    assert info.value.field == f"trace.{row - 1}.{column}"


@pytest.mark.parametrize("header, missing", [
    ("time,prompt,completion", "no arrival_s or timestamp and no input_tokens and no output_tokens column"),
    ("arrival_s,input_tokens", "no output_tokens column"),
    ("timestamp,input_tokens,tokens_out", "no output_tokens column"),
])
def test_a_header_without_the_columns_is_refused_naming_what_it_has(header, missing):
    with pytest.raises(InvalidScenarioError) as info:
        parse_trace(f"{header}\n0,100,100\n", jsonl=False)
    found = ", ".join(repr(c) for c in header.split(","))
    assert str(info.value).startswith(f"trace: the header row (line 1) names {found}: {missing}")
    assert info.value.field == "trace" and "arrival_s or timestamp, input_tokens and output_tokens" in info.value.allowed


def test_a_row_with_more_values_than_the_header_is_refused_naming_it():
    with pytest.raises(InvalidScenarioError) as info:
        parse_trace("arrival_s,input_tokens,output_tokens\n0,100,100\n9999,100,100,7\n", jsonl=False)
    assert "row 2 (line 3): 4 values under a header of 3 columns" in str(info.value)
    assert info.value.field == "trace.1"


def test_a_file_and_the_same_rows_inline_name_a_bad_row_alike():
    rows = [{"arrival_s": 0, "input_tokens": 1, "output_tokens": 1}, {"arrival_s": 1, "input_tokens": "many", "output_tokens": 1}]
    with pytest.raises(InvalidScenarioError) as from_file:
        parse_trace("\n".join(json.dumps(r) for r in rows), jsonl=True)
    with pytest.raises(InvalidScenarioError) as inline:
        trace_from_rows(rows)
    assert "row 2 (line 2), column input_tokens" in str(from_file.value)
    assert "row 2 (index 1), column input_tokens" in str(inline.value)
    assert from_file.value.field == inline.value.field == "trace.1.input_tokens"


def test_a_bad_jsonl_line_is_refused_naming_it():
    with pytest.raises(InvalidScenarioError, match=r"row 2 \(line 2\)"):
        parse_trace('{"arrival_s": 0, "input_tokens": 1, "output_tokens": 1}\n[1, 2]\n', jsonl=True)
    with pytest.raises(InvalidScenarioError, match=r"row 1 \(line 1\), column output_tokens"):
        parse_trace('{"arrival_s": 0, "input_tokens": 1, "output_tokens": "many"}\n', jsonl=True)


@pytest.mark.parametrize("text", ["", "arrival_s,input_tokens,output_tokens\n"])
def test_an_empty_trace_is_refused(tmp_path, text):
    path = tmp_path / "t.csv"
    path.write_text(text)
    with pytest.raises(InvalidScenarioError, match="empty|no requests"):
        read_trace(path)


def test_a_trace_larger_than_the_bound_is_refused(tmp_path, monkeypatch):
    path = tmp_path / "t.csv"
    path.write_text("arrival_s,input_tokens,output_tokens\n" + "0,1,1\n" * 100)
    monkeypatch.setattr(trace_module, "MAX_TRACE_BYTES", 100)
    with pytest.raises(InvalidScenarioError, match="too large") as info:
        read_trace(path)
    assert info.value.field == "trace"


def test_a_header_naming_a_column_twice_is_refused_rather_than_reading_the_last():
    text = "arrival_s,input_tokens,output_tokens,arrival_s\n0,100,50,5\n0.5,200,60,6\n"
    with pytest.raises(InvalidScenarioError) as info:
        parse_trace(text, jsonl=False)
    assert info.value.field == "trace" and "'arrival_s' twice" in str(info.value)
    assert len(parse_trace("arrival_s,input_tokens,output_tokens,user,user\n0,1,1,a,b\n1,1,1,c,d\n", jsonl=False)) == 2


@pytest.mark.parametrize("jsonl", [True, False])
def test_a_row_with_both_arrival_keys_is_refused_naming_it(jsonl):
    text = ('{"arrival_s": 0, "input_tokens": 1, "output_tokens": 1}\n'
            '{"arrival_s": 1, "timestamp": 9, "input_tokens": 1, "output_tokens": 1}\n') if jsonl else \
        "arrival_s,timestamp,input_tokens,output_tokens\n0,0,1,1\n1,9,1,1\n"
    with pytest.raises(InvalidScenarioError) as info:
        parse_trace(text, jsonl=jsonl)
    assert info.value.field == f"trace.{1 if jsonl else 0}.arrival_s" and "both arrival_s and timestamp" in str(info.value)


@pytest.mark.parametrize(("value", "words"), [(True, "True is not a number"), ("many", "'many' is not a number"),
                                              (200.7, "200.7 is not a whole number"), (None, "missing"), (0, "0 is out of range")])
def test_every_refused_token_count_says_what_the_column_takes(value, words):
    rows = [{"arrival_s": 0, "input_tokens": 1, "output_tokens": 1}, {"arrival_s": 1, "input_tokens": 1, "output_tokens": value}]
    with pytest.raises(InvalidScenarioError) as info:
        trace_from_rows(rows)
    assert info.value.field == "trace.1.output_tokens" and words in str(info.value)
    assert info.value.allowed == "a whole number of at least 1 and at most 100,000,000"
