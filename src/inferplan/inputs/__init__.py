"""The base of everything a person or a data file states: deployments, workloads, scenarios, API
bodies and catalogue entries.

Frozen, no unknown keys, no NaN or infinity, and ``true``/``false`` is not a number: pydantic would
read ``gpus: true`` as 1 and YAML reads ``on``/``yes`` as true, so a stray boolean would become a
silent 1 GPU or a 1.0 price; likewise ``"100"`` in a number field is refused rather than read. A
field that takes booleans says so in its type, and one that takes only a boolean (``bool``, ``bool |
None``) takes only ``true``/``false``: pydantic would read ``"yes"``, ``"off"``, ``1`` or ``0.0`` there,
and ``"false"`` typed in quotes would not stay false by accident elsewhere. YAML 1.1's ``yes``/``no``/
``on``/``off`` unquoted are booleans to ``yaml.safe_load`` already, so a data file may still write them.

Text is bounded and plain: a string anywhere in an input (a field, a list item, a mapping's key or
value) has at most ``MAX_TEXT_CHARS`` characters (a field an input lists in ``documents``, such as an
uploaded result file, is bounded by its own ``max_length`` instead) and none of ``FORBIDDEN_CHARS``: control
characters other than tab and line breaks (a NUL truncates C strings and SQLite text), the bidi
embedding, override and isolate controls U+202A–202E and U+2066–2069 (they make a name read
differently from what it is), and lone UTF-16 surrogates (no UTF-8 encoder writes them).

The package sits under every layer, beside ``errors`` and ``units``, and holds the stated inputs
the layers above share: ``deployment.Deployment`` (the model, hardware, parallelism and engine a
memory or speed question is about) and ``workload.Workload`` (the requests a speed question
serves). It imports nothing from the rest of inferplan but ``units`` (numbers are written as everywhere else).
"""

import functools
import re
import types
import typing
from typing import Annotated, Any, ClassVar

from pydantic import AfterValidator, BaseModel, ConfigDict, ValidationInfo, WithJsonSchema, field_validator
from pydantic_core import PydanticCustomError

from inferplan.units import plain_number


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


def _holds_only(annotation: Any, kinds: tuple[type, ...]) -> bool:
    """Whether a field's type is one of ``kinds``, optional or not (``float | None``, ``bool``)."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _holds_only(typing.get_args(annotation)[0], kinds)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        return bool(args) and all(_holds_only(a, kinds) for a in args)
    return annotation in kinds


def numeric(annotation: Any) -> bool:
    """Whether a field holds only numbers (``int``, ``float | None`` …): a string there is a mistake."""
    return _holds_only(annotation, (int, float))


def _reads_as_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


# a numeric field's bounds (annotated_types' Ge, Gt, Le, Lt in its metadata) as a person reads them
# the key of a field's ``json_schema_extra`` holding the least a row not stored before takes (``number_wanted``)
NEW_ROWS_AT_LEAST = "new_rows_at_least"
_BOUND_WORDS = (("ge", "at least"), ("gt", "more than"), ("le", "at most"), ("lt", "less than"))


@functools.cache
def _number_wanted(cls: type[BaseModel], name: str) -> str:
    return number_wanted(cls.model_fields[name])


def number_wanted(field: Any) -> str:
    """What a numeric field (its pydantic ``FieldInfo``) takes: "a whole number at least 1", "a number
    more than 0 and at most 1". A field whose ``json_schema_extra`` names a ``new_rows_at_least`` takes at least
    that in a row not stored before (its own lower bound stays for rows stored earlier), and says so."""
    extra = field.json_schema_extra if isinstance(field.json_schema_extra, dict) else {}
    floor = extra.get(NEW_ROWS_AT_LEAST)
    bounds = ([f"at least {plain_number(floor)}"] if floor is not None else []) + [
        f"{word} {plain_number(getattr(m, attr))}" for m in field.metadata for attr, word in _BOUND_WORDS
        if getattr(m, attr, None) is not None and (floor is None or attr in ("le", "lt"))]
    kind = "a whole number" if _holds_only(field.annotation, (int,)) else "a number"
    return " ".join([kind, " and ".join(bounds)]).strip()


def only_bool(annotation: Any) -> bool:
    """Whether a field holds only a yes/no (``bool``, ``bool | None``): anything but true/false is a mistake."""
    return _holds_only(annotation, (bool,))


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


# lists and mappings an input nests at most (a scenario nests 3, a search's trace 2): deeper is
# refused, and the walk below never recurses however deep a body is
MAX_INPUT_DEPTH = 32


def text_problem(value: Any, inner: bool = False, max_chars: int | None = MAX_TEXT_CHARS) -> str | None:
    """Why a text, or a text in a list or mapping, cannot be taken (None: it can). A mapping inside
    a list or mapping is a nested input and its own fields check it, naming their own path. Lists
    nested more than ``MAX_INPUT_DEPTH`` levels are refused too."""
    stack = [(value, inner, 0)]
    while stack:  # iterative: a list nested 900 deep must not exhaust Python's stack
        value, inner, depth = stack.pop()
        if isinstance(value, str):
            if max_chars is not None and len(value) > max_chars:
                return f"a text of {len(value)} characters: at most {max_chars}"
            bad = FORBIDDEN_CHARS.search(value)
            if bad is not None:
                return f"U+{ord(bad.group()):04X} at character {bad.start()}: control, bidi and surrogate characters are refused"
        elif isinstance(value, (list, tuple)) or (isinstance(value, dict) and not inner):
            if depth >= MAX_INPUT_DEPTH:
                return f"nested more than {MAX_INPUT_DEPTH} levels deep: at most {MAX_INPUT_DEPTH} levels of lists"
            items = ([x for kv in value.items() for x in kv] if isinstance(value, dict) else list(value))
            stack.extend((v, True, depth + 1) for v in reversed(items))
    return None


@functools.cache
def _field_takes(cls: type[BaseModel], name: str) -> tuple[bool, bool, bool, bool]:
    """Whether a field takes a number, a yes/no, a model, nothing but a yes/no: read once per class
    and field (validation asks for every field of every input)."""
    annotation = cls.model_fields[name].annotation
    return numeric(annotation), takes_bool(annotation), holds_model(annotation), only_bool(annotation)


def _own_text_limits(annotation: Any, metadata: tuple | list = ()) -> list[int]:
    """The character limits a text type states (``SafeName``'s, ``Field(max_length=…)`` on a ``str``),
    wherever the type sits in an ``Annotated`` or a union; a limit on a list counts its items, not characters."""
    found = []
    if annotation is str:
        for part in metadata:
            schema = part.json_schema if isinstance(part, WithJsonSchema) else None
            limit = schema.get("maxLength") if isinstance(schema, dict) else getattr(part, "max_length", None)
            if isinstance(limit, int):
                found.append(limit)
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        base, *parts = typing.get_args(annotation)
        found += _own_text_limits(base, [*parts, *metadata])
    elif origin in (typing.Union, types.UnionType):
        found += [n for arg in typing.get_args(annotation) for n in _own_text_limits(arg, metadata)]
    return found


@functools.cache
def _text_limit(cls: type[BaseModel], name: str) -> int | None:
    """The most characters a text in field ``name`` may have: ``MAX_TEXT_CHARS``, or the field's own limit
    when smaller (a scenario's name: ``MAX_NAME_CHARS``), so a refusal names the limit that holds;
    None for a field that holds a whole document."""
    if name in cls.documents:
        return None
    field = cls.model_fields[name]
    return min([MAX_TEXT_CHARS, *_own_text_limits(field.annotation, field.metadata)])


BOOL_ALLOWED = "true, false"


def _not_a_bool(value: Any) -> PydanticCustomError:
    shown = repr(value)
    shown = shown if len(shown) <= 40 else shown[:40] + "…"
    return PydanticCustomError("bool_type", "{shown} is not a yes/no value: write true or false (no quotes)",
                               {"shown": shown, "allowed": BOOL_ALLOWED})


class Input(BaseModel):
    # built when defined, not deferred like the result models: an input is an HTTP request body, whose
    # validator FastAPI builds at start-up with pydantic's notes about the body parameter quieted
    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)
    # fields holding a whole document (a result file's text): bounded by their own Field(max_length), not MAX_TEXT_CHARS
    documents: ClassVar[frozenset[str]] = frozenset()

    @field_validator("*", mode="before")
    @classmethod
    def _numbers_are_numbers(cls, value: Any, info: ValidationInfo) -> Any:
        if info.field_name is not None and value is not None and not isinstance(value, bool):
            if _field_takes(cls, info.field_name)[3]:  # "yes", "off", 1, 0.0 in a true/false field
                raise _not_a_bool(value)
        if info.field_name is not None and isinstance(value, (WrittenFloat, bool, str, dict)):
            is_number, is_bool, is_model, _ = _field_takes(cls, info.field_name)
            if isinstance(value, WrittenFloat):
                return value if is_number else value.text
            if isinstance(value, bool) and not is_bool:
                wanted = _number_wanted(cls, info.field_name) if is_number else None
                raise PydanticCustomError("bool_not_wanted", "{text} is a yes/no value, not what this field takes",
                                          {"text": str(value).lower(), **({"allowed": wanted} if wanted else {})})
            if isinstance(value, str) and is_number:
                wanted = _number_wanted(cls, info.field_name)
                if _reads_as_number(value):
                    raise PydanticCustomError("quoted_number", "{text} is text: write the number without quotes",
                                              {"text": repr(value[:40]), "allowed": wanted})
                raise PydanticCustomError("not_a_number", "{text} is not a number: this field takes {allowed}",
                                          {"text": repr(value[:40]), "allowed": wanted})
            if isinstance(value, dict) and is_model:
                return value  # a nested input: its own fields check their texts and name their own paths
        if (info.field_name is not None and isinstance(value, float) and not value.is_integer()
                and _holds_only(cls.model_fields[info.field_name].annotation, (int,))):
            raise PydanticCustomError("not_a_whole_number", "{text} is not a whole number: this field takes {allowed}",
                                      {"text": f"{value:g}", "allowed": _number_wanted(cls, info.field_name)})
        if isinstance(value, (str, list, tuple, dict)) and not stored(info):
            problem = text_problem(value, max_chars=_text_limit(cls, info.field_name))
            if problem:
                raise ValueError(problem)
        return value


def not_blank(value: Any, *, required: bool = False) -> Any:
    """``value``, unless it is a name left blank ("" or spaces): refused, rather than read as the default
    (a ``required`` field has none to offer)."""
    if isinstance(value, str) and not value.strip():
        raise ValueError("must not be empty: name one" if required else
                         "must not be empty: name one, or leave the field out for its default")
    return value


# Names a person gives (a scenario, a saved scenario, a model read from a config) end up in
# terminals, reports and the web page: a NUL, an ANSI escape or a bidi override (U+202A-U+202E,
# U+2066-U+2069: text that reads differently from what it is) has no business there.
MAX_NAME_CHARS = 200
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
_LINE_BREAK = re.compile("[\t\n\r]")


def plain_text_problem(value: str, *, max_chars: int = MAX_NAME_CHARS, lines: bool = False) -> str | None:
    """Why ``value`` is no plain text (a control or bidi-override character, a line break or tab
    where ``lines`` is false, more than ``max_chars`` characters), or None when it is."""
    if len(value) > max_chars:
        return f"{len(value)} characters; at most {max_chars}"
    bad = _CONTROL.search(value) or (None if lines else _LINE_BREAK.search(value))
    if bad:
        return (f"holds the control character U+{ord(bad.group()):04X} at position {bad.start()}: letters, "
                "digits, punctuation and spaces only, no control or bidi-override characters")
    return None


def _plain(max_chars: int, lines: bool):
    def check(value: str, info: ValidationInfo) -> str:
        problem = None if stored(info) else plain_text_problem(value, max_chars=max_chars, lines=lines)
        if problem:
            raise ValueError(problem)
        return value
    return Annotated[str, AfterValidator(check), WithJsonSchema({"type": "string", "maxLength": max_chars})]


SafeName = _plain(MAX_NAME_CHARS, lines=False)
"""A one-line name (a scenario's, a saved scenario's, a model's): at most ``MAX_NAME_CHARS``
characters, no C0/C1 control character (tab and line breaks included) and no bidi override.
A row this program stored earlier is read as it is (``stored``)."""

SafeText = _plain(MAX_TEXT_CHARS, lines=True)
"""Free text (a note): like ``SafeName`` but up to ``MAX_TEXT_CHARS`` characters, with tabs and
line breaks allowed."""
