"""What a pydantic validation error says is allowed, for the ``allowed`` part of both shells' errors.

A field typed as a fixed set of values (``Literal["flashinfer", "pytorch"]``) is refused by pydantic
with the set in its context (``"'flashinfer' or 'pytorch'"``); a value outside a field's bounds
(``Field(ge=1, le=1024)``) with the bound (``{"ge": 1}``). The CLI's one line and the API's 422 give
either as ``allowed`` like every other refusal; a validator raising ``PydanticCustomError`` with an
``allowed`` entry in its context, that.

Any other error is answered from the field at its place, when the shell passes the model that was
validated (``model``): what the field's type takes, with its bounds (``users`` given 1e30 or
``NaN``: "a whole number at least 1 and at most 1,000,000,000"); a missing field as "required: " and that;
an object given as another type (``model_attributes_type``, ``dict_type``) as the keys it takes.
Without the field, the error type alone says it ("a finite number", "a whole number", "an object").
A number in either part is written as every other message writes it (``units.plain_number``).
"""

from __future__ import annotations

import datetime as dt
import re
from decimal import Decimal
import types
import typing
from typing import Any, Literal

from pydantic import AliasChoices, BaseModel

from inferplan.inputs import number_wanted, numeric, only_bool
from inferplan.units import plain_number

# pydantic's error type for a value outside a field's min/max -> what the field takes ({} is the bound)
ALLOWED_BY_BOUND = {
    "greater_than_equal": "at least {}",
    "less_than_equal": "at most {}",
    "greater_than": "more than {}",
    "less_than": "less than {}",
    "string_too_long": "at most {} characters",
}


# pydantic's error type -> what is allowed when no field says more
ALLOWED_BY_TYPE = {
    "finite_number": "a finite number",
    "int_parsing_size": "a whole number",
    "model_attributes_type": "an object",
    "model_type": "an object",
    "dict_type": "an object",
    "date_from_datetime_parsing": "a date, YYYY-MM-DD",
    "date_parsing": "a date, YYYY-MM-DD",
    "date_type": "a date, YYYY-MM-DD",
}


def allowed_by(error: dict, model: type[BaseModel] | None = None, loc: tuple | list | None = None) -> str | None:
    """The values a pydantic error lists as allowed (``"'a', 'b' or 'c'"`` -> ``"a, b, c"``), or the bound
    it names (``greater_than_equal`` with ``{"ge": 1}`` -> ``"at least 1"``), else what the field at
    ``loc`` (default the error's) of ``model`` takes (see the module text), else None."""
    kind, ctx = error.get("type"), error.get("ctx") or {}
    if isinstance(ctx.get("allowed"), str):  # a validator's own PydanticCustomError says what it takes
        return ctx["allowed"]
    if kind in ("tuple_type", "list_type"):
        return "a list"
    if kind in ("too_long", "too_short") and ("max_length" in ctx or "min_length" in ctx):
        bound = ctx.get("max_length", ctx.get("min_length"))
        return f"{'at most' if kind == 'too_long' else 'at least'} {bound} item{'' if bound == 1 else 's'}"
    if kind in ALLOWED_BY_BOUND and ctx:
        bound = next(iter(ctx.values()))  # a number, or a date's bound as pydantic writes it
        return ALLOWED_BY_BOUND[kind].format(plain_number(bound) if _numeric(bound) else bound)
    if kind == "literal_error":
        expected = str(ctx.get("expected", ""))
        values = [v.strip().strip("'\"") for v in re.split(r",| or ", expected) if v.strip()]
        return ", ".join(values) or None
    takes = _takes_at(model, error.get("loc", ()) if loc is None else loc) if model is not None else None
    if kind == "missing":
        return f"required: {takes}" if takes else "required"
    return takes or ALLOWED_BY_TYPE.get(kind)


def _takes_at(model: type[BaseModel], loc: tuple | list) -> str | None:
    """What the field at ``loc`` in ``model`` takes (``loc`` empty: the model itself)."""
    *path, last = list(loc) or [None]
    holder = model_at(model, path)
    if holder is None:
        return None
    if last is None:
        return takes(holder)
    field = field_named(holder, last) if isinstance(last, str) else None
    return takes(field.annotation, field) if field is not None else None


def model_at(model: type[BaseModel] | None, path: list) -> type[BaseModel] | None:
    """The model holding the fields at ``path`` below ``model`` (list indices skipped), if one."""
    for part in path:
        if model is None:
            return None
        if isinstance(part, int):
            continue
        field = field_named(model, part)
        model = model_in(field.annotation) if field is not None else None
    return model


def field_named(model: type[BaseModel], key: str):
    """The field a body's ``key`` fills (its name, or a validation alias of it)."""
    return next((f for name, f in model.model_fields.items() if key in field_keys(name, f)), None)


def field_keys(name: str, field) -> tuple[str, ...]:
    alias = field.validation_alias
    if isinstance(alias, AliasChoices):
        return tuple(c for c in alias.choices if isinstance(c, str)) or (name,)
    return (alias,) if isinstance(alias, str) else (name,)


def model_in(annotation) -> type[BaseModel] | None:
    """The pydantic model a field holds (itself, optional, or in a list), if one."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    models = [m for arg in typing.get_args(annotation) if (m := model_in(arg)) is not None]
    return models[0] if len(models) == 1 else None


def takes(annotation: Any, field: Any = None) -> str | None:
    """What a type takes, as a person reads it: "a whole number at least 1", "an object with the keys
    a, b", "a list", "true or false" (None: no plain words for it)."""
    if field is not None and numeric(annotation):
        return number_wanted(field)
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return takes(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType):
        words = [takes(a) for a in typing.get_args(annotation) if a is not type(None)]
        return " or ".join(words) if words and all(words) else None
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return _object_of(annotation)
    if origin is Literal:
        return ", ".join(str(v) for v in typing.get_args(annotation))
    if origin in (tuple, list) or annotation in (tuple, list):
        return "a list"
    if origin is dict or annotation is dict:
        return "an object"
    return _SIMPLE.get(annotation) or ("true or false" if only_bool(annotation) else None)


_SIMPLE = {int: "a whole number", float: "a number", str: "a text", dt.date: "a date, YYYY-MM-DD"}
KEYS_LISTED = 12  # an object of more keys is said by its required ones and a count of the rest


def _object_of(model: type[BaseModel]) -> str:
    """The keys an object takes: "an object with the keys a, b, c (a required)", or for a large one
    "an object with the key model and up to 38 optional ones"."""
    keys = {name: field_keys(name, f)[0] for name, f in model.model_fields.items()}
    required = sorted(keys[n] for n, f in model.model_fields.items() if f.is_required())
    if len(keys) <= KEYS_LISTED:
        listed = "an object with the keys " + ", ".join(sorted(keys.values()))
        return listed + (f" ({', '.join(required)} required)" if required else "")
    optional = len(keys) - len(required)
    if not required:
        return f"an object of up to {optional} optional keys"
    return f"an object with the key{'s' if len(required) > 1 else ''} {', '.join(required)} and up to {optional} optional ones"


# pydantic's error type -> its message in place of pydantic's, where pydantic's misleads: a number too large to
# read as an integer (1e308 in a count) is "Unable to parse input string as an integer", though it was no string
MESSAGE_BY_TYPE = {
    "int_parsing_size": "Input is too large: this field takes a whole number within its bounds",
}


def error_message(error: dict) -> str:
    """pydantic's message for ``error`` as a person reads it (``plain_message``, ``MESSAGE_BY_TYPE``), the bound it
    names written as every other message writes a number ("less than or equal to 100,000,000", not 100000000)."""
    message = MESSAGE_BY_TYPE.get(error.get("type")) or plain_message(error.get("msg", ""))
    ctx = error.get("ctx") or {}
    bound = next(iter(ctx.values()), None)
    if error.get("type") in ALLOWED_BY_BOUND and _numeric(bound):
        written = str(int(bound)) if isinstance(bound, float) and bound.is_integer() else str(bound)  # as pydantic writes it
        message = re.sub(rf"(?<![\d.]){re.escape(written)}(?![\d.]*\d)", plain_number(bound), message)
    return message


def _numeric(value: object) -> bool:
    """A bound written as a number (not a date, not a truth value)."""
    return isinstance(value, (int, float, Decimal)) and not isinstance(value, bool)


def plain_message(msg: object) -> str:
    """pydantic's message as a person reads it: a validator's own words without pydantic's "Value
    error, " before them, and a tuple (a list in JSON and on the command line) called a list."""
    return str(msg).removeprefix("Value error, ").replace("Tuple should", "The list should")
