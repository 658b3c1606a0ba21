"""A trace given inline in a JSON body (``trace``: rows of arrival_s, input_tokens, output_tokens):
parsed by the library (``search.trace.trace_from_rows``), as the CLI's ``--trace FILE`` is, and a
bad row's error addressed at its place in the body (``trace.<index>.<column>``)."""

from __future__ import annotations

import re

from inferplan.errors import InferplanError
from inferplan.search.trace import Trace, trace_from_rows

_ROW = re.compile(r"^trace\.row\[(\d+)\]")


def inline_trace(rows: list) -> Trace:
    try:
        return trace_from_rows(rows)
    except InferplanError as exc:
        raise addressed_row(exc) from None


def addressed_row(exc: InferplanError) -> InferplanError:
    """``trace.row[3].input_tokens`` (the library's name) as ``trace.3.input_tokens`` (the body's path)."""
    if exc.field:
        exc.field = _ROW.sub(r"trace.\1", exc.field)
    return exc
