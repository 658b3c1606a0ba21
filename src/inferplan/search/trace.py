"""A request trace: arrival time, prompt tokens and output tokens per request, read from CSV or JSONL.

CSV: a header row naming ``arrival_s`` (or ``timestamp``), ``input_tokens`` and ``output_tokens``, or a
published trace's columns (``search/data/trace_formats.yaml``: the Azure LLM inference traces, BurstGPT,
Mooncake); other columns are ignored; a header without them is refused naming the columns it has, one naming them
twice or a row with both time keys is refused too. JSONL: one object per line with the same keys (the first
row's tell the format). Times are numbers from any origin (seconds, or the format's unit) or dates and times
(ISO 8601, read as seconds after the first row's; every row in the first row's form) and must not decrease, and at
least two must differ (the trace's span gives its rate); token counts are whole numbers from 1 to
``MAX_TRACE_TOKENS``; a CSV row with more values than its header has columns is refused. A file compressed with
gzip, xz, bzip2 or as a zip of one file is read decompressed (told by its first bytes, not its name); a file given
inline comes as its text or, compressed, as its bytes base64-encoded.

A bad row is refused naming it one way wherever the trace comes from: ``row N`` counts the trace's
requests from 1 (a CSV's header and blank lines are not rows), with the file's line beside it
(``row 4 (line 5)``) or, for rows given inline, their index (``row 2 (index 1)``); the error's
``field`` is the row's place in a JSON body, ``trace.<index>.<column>`` (the index is N − 1).
"""

from __future__ import annotations

import csv
import io
import json
import math
from dataclasses import dataclass
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from inferplan.errors import InvalidScenarioError
from inferplan.input_codecs import uncompressed_name
from inferplan.input_files import (COMPRESSED_BYTES, SENT_AS, SentAs, bytes_of_base64, refuse_compressed_text,
                                   text_of)
from inferplan.search.trace_columns import ArrivalClock, TraceFormat, format_of, formats_allowed, trace_formats

MAX_TRACE_BYTES = 64 * 2**20  # a trace file larger than this is refused (about a million rows)
MAX_TRACE_ROWS = 100_000  # rows a trace given inline (not as a file) may carry
# tokens one request may have of each kind: the most a load's mean lengths take (arrivals.Load), far
# past any model's context
MAX_TRACE_TOKENS = 100_000_000


@dataclass(frozen=True)
class Trace:
    arrival_s: tuple[float, ...]  # from the first request (which arrives at 0)
    input_tokens: tuple[int, ...]
    output_tokens: tuple[int, ...]

    def __post_init__(self) -> None:
        if not (len(self.arrival_s) == len(self.input_tokens) == len(self.output_tokens)) or not self.arrival_s:
            raise InvalidScenarioError("a trace needs at least one request and one value of each column per request",
                                       field="trace", allowed="rows of arrival_s, input_tokens, output_tokens")
        if self.arrival_s[-1] <= self.arrival_s[0]:
            n = len(self.arrival_s)
            said = "its one request spans" if n == 1 else f"its {n:,} requests all arrive at once and span"
            raise InvalidScenarioError(f"{said} no time, so it gives no request rate: give at least two requests at "
                                       "different arrival times", field="trace",
                                       allowed="rows with at least two distinct arrival times")

    def __len__(self) -> int:
        return len(self.arrival_s)

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return (np.asarray(self.arrival_s, float), np.asarray(self.input_tokens, np.int64),
                np.asarray(self.output_tokens, np.int64))

    def rate_per_s(self) -> float:
        """Requests per second over the trace's span (the gaps between arrivals' mean, inverted)."""
        span = self.arrival_s[-1] - self.arrival_s[0]
        return (len(self) - 1) / span if span > 0 and len(self) > 1 else math.inf

    def interarrival_scv(self) -> float:
        """Squared coefficient of variation of the gaps between arrivals (1 for Poisson arrivals)."""
        gaps = np.diff(np.asarray(self.arrival_s, float))
        return float(gaps.var() / gaps.mean() ** 2) if len(gaps) > 1 and gaps.mean() > 0 else 0.0


def row_field(index: int, column: str | None = None) -> str:
    """A trace row's ``field``: its place in a JSON body (``trace.1.input_tokens``), 0-based."""
    return f"trace.{index}" + (f".{column}" if column else "")


def _row(index: int, line: int | None = None) -> str:
    """A row as every error names it: counted from 1, with its file line or its inline index."""
    return f"row {index + 1} ({f'line {line}' if line is not None else f'index {index}'})"


def _number(raw: object, row: tuple[int, str], column: str, *, whole: bool, minimum: float,
            maximum: float = math.inf, allowed: str | None = None, kind: str = "a number") -> float:
    index, label = row
    where, field = f"{label}, column {column}", row_field(index, column)
    most = f" and at most {maximum:,.0f}" if math.isfinite(maximum) else ""
    # every refusal of the cell says what it takes
    allowed = allowed or f"{'a whole number' if whole else 'a number'} of at least {minimum:g}{most}"
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        raise InvalidScenarioError(f"trace {where}: missing", field=field, allowed=allowed)
    try:
        value = math.nan if isinstance(raw, bool) else float(raw)  # true is no count of anything
    except (TypeError, ValueError):
        value = math.nan
    if math.isnan(value) and not (isinstance(raw, str) and raw.strip().lower() == "nan"):
        raise InvalidScenarioError(f"trace {where}: {raw!r} is not {kind}", field=field, allowed=allowed)
    if whole and math.isfinite(value) and value != int(value):
        raise InvalidScenarioError(f"trace {where}: {raw!r} is not a whole number", field=field, allowed=allowed)
    if not math.isfinite(value) or not minimum <= value <= maximum:
        raise InvalidScenarioError(f"trace {where}: {raw!r} is out of range", field=field, allowed=allowed)
    return value


def _rows_from_csv(text: str) -> tuple[TraceFormat, list[tuple[tuple[int, str], dict]]]:
    reader = csv.DictReader(io.StringIO(text))
    if not reader.fieldnames:
        raise InvalidScenarioError("trace: the file is empty", field="trace", allowed="a header row and one row per request")
    found = list(reader.fieldnames)
    fmt, missing = format_of(found)
    if missing:
        raise InvalidScenarioError(f"trace: the header row (line 1) names {', '.join(map(repr, found))}: no "
                                   f"{' and no '.join(missing)} column", field="trace", allowed=formats_allowed())
    twice = sorted({c for c in found if found.count(c) > 1 and c in fmt.columns})
    if twice:  # csv.DictReader keeps a repeated column's last value: the first would be dropped unread
        raise InvalidScenarioError(f"trace: the header row (line 1) names {', '.join(map(repr, twice))} twice",
                                   field="trace", allowed="each column once")
    rows = []
    for index, record in enumerate(reader):
        row = (index, _row(index, reader.line_num))
        if None in record:  # csv.DictReader's key for the values past the header's columns
            raise InvalidScenarioError(f"trace {row[1]}: {len(found) + len(record[None])} values under a header of "
                                       f"{len(found)} columns ({', '.join(found)})", field=row_field(index),
                                       allowed="at most one value per header column")
        rows.append((row, record))
    return fmt, rows


def _rows_from_jsonl(text: str) -> list[tuple[tuple[int, str], dict]]:
    rows = []
    for line, content in enumerate(text.splitlines(), start=1):
        if not content.strip():
            continue
        row = (len(rows), _row(len(rows), line))
        try:
            record = json.loads(content)
        except json.JSONDecodeError as exc:
            raise InvalidScenarioError(f"trace {row[1]}: not JSON ({exc.msg})", field=row_field(row[0]),
                                       allowed="one JSON object per line") from None
        if isinstance(record, list):  # a .json file holding an array of the rows: say what the file should hold
            raise InvalidScenarioError(f"trace {row[1]}: a JSON array, where a trace file holds one request's JSON "
                                       "object per line (JSONL)", field=row_field(row[0]),
                                       allowed="one JSON object per line, no enclosing array")
        rows.append((row, _record(record, row, "one JSON object per line")))
    return rows


def _record(record: object, row: tuple[int, str], allowed: str) -> dict:
    if not isinstance(record, dict):
        raise InvalidScenarioError(f"trace {row[1]}: not a JSON object", field=row_field(row[0]), allowed=allowed)
    return record


def parse_trace(text: str, *, jsonl: bool) -> Trace:
    """A ``Trace`` from the text of a CSV (``jsonl=False``) or JSONL file."""
    refuse_compressed_text(text, where="trace", field="trace", error=InvalidScenarioError)
    fmt, rows = (None, _rows_from_jsonl(text)) if jsonl else _rows_from_csv(text)
    if not rows:
        raise InvalidScenarioError("trace: no requests in the file", field="trace", allowed="one row per request")
    return _trace_of(rows, fmt)


def trace_from_rows(rows: Sequence[object]) -> Trace:
    """A ``Trace`` from rows given inline (JSON objects with the file's keys)."""
    if not rows:
        raise InvalidScenarioError("trace: no requests", field="trace", allowed="one row per request")
    if len(rows) > MAX_TRACE_ROWS:
        raise InvalidScenarioError(f"trace: {len(rows):,} rows is too many", field="trace",
                                   allowed=f"at most {MAX_TRACE_ROWS:,} rows")
    return _trace_of([((i, _row(i)), _record(r, (i, _row(i)), "an object of arrival_s, input_tokens, output_tokens"))
                      for i, r in enumerate(rows)])


def _trace_of(rows: list[tuple[tuple[int, str], dict]], fmt: TraceFormat | None = None) -> Trace:
    """The rows read by ``fmt`` (a CSV header's), else by the format the first row's keys name (inferplan's
    own when they name none: each row then refused at the column it lacks)."""
    fmt = fmt or (format_of(rows[0][1])[0] if rows else trace_formats()[0])
    clock, times, raws, inputs, outputs = ArrivalClock(fmt), [], [], [], []
    for row, record in rows:
        key = next((k for k in fmt.time_columns if k in record), fmt.time_columns[0])
        if sum(k in record for k in fmt.time_columns) > 1:  # two arrival times: reading one would drop the other unread
            given = [k for k in fmt.time_columns if k in record]
            raise InvalidScenarioError(f"trace {row[1]}: both {' and '.join(given)} given", field=row_field(row[0], key),
                                       allowed=f"one arrival time per row: {' or '.join(fmt.time_columns)}")
        raw = record.get(key)
        t = clock.seconds(raw, row, key, row_field(row[0], key), _number)
        if times and t < times[-1]:
            raise InvalidScenarioError(f"trace {row[1]}, column {key}: {raw} is earlier than the row before "
                                       f"({raws[-1]})", field=row_field(row[0], key),
                                       allowed="arrival times that do not decrease")
        times.append(t)
        raws.append(raw)
        inputs.append(int(_number(record.get(fmt.input_column), row, fmt.input_column, whole=True, minimum=1,
                                  maximum=MAX_TRACE_TOKENS)))
        outputs.append(int(_number(record.get(fmt.output_column), row, fmt.output_column, whole=True, minimum=1,
                                   maximum=MAX_TRACE_TOKENS)))
    start = times[0]
    return Trace(arrival_s=tuple(t - start for t in times), input_tokens=tuple(inputs), output_tokens=tuple(outputs))


class TraceFile(BaseModel):
    """A trace file's text given inline (the web page's file, an API client's): read as ``read_trace``
    reads the file of that name, as JSONL when it ends in ``.jsonl`` or ``.json``, else as CSV."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(min_length=1, max_length=255, description="the file's name: .jsonl / .json is read as JSONL, else CSV")
    text: str = Field(max_length=MAX_TRACE_BYTES, description=COMPRESSED_BYTES)
    encoding: SentAs = Field("text", description=SENT_AS)

    def content(self) -> str:
        """The file's text (a leading byte-order mark dropped, as a file's bytes are read), from its bytes
        decompressed when it was sent base64-encoded."""
        if self.encoding == "text":
            return self.text.removeprefix("\ufeff")
        where = f"trace {self.name}"
        data = bytes_of_base64(self.text, where=where, field="trace.text", error=InvalidScenarioError)
        return text_of(data, where=where, field="trace.text", error=InvalidScenarioError, max_bytes=MAX_TRACE_BYTES,
                       encoding="utf-8-sig")


def as_trace_file(value: object) -> object:
    """A request's ``trace`` as given: an object is a file's name and text, refused by its own fields
    (not by the union of the forms a trace takes); anything else as it is."""
    if not isinstance(value, dict):
        return value
    try:
        return TraceFile.model_validate(value)
    except ValidationError as exc:
        e = exc.errors()[0]
        key = ".".join(map(str, e["loc"]))
        raise InvalidScenarioError(f"trace: {key}: {e['msg']}", field=f"trace.{key}",
                                   allowed="a trace file's {name, text, encoding}: its name (.jsonl / .json: JSONL, "
                                   "else CSV), its text, and encoding text (the default) or base64 (text: its bytes "
                                   "base64-encoded, compressed or not)") from None


def is_jsonl(name: str) -> bool:
    """Whether a trace file of this name is read as JSONL (else as CSV); a compression's ending (``.gz``, ``.xz``
    …) after the name's own suffix is passed over (whether a file is compressed is told by its bytes)."""
    return Path(uncompressed_name(name)).suffix.lower() in (".jsonl", ".json")


def trace_of(given: "str | Sequence[object] | TraceFile") -> Trace:
    """The trace a request gives: a file's path (read from disk), a file's text, or its rows inline."""
    if isinstance(given, TraceFile):
        return parse_trace(given.content(), jsonl=is_jsonl(given.name))
    if isinstance(given, str):
        return read_trace(given)
    return trace_from_rows(given)


def trace_label(given: "str | Sequence[object] | TraceFile | None") -> str | None:
    """How a search's summary names the trace it replayed: its file, or how many rows were given inline."""
    if given is None or isinstance(given, str):
        return given
    return given.name if isinstance(given, TraceFile) else f"{len(given):,} rows given inline"


def read_trace(path: Path | str) -> Trace:
    """Read a trace file (``.jsonl`` / ``.json`` as JSONL, anything else as CSV)."""
    path = Path(path)
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise InvalidScenarioError(f"trace {path}: cannot be read ({exc.strerror})", field="trace") from None
    if size > MAX_TRACE_BYTES:
        raise InvalidScenarioError(f"trace {path}: {size:,} bytes is too large", field="trace",
                                   allowed=f"at most {MAX_TRACE_BYTES:,} bytes")
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InvalidScenarioError(f"trace {path}: cannot be read ({exc.strerror})", field="trace") from None
    text = text_of(data, where=f"trace {path}", field="trace", error=InvalidScenarioError, max_bytes=MAX_TRACE_BYTES,
                       encoding="utf-8-sig")
    return parse_trace(text, jsonl=is_jsonl(path.name))
