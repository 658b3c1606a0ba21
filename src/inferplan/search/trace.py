"""A request trace: arrival time, prompt tokens and output tokens per request, read from CSV or JSONL.

CSV: a header row naming ``arrival_s`` (or ``timestamp``), ``input_tokens`` and ``output_tokens``
(other columns are ignored). JSONL: one object per line with the same keys. Times are seconds
from any origin and must not decrease, and at least two must differ (the trace's span gives its
rate); token counts are whole numbers from 1 to ``MAX_TRACE_TOKENS``. A bad row is refused naming its row number (the header is row 1 of a CSV; the first
line is row 1 of a JSONL file; rows given inline are numbered from 0) and the column.
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

from inferplan.errors import InvalidScenarioError

MAX_TRACE_BYTES = 64 * 2**20  # a trace file larger than this is refused (about a million rows)
MAX_TRACE_ROWS = 100_000  # rows a trace given inline (not as a file) may carry
# tokens one request may have of each kind: the most a load's mean lengths take (arrivals.Load), far
# past any model's context
MAX_TRACE_TOKENS = 100_000_000
TIME_KEYS = ("arrival_s", "timestamp")
COLUMNS = ("arrival_s", "input_tokens", "output_tokens")


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


def _number(raw: object, row: int, column: str, *, whole: bool, minimum: float, maximum: float = math.inf) -> float:
    where = f"row {row}, column {column}"
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        raise InvalidScenarioError(f"trace {where}: missing", field=f"trace.row[{row}].{column}",
                                   allowed="a number" if not whole else "a whole number")
    if isinstance(raw, bool):
        raise InvalidScenarioError(f"trace {where}: {raw!r} is not a number", field=f"trace.row[{row}].{column}")
    try:
        value = float(raw)
    except (TypeError, ValueError):
        raise InvalidScenarioError(f"trace {where}: {raw!r} is not a number", field=f"trace.row[{row}].{column}",
                                   allowed="a number") from None
    if not math.isfinite(value) or not minimum <= value <= maximum or (whole and value != int(value)):
        kind = "a whole number" if whole else "a number"
        most = f" and at most {maximum:,.0f}" if math.isfinite(maximum) else ""
        raise InvalidScenarioError(f"trace {where}: {raw!r} is out of range", field=f"trace.row[{row}].{column}",
                                   allowed=f"{kind} of at least {minimum:g}{most}")
    return value


def _rows_from_csv(text: str) -> list[tuple[int, dict]]:
    reader = csv.DictReader(io.StringIO(text))
    if not reader.fieldnames:
        raise InvalidScenarioError("trace: the file is empty", field="trace", allowed="a header row and one row per request")
    return [(i + 2, row) for i, row in enumerate(reader)]


def _rows_from_jsonl(text: str) -> list[tuple[int, dict]]:
    rows = []
    for i, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InvalidScenarioError(f"trace row {i}: not JSON ({exc.msg})", field=f"trace.row[{i}]",
                                       allowed="one JSON object per line") from None
        rows.append((i, _record(record, i, "one JSON object per line")))
    return rows


def _record(record: object, row: int, allowed: str) -> dict:
    if not isinstance(record, dict):
        raise InvalidScenarioError(f"trace row {row}: not a JSON object", field=f"trace.row[{row}]", allowed=allowed)
    return record


def parse_trace(text: str, *, jsonl: bool) -> Trace:
    """A ``Trace`` from the text of a CSV (``jsonl=False``) or JSONL file."""
    rows = _rows_from_jsonl(text) if jsonl else _rows_from_csv(text)
    if not rows:
        raise InvalidScenarioError("trace: no requests in the file", field="trace", allowed="one row per request")
    return _trace_of(rows)


def trace_from_rows(rows: Sequence[object]) -> Trace:
    """A ``Trace`` from rows given inline (JSON objects with the file's keys), numbered from 0 in errors."""
    if not rows:
        raise InvalidScenarioError("trace: no requests", field="trace", allowed="one row per request")
    if len(rows) > MAX_TRACE_ROWS:
        raise InvalidScenarioError(f"trace: {len(rows):,} rows is too many", field="trace",
                                   allowed=f"at most {MAX_TRACE_ROWS:,} rows")
    return _trace_of([(i, _record(r, i, "an object of arrival_s, input_tokens, output_tokens")) for i, r in enumerate(rows)])


def _trace_of(rows: list[tuple[int, dict]]) -> Trace:
    times, inputs, outputs = [], [], []
    for row, record in rows:
        key = next((k for k in TIME_KEYS if k in record), TIME_KEYS[0])
        t = _number(record.get(key), row, key, whole=False, minimum=0.0)
        if times and t < times[-1]:
            raise InvalidScenarioError(f"trace row {row}, column {key}: {t:g} is earlier than the row before ({times[-1]:g})",
                                       field=f"trace.row[{row}].{key}", allowed="arrival times that do not decrease")
        times.append(t)
        inputs.append(int(_number(record.get("input_tokens"), row, "input_tokens", whole=True, minimum=1,
                                  maximum=MAX_TRACE_TOKENS)))
        outputs.append(int(_number(record.get("output_tokens"), row, "output_tokens", whole=True, minimum=1,
                                   maximum=MAX_TRACE_TOKENS)))
    start = times[0]
    return Trace(arrival_s=tuple(t - start for t in times), input_tokens=tuple(inputs), output_tokens=tuple(outputs))


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
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidScenarioError(f"trace {path}: cannot be read as UTF-8 text ({exc})", field="trace") from None
    return parse_trace(text, jsonl=path.suffix.lower() in (".jsonl", ".json"))
