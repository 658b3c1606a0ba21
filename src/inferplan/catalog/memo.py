"""Remember the answers of pure functions of a catalogue and frozen inputs.

The planner asks the same questions many times: every plan of one model, platform and workload
packs the same replica cells and draws the same frontier, whatever the users, money or currency.
``per_catalog`` keeps the last answers of such a function, keyed by the catalogue object it was
given (by identity: a catalogue is loaded once and never changes) and its other, hashable
arguments (frozen models). Answers are frozen models, shared between callers, never changed.
A call without a catalogue object, or with an unhashable argument, is not remembered.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

from pydantic import BaseModel

from inferplan.catalog.loader import Catalog

F = TypeVar("F", bound=Callable[..., Any])


class _Same:
    """A catalogue as a cache key: equal only to itself."""

    __slots__ = ("catalog",)

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog

    def __hash__(self) -> int:
        return id(self.catalog)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Same) and other.catalog is self.catalog


class _Stated:
    """A frozen model as a cache key: equal to another only with the same values and the same fields
    stated. pydantic's equality leaves out which fields were given, and an input means otherwise with
    a default stated (a deployment naming vLLM, or TP 1, is planned as stated; one naming neither
    takes its hardware's engine and its engine's layout)."""

    __slots__ = ("model", "stated")

    def __init__(self, model: BaseModel) -> None:
        self.model, self.stated = model, frozenset(model.model_fields_set)

    def __hash__(self) -> int:
        return hash((self.model, self.stated))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Stated) and other.stated == self.stated and other.model == self.model


def _key(value: Any) -> Any:
    if isinstance(value, Catalog):
        return _Same(value)
    return _Stated(value) if isinstance(value, BaseModel) else value


def _value(part: Any) -> Any:
    if isinstance(part, _Same):
        return part.catalog
    return part.model if isinstance(part, _Stated) else part


def per_catalog(maxsize: int) -> Callable[[F], F]:
    def decorate(fn: F) -> F:
        @functools.lru_cache(maxsize=maxsize)
        def remembered(*args: Any, **kwargs: Any) -> Any:
            return fn(*map(_value, args), **{k: _value(v) for k, v in kwargs.items()})

        @functools.wraps(fn)
        def call(*args: Any, **kwargs: Any) -> Any:
            args_key, kwargs_key = tuple(map(_key, args)), {k: _key(v) for k, v in kwargs.items()}
            try:
                hash((args_key, tuple(kwargs_key.items())))
            except TypeError:
                return fn(*args, **kwargs)
            if not any(isinstance(p, _Same) for p in (*args_key, *kwargs_key.values())):
                return fn(*args, **kwargs)  # the catalogue the function would load itself may differ between calls
            return remembered(*args_key, **kwargs_key)

        call.cache_clear = remembered.cache_clear  # type: ignore[attr-defined]
        call.cache_info = remembered.cache_info  # type: ignore[attr-defined]
        return call  # type: ignore[return-value]

    return decorate
