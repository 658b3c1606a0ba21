"""The base of everything a person or a data file states: deployments, workloads, scenarios, API
bodies and catalogue entries.

Frozen, no unknown keys, no NaN or infinity, and ``true``/``false`` is not a number: pydantic would
read ``gpus: true`` as 1 and YAML reads ``on``/``yes`` as true, so a stray boolean would become a
silent 1 GPU or a 1.0 price; likewise ``"100"`` in a number field is refused rather than read. A
field that takes booleans says so in its type.

Text is bounded and plain: a string anywhere in an input (a field, a list item, a mapping's key or
value) has at most ``MAX_TEXT_CHARS`` characters and none of ``FORBIDDEN_CHARS``: control
characters other than tab and line breaks (a NUL truncates C strings and SQLite text), the bidi
embedding, override and isolate controls U+202A–202E and U+2066–2069 (they make a name read
differently from what it is), and lone UTF-16 surrogates (no UTF-8 encoder writes them).
"""

from __future__ import annotations

import re
import types
import typing
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationInfo, field_validator


class WrittenFloat(float):
    """A number YAML read from text such as ``1e13``, with that text: a text field gets the text back."""

    text: str

    def __new__(cls, text: str) -> "WrittenFloat":
        number = super().__new__(cls, text.replace("_", ""))
        number.text = text
        return number


def takes_bool(annotation: Any) -> bool:
    """Whether a field's type admits a boolean (``bool``, ``bool | None``, ``Any`` …)."""
    if annotation is bool or annotation is Any:
        return True
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return takes_bool(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType):
        return any(takes_bool(arg) for arg in typing.get_args(annotation))
    return False


def numeric(annotation: Any) -> bool:
    """Whether a field holds only numbers (``int``, ``float | None`` …): a string there is a mistake."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return numeric(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        return bool(args) and all(numeric(a) for a in args)
    return annotation in (int, float)


def holds_model(annotation: Any) -> bool:
    """Whether a field's type is a model (``Platform``, ``Workload | None`` …), read from a mapping."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return holds_model(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType):
        return any(holds_model(arg) for arg in typing.get_args(annotation))
    return isinstance(annotation, type) and issubclass(annotation, BaseModel)


def stored(info: ValidationInfo) -> bool:
    """Validating a row this program stored earlier (``context={"stored": True}``): bounds added
    since must not make it unreadable — nothing saved is lost."""
    return bool(info.context and info.context.get("stored"))


# four times the longest note in the shipped catalogue (1,112 characters)
MAX_TEXT_CHARS = 4000
FORBIDDEN_CHARS = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def text_problem(value: Any, inner: bool = False) -> str | None:
    """Why a text, or a text in a list or mapping, cannot be taken (None: it can). A mapping inside
    a list or mapping is a nested input and its own fields check it, naming their own path."""
    if isinstance(value, str):
        if len(value) > MAX_TEXT_CHARS:
            return f"a text of {len(value)} characters: at most {MAX_TEXT_CHARS}"
        bad = FORBIDDEN_CHARS.search(value)
        return None if bad is None else f"U+{ord(bad.group()):04X} at character {bad.start()}: control, bidi and surrogate characters are refused"
    if isinstance(value, (list, tuple)):
        return next(filter(None, (text_problem(v, True) for v in value)), None)
    if isinstance(value, dict) and not inner:
        return next(filter(None, (text_problem(k, True) or text_problem(v, True) for k, v in value.items())), None)
    return None


class Input(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    @field_validator("*", mode="before")
    @classmethod
    def _numbers_are_numbers(cls, value: Any, info: ValidationInfo) -> Any:
        if isinstance(value, WrittenFloat) and info.field_name is not None:
            return value if numeric(cls.model_fields[info.field_name].annotation) else value.text
        if isinstance(value, (bool, str)) and info.field_name is not None:
            annotation = cls.model_fields[info.field_name].annotation
            if isinstance(value, bool) and not takes_bool(annotation):
                raise ValueError(f"{str(value).lower()} is a yes/no value, not what this field takes")
            if isinstance(value, str) and numeric(annotation):
                raise ValueError(f"{value[:40]!r} is text: write the number without quotes")
        if isinstance(value, dict) and info.field_name is not None and holds_model(cls.model_fields[info.field_name].annotation):
            return value  # a nested input: its own fields check their texts and name their own paths
        if isinstance(value, (str, list, tuple, dict)) and not stored(info):
            problem = text_problem(value)
            if problem:
                raise ValueError(problem)
        return value
