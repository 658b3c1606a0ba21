"""The columns a trace is read by (``search/data/trace_formats.yaml``: inferplan's own and the public traces'
as published) and its arrival times: numbers of the format's unit, or dates and times read as seconds after
the first row's."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Collection
from functools import lru_cache
from pathlib import Path

import yaml
from pydantic import Field

from inferplan.catalog.provenance import Source
from inferplan.errors import CatalogError, InvalidScenarioError
from inferplan.inputs import Input

DATA = Path(__file__).parent / "data" / "trace_formats.yaml"
TIME_ALLOWED = ("a number of seconds of at least 0, or a date and time (ISO 8601, e.g. 2024-05-10 00:00:00.009930+00:00), "
                "every row in one form")


class TraceFormat(Input):
    id: str
    name: str
    time_columns: tuple[str, ...] = Field(min_length=1)
    time_unit_s: float = Field(gt=0)  # seconds per unit of a number in the time column
    input_column: str
    output_column: str
    source: tuple[str, ...] = ()  # ids in ``sources``; none for inferplan's own columns

    @property
    def columns(self) -> tuple[str, ...]:
        return (*self.time_columns, self.input_column, self.output_column)

    def missing(self, found: Collection[str]) -> list[str]:
        """The columns of this format a header or row lacks (the time column as its alternatives)."""
        lacks = [" or ".join(self.time_columns)] if not set(self.time_columns) & set(found) else []
        return lacks + [c for c in (self.input_column, self.output_column) if c not in found]

    def time_words(self) -> str:
        unit = {1: "seconds", 1e-3: "milliseconds"}.get(self.time_unit_s, f"units of {self.time_unit_s:g} s")
        return f"{' or '.join(self.time_columns)} ({unit} or dates and times), {self.input_column}, {self.output_column}"


class TraceFormats(Input):
    sources: tuple[Source, ...]
    formats: tuple[TraceFormat, ...] = Field(min_length=1)


@lru_cache(maxsize=1)
def trace_formats() -> tuple[TraceFormat, ...]:
    """The shipped formats, validated: every source a format names is listed; inferplan's own comes first."""
    data = TraceFormats.model_validate(yaml.safe_load(DATA.read_text(encoding="utf-8")))
    known = {s.id for s in data.sources}
    for f in data.formats:
        if unknown := set(f.source) - known:
            raise CatalogError(f"{DATA.name}: format {f.id} names unknown sources {sorted(unknown)}", field=DATA.name)
    return data.formats


def format_of(found: Collection[str]) -> tuple[TraceFormat, list[str]]:
    """The format a header's (or a first row's) columns name, with no columns missing; else the one it names most
    of (inferplan's own on a tie) and the columns it lacks."""
    formats = trace_formats()
    for f in formats:
        if not f.missing(found):
            return f, []
    nearest = max(formats, key=lambda f: len(set(f.columns) & set(found)))  # max keeps the first of a tie
    return nearest, nearest.missing(found)


def formats_allowed() -> str:
    """What a header may name, for a refusal's ``allowed``."""
    own, *published = trace_formats()
    return (f"a header row naming {' or '.join(own.time_columns)}, {own.input_column} and {own.output_column} (other "
            f"columns are ignored), or a published trace's: " + "; ".join(f"{f.name}: {f.time_words()}" for f in published))


def _form(t: dt.datetime | float) -> str:
    if not isinstance(t, dt.datetime):
        return "a number"
    return "a date and time with a time zone" if t.utcoffset() is not None else "a date and time without a time zone"


class ArrivalClock:
    """Reads a trace's arrival times row by row, all in the first row's form: numbers scaled to seconds, or dates
    and times (all with a time zone or all without) as seconds after the first row's."""

    def __init__(self, fmt: TraceFormat) -> None:
        self.fmt = fmt
        self.first: tuple[str, dt.datetime | float] | None = None  # the first row's label and time

    def seconds(self, raw: object, row: tuple[int, str], column: str, field: str,
                number: Callable[..., float]) -> float:
        """``raw`` as seconds: a number read by ``number`` (the trace's own checks) in the format's unit, or a date
        and time; a row in another form than the first row's is refused naming both."""
        t: dt.datetime | float | None = _datetime(raw)
        if t is None:
            t = number(raw, row, column, whole=False, minimum=0.0, allowed=TIME_ALLOWED,
                       kind="a number or a date and time") * self.fmt.time_unit_s
        if self.first is None:
            self.first = (row[1].split(" (")[0], t)
        label, first = self.first
        if _form(t) != _form(first):
            raise InvalidScenarioError(f"trace {row[1]}, column {column}: {raw!r} is {_form(t)}, where {label} gives "
                                       f"{_form(first)}", field=field, allowed=TIME_ALLOWED)
        return (t - first).total_seconds() if isinstance(t, dt.datetime) else t


def _datetime(raw: object) -> dt.datetime | None:
    """A date and time as ISO 8601 writes it (a space or T between date and time, any digits of a second, a
    time zone or none), else None."""
    if not isinstance(raw, str) or not any(c in raw for c in "-:"):
        return None
    text = raw.strip()
    if not text or text.lstrip("+-").replace(".", "", 1).isdigit() or text.lower().lstrip("+-") in ("nan", "inf", "infinity"):
        return None  # a (signed) number: read as one
    try:
        return dt.datetime.fromisoformat(text)
    except ValueError:
        return None

