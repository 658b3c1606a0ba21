"""Which catalogue numbers were last checked long ago: prices and specs drift, so a number whose
source was read more than a few months back is the next one to check again."""

from __future__ import annotations

import datetime as dt

from pydantic import BaseModel, ConfigDict

from inferplan.catalog.loader import SECTIONS, Catalog, load_catalog
from inferplan.catalog.provenance import iter_sourced
from inferplan.errors import CatalogError

DEFAULT_STALE_DAYS = 180  # half a year: rental and API prices move within that
MAX_STALE_DAYS = 100_000


class StaleEntry(BaseModel):
    """One catalogue record's numbers from one source, checked ``age_days`` ago."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    kind: str  # the catalogue kind as `catalog list` spells it (rental-prices)
    id: str
    numbers: tuple[str, ...]  # the record's fields read from that source (memory_bytes, price_usd_per_hour …)
    source: str
    checked: dt.date
    age_days: int


def stale_entries(days: int = DEFAULT_STALE_DAYS, *, today: dt.date | None = None,
                  catalog: Catalog | None = None) -> list[StaleEntry]:
    """Records with a number whose source (or the number's own ``checked``) is more than ``days``
    days before ``today`` (default: the local date), oldest first."""
    if isinstance(days, bool) or not isinstance(days, int) or not 0 <= days <= MAX_STALE_DAYS:
        raise CatalogError(f"days is {days!r}", field="days", allowed=f"a whole number of days from 0 to {MAX_STALE_DAYS}")
    today = today or dt.date.today()
    catalog = catalog or load_catalog()
    rows: dict[tuple[str, str, str, dt.date], list[str]] = {}
    for key in SECTIONS:
        for record in getattr(catalog, key):
            for path, quantity in iter_sourced(record):
                checked = quantity.checked or catalog.sources[quantity.source].checked
                if (today - checked).days > days:
                    rows.setdefault((key.replace("_", "-"), record.id, quantity.source, checked), []).append(path)
    entries = [StaleEntry(kind=kind, id=rid, numbers=tuple(paths), source=source, checked=checked,
                          age_days=(today - checked).days)
               for (kind, rid, source, checked), paths in rows.items()]
    return sorted(entries, key=lambda e: (e.checked, e.kind, e.id, e.source))
