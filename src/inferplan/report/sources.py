"""Where a shown catalogue number comes from, as the page's hover text says it."""

from __future__ import annotations

import datetime as dt

from pydantic import BaseModel, ConfigDict

from inferplan.catalog.loader import Catalog
from inferplan.catalog.provenance import Sourced


class SourceNote(BaseModel):
    """Where a shown number comes from: the page's hover text on it."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    source: str
    title: str
    url: str | None
    checked: dt.date
    kind: str
    tooltip: str  # "source: <title> (<url>), checked <date>, <kind>"


def source_notes(catalog: Catalog, *quantities: Sourced | None) -> list[SourceNote]:
    """One note per distinct source and date among the quantities (None ones skipped)."""
    notes: list[SourceNote] = []
    for q in quantities:
        if q is None:
            continue
        src = catalog.sources[q.source]
        checked = q.checked or src.checked
        where = src.url or f"seed: {src.seed}"
        note = SourceNote(source=src.id, title=src.title, url=src.url, checked=checked, kind=q.kind.value,
                          tooltip=f"source: {src.title} ({where}), checked {checked.isoformat()}, {q.kind.value}")
        if note not in notes:
            notes.append(note)
    return notes
