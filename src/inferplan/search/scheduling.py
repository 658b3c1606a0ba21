"""How each engine's scheduler places waiting prompts beside running sequences
(``search/data/scheduling.yaml``, every claim with its source)."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Literal

import yaml

from inferplan.catalog.provenance import Source
from inferplan.errors import CatalogError
from inferplan.inputs import Input

DATA = Path(__file__).parent / "data" / "scheduling.yaml"


class EngineScheduling(Input):
    engine: str
    prefill_policy: Literal["mixed", "prefill_first"]
    source: str
    dp_routing: Literal["least-loaded", "round-robin"] = "least-loaded"
    dp_source: str | None = None


class Scheduling(Input):
    sources: tuple[Source, ...]
    engines: tuple[EngineScheduling, ...]

    def prefill_first(self, engine: str | None) -> bool:
        """Whether ``engine`` runs waiting prompts in steps of their own before decoding (unlisted: mixed)."""
        return any(e.engine == engine and e.prefill_policy == "prefill_first" for e in self.engines)

    def dp_routing(self, engine: str | None) -> str:
        """How ``engine`` routes a request to one of its data-parallel ranks (unlisted: least-loaded)."""
        return next((e.dp_routing for e in self.engines if e.engine == engine), "least-loaded")


@lru_cache(maxsize=1)
def scheduling() -> Scheduling:
    """The shipped file, validated; every source id a record names must be listed."""
    rules = Scheduling.model_validate(yaml.safe_load(DATA.read_text(encoding="utf-8")))
    named = {e.source for e in rules.engines} | {e.dp_source for e in rules.engines if e.dp_source}
    if missing := named - {s.id for s in rules.sources}:
        raise CatalogError(f"{DATA.name}: unknown sources {sorted(missing)}", field=DATA.name)
    return rules
