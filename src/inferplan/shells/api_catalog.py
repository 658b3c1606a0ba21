"""Catalogue views over HTTP: freshness (``GET /api/catalog/stale?days=N``) and the memory
configurations of chips sold in several sizes (``GET /api/views/memory-configurations``)."""

from __future__ import annotations

from fastapi import APIRouter, Query

from inferplan.catalog.freshness import DEFAULT_STALE_DAYS, MAX_STALE_DAYS, StaleEntry, stale_entries
from inferplan.report.memory_config_view import ConfigurableAcceleratorView

router = APIRouter(tags=["catalogue"])


@router.get("/api/catalog/stale", summary="Catalogue numbers whose source was checked long ago")
def catalog_stale(days: int = Query(DEFAULT_STALE_DAYS, ge=0, le=MAX_STALE_DAYS,
                                    description="numbers whose source was checked more than this many days ago")
                  ) -> list[StaleEntry]:
    """Catalogue records with a number checked more than ``days`` days ago, oldest first."""
    return stale_entries(days)


@router.get("/api/views/memory-configurations", summary="Accelerators sold with several memory sizes")
def memory_configurations() -> list[ConfigurableAcceleratorView]:
    """Each accelerator sold with several memory sizes, with the id that plans each size (``default``:
    the size its own id plans, the catalogue record's)."""
    from inferplan.catalog.loader import load_catalog
    from inferplan.report.memory_config_view import memory_configuration_views

    return memory_configuration_views(load_catalog())
