"""What every benchmark-result parser (``formats.py``, ``serving_formats.py``) shares: the parsed file
(``Parsed``), strict readers of a number, a JSON document, a name or a date that refuse a bad value
naming its key or line, and the ``MeasuredPoint`` built from the figures read."""

from __future__ import annotations

import json
import math
import re
import sys
from typing import Any, Iterator

from pydantic import ValidationError

from inferplan.errors import InvalidScenarioError
from inferplan.performance.run_record import MeasuredPoint

MS = 1e-3
MAX_POINTS = 10_000  # the most points one file may give


class Parsed:
    """What a file says: its points and what it names of the run (model, engine version, date, the acceptance its
    server measured)."""

    def __init__(self, points: list[MeasuredPoint], places: list[str] | None = None, **meta: object):
        self.points = points
        # where each point is in the file ("line 3", "benchmarks[1]"), to name it
        self.places = [p.rstrip(" .:") for p in places] if places else [f"points[{i}]" for i in range(len(points))]
        self.meta = {k: v for k, v in meta.items() if v}


def bad_field(where: str, why: str, fmt: str) -> InvalidScenarioError:
    return InvalidScenarioError(f"{where}: {why}", field=where, allowed=f"a {fmt} result file (docs/measurements.md)")


def read_number(obj: dict, key: str, fmt: str, where: str = "", *, required: bool = True) -> float | None:
    value = obj.get(key) if isinstance(obj, dict) else None
    if value is None or value == "":
        if required:
            raise bad_field(f"{where}{key}", "missing", fmt)
        return None
    if isinstance(value, bool):
        raise bad_field(f"{where}{key}", f"{value!r} is not a number", fmt)
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise bad_field(f"{where}{key}", f"{value!r} is not a number", fmt) from None
    if not math.isfinite(number) or number < 0:
        raise bad_field(f"{where}{key}", f"{value!r} is not a finite, non-negative number", fmt)
    return number


def read_count(obj: dict, key: str, fmt: str, where: str = "", *, required: bool = True) -> int | None:
    """A count the client writes as a whole number (requests, clients, tokens): a fraction is refused naming the
    key, never rounded into another load."""
    number = read_number(obj, key, fmt, where, required=required)
    if number is None:
        return None
    if not number.is_integer():
        raise bad_field(f"{where}{key}", f"{obj[key]!r} is not a whole number", fmt)
    return int(number)


def measured_point(where: str, fmt: str, keys: dict[str, str] | None = None, **fields: Any) -> MeasuredPoint:
    """The point of the figures read; a figure out of the point's range is refused naming the file's key for it
    (``keys``: the point's field -> the file's key; a field read under its own name is left out)."""
    fields = {k: (v if v else None) if k not in ("concurrency", "input_tokens", "output_tokens", "failed_requests") else v
              for k, v in fields.items()}  # a figure of 0 is none measured; 0 failed requests is a count
    try:
        return MeasuredPoint(**fields)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = str(first["loc"][0]) if first["loc"] else ""
        key = (keys or {}).get(field, field)
        held = "" if key == field else f", held as {field}"  # a file's key in ms or another unit: name the SI bound's field
        raise bad_field(f"{where}{key}", f"out of range ({first['msg']}{held})", fmt) from None


def not_json(exc: ValueError | RecursionError, fmt: str, line: int = 1, what: str = "") -> InvalidScenarioError:
    """A document that does not parse, refused naming the line and column the parser stopped at and its message
    (``line``: the line a JSON-lines record is on, whose own line the parser counts as its first); one nested past
    Python's recursion limit, or with a whole number longer than Python converts (a ValueError that names no place)."""
    if isinstance(exc, RecursionError):
        return bad_field(f"line {line}", f"not read as JSON (nested too deeply){what}", fmt)
    if not isinstance(exc, json.JSONDecodeError):
        return bad_field(f"line {line}", f"not read as JSON: a whole number of more than {sys.get_int_max_str_digits():,} "
                         f"digits{what}", fmt)
    at = line + exc.lineno - 1
    return InvalidScenarioError(f"line {at}, column {exc.colno}: not valid JSON ({exc.msg}){what}", field=f"line {at}",
                                allowed=f"a {fmt} result file (docs/measurements.md)")


def read_json(text: str, fmt: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise not_json(exc, fmt) from None


def json_documents(text: str, fmt: str) -> list[tuple[int, Any]]:
    """The JSON documents a file holds one after another (a vLLM ``--append-result`` file, JSON lines), each with the
    line it starts on; the first that does not parse is refused naming its line and column."""
    decoder, documents, at, line, counted = json.JSONDecoder(), [], 0, 1, 0
    while True:
        while at < len(text) and text[at].isspace():
            at += 1
        if at == len(text) and documents:
            return documents
        line, counted = line + text.count("\n", counted, at), at  # newlines counted once, up to where a document starts
        try:
            document, at = decoder.raw_decode(text, at)
        except (ValueError, RecursionError) as exc:
            raise not_json(exc, fmt, 1 if isinstance(exc, json.JSONDecodeError) else line) from None
        documents.append((line, document))
        if len(documents) > MAX_POINTS:
            raise bad_field(f"line {line}", f"more than {MAX_POINTS:,} results", fmt)


def json_lines(text: str, fmt: str, what: str) -> Iterator[tuple[int, Any]]:
    """A JSON-lines file's documents in order, each with its line number, blank lines passed over; a line that is not
    JSON is refused naming it and the column the parser stopped at when it is reached (``what``: what a line holds,
    "one run per line")."""
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            document = json.loads(line)
        except (ValueError, RecursionError) as exc:
            raise not_json(exc, fmt, n, f"; {what}") from None
        yield n, document


def from_ms(value: float | None) -> float | None:
    return None if value is None else value * MS


def text_of(value: Any) -> str | None:
    return value.strip()[:200] if isinstance(value, str) and value.strip() else None


def iso_date(value: Any) -> str | None:
    m = re.match(r"^(\d{4})-?(\d{2})-?(\d{2})", value) if isinstance(value, str) else None
    return f"{m.group(1)}-{m.group(2)}-{m.group(3)}" if m else None


def find_key(obj: Any, key: str, depth: int = 0) -> Any:
    """The first value of ``key`` anywhere in nested objects (genai-perf moves its input config)."""
    if depth > 8:
        return None
    if isinstance(obj, dict):
        if key in obj and not isinstance(obj[key], (dict, list)):
            return obj[key]
        for v in obj.values():
            if (found := find_key(v, key, depth + 1)) is not None:
                return found
    return None
