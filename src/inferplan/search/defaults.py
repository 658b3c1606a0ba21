"""Targets a search applies when the request leaves them out (``search/data/defaults.yaml``, each
number with its kind and source)."""

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


@lru_cache(maxsize=1)
def search_defaults() -> SearchDefaults:
    """The shipped file, validated; every source id a number names must be listed."""
    d = SearchDefaults.model_validate(yaml.safe_load(DATA.read_text(encoding="utf-8")))
    if d.max_utilisation.source not in {s.id for s in d.sources}:
        raise CatalogError(f"{DATA.name}: unknown source {d.max_utilisation.source}", field=DATA.name)
    if not 0 < d.max_utilisation.value <= 1:
        raise CatalogError(f"{DATA.name}: max_utilisation must lie in (0, 1]", field=DATA.name)
    return d
