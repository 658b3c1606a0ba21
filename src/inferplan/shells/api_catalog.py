"""Catalogue freshness over HTTP: ``GET /api/catalog/stale?days=N``."""

from __future__ import annotations

from fastapi import APIRouter, Query

from inferplan.catalog.freshness import DEFAULT_STALE_DAYS, MAX_STALE_DAYS, StaleEntry, stale_entries

router = APIRouter(tags=["catalogue"])


@router.get("/api/catalog/stale")
def catalog_stale(days: int = Query(DEFAULT_STALE_DAYS, ge=0, le=MAX_STALE_DAYS,
                                    description="numbers whose source was checked more than this many days ago")
                  ) -> list[StaleEntry]:
    """Catalogue records with a number checked more than ``days`` days ago, oldest first."""
    return stale_entries(days)
