"""Which engines run disaggregated prefill/decode and which draft with a model's MTP heads, and how many
tokens an MTP or a published EAGLE-3 draft drafts per step (``search/data/serving_modes.yaml``, every
claim with its source)."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import yaml

from inferplan.catalog.provenance import Count, Source
from inferplan.errors import CatalogError
from inferplan.inputs import Input

DATA = Path(__file__).parent / "data" / "serving_modes.yaml"


class EngineModes(Input):
    engine: str
    disaggregated: bool
    disaggregated_source: str
    mtp_draft: bool
    mtp_draft_source: str


class ServingModes(Input):
    sources: tuple[Source, ...]
    engines: tuple[EngineModes, ...]
    mtp_draft_tokens: Count
    eagle3_draft_tokens: Count

    def disaggregates(self, engine: str) -> bool:
        return any(e.engine == engine and e.disaggregated for e in self.engines)

    def drafts_with_mtp(self, engine: str) -> bool:
        return any(e.engine == engine and e.mtp_draft for e in self.engines)


@lru_cache(maxsize=1)
def serving_modes() -> ServingModes:
    """The shipped file, validated; every source id a record names must be listed."""
    modes = ServingModes.model_validate(yaml.safe_load(DATA.read_text(encoding="utf-8")))
    known = {s.id for s in modes.sources}
    named = {e.disaggregated_source for e in modes.engines} | {e.mtp_draft_source for e in modes.engines}
    named |= {modes.mtp_draft_tokens.source, modes.eagle3_draft_tokens.source}
    if missing := named - known:
        raise CatalogError(f"{DATA.name}: unknown sources {sorted(missing)}", field=DATA.name)
    return modes
