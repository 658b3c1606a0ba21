"""Targets a search applies when the request leaves them out, and how near a missed target counts as
a near miss (``search/data/defaults.yaml``, each number with its kind and source)."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Literal

import yaml
from pydantic import Field

from inferplan.catalog.provenance import Source
from inferplan.errors import CatalogError
from inferplan.inputs import Input

DATA = Path(__file__).parent / "data" / "defaults.yaml"


class DefaultNumber(Input):
    value: float = Field(gt=0)
    kind: Literal["spec", "measured", "derived", "assumed"]
    source: str
    reason: str


class SearchDefaults(Input):
    sources: tuple[Source, ...]
    max_utilisation: DefaultNumber  # the busiest instance's load factor, when no TTFT target is stated
    near_miss_margin: DefaultNumber  # how far past a target a cheaper deployment is still named a near miss


@lru_cache(maxsize=1)
def search_defaults() -> SearchDefaults:
    """The shipped file, validated; every source id a number names must be listed."""
    d = SearchDefaults.model_validate(yaml.safe_load(DATA.read_text(encoding="utf-8")))
    for name in ("max_utilisation", "near_miss_margin"):
        number = getattr(d, name)
        if number.source not in {s.id for s in d.sources}:
            raise CatalogError(f"{DATA.name}: unknown source {number.source}", field=DATA.name)
        if not 0 < number.value <= 1:
            raise CatalogError(f"{DATA.name}: {name} must lie in (0, 1]", field=DATA.name)
    return d
