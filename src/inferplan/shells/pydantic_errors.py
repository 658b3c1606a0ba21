"""What a pydantic validation error says is allowed, for the ``allowed`` part of both shells' errors.

A field typed as a fixed set of values (``Literal["flashinfer", "pytorch"]``) is refused by pydantic
with the set in its context (``"'flashinfer' or 'pytorch'"``); a value outside a field's bounds
(``Field(ge=1, le=1024)``) with the bound (``{"ge": 1}``). The CLI's one line and the API's 422 give
either as ``allowed`` like every other refusal; a validator raising ``PydanticCustomError`` with an
``allowed`` entry in its context, that.
"""

from __future__ import annotations

import re

# pydantic's error type for a value outside a field's min/max -> what the field takes ({} is the bound)
ALLOWED_BY_BOUND = {
    "greater_than_equal": "at least {}",
    "less_than_equal": "at most {}",
    "greater_than": "more than {}",
    "less_than": "less than {}",
    "string_too_long": "at most {} characters",
}


def allowed_by(error: dict) -> str | None:
    """The values a pydantic error lists as allowed (``"'a', 'b' or 'c'"`` -> ``"a, b, c"``), or the bound
    it names (``greater_than_equal`` with ``{"ge": 1}`` -> ``"at least 1"``), else None."""
    kind, ctx = error.get("type"), error.get("ctx") or {}
    if isinstance(ctx.get("allowed"), str):  # a validator's own PydanticCustomError says what it takes
        return ctx["allowed"]
    if kind in ("tuple_type", "list_type"):
        return "a list"
    if kind in ("too_long", "too_short") and ("max_length" in ctx or "min_length" in ctx):
        bound = ctx.get("max_length", ctx.get("min_length"))
        return f"{'at most' if kind == 'too_long' else 'at least'} {bound} item{'' if bound == 1 else 's'}"
    if kind in ALLOWED_BY_BOUND and ctx:
        return ALLOWED_BY_BOUND[kind].format(_number(next(iter(ctx.values()))))
    if kind != "literal_error":
        return None
    expected = str(ctx.get("expected", ""))
    values = [v.strip().strip("'\"") for v in re.split(r",| or ", expected) if v.strip()]
    return ", ".join(values) or None


def plain_message(msg: object) -> str:
    """pydantic's message as a person reads it: a validator's own words without pydantic's "Value
    error, " before them, and a tuple (a list in JSON and on the command line) called a list."""
    return str(msg).removeprefix("Value error, ").replace("Tuple should", "The list should")


def _number(bound) -> str:
    """A bound as a user would type it: 1e6 as 1000000, 0.5 as 0.5."""
    if isinstance(bound, float) and bound.is_integer():
        return str(int(bound))
    return str(bound)
