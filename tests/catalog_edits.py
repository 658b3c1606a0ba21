"""A test's own changed catalogue: one record replaced in a copy, never in the shared, cached one.

Plans are cached per catalogue (memory/fit.py ``_PLANS``, memory/fit_placement.py ``_PLACED``), so a record
changed in place would leave plans of the changed data behind for the tests that run after."""

from __future__ import annotations

import dataclasses

from inferplan.catalog.loader import Catalog
from inferplan.catalog.registry import Registry


def with_record(catalog: Catalog, section: str, record_id: str, **update) -> Catalog:
    """``catalog`` with ``section``'s record ``record_id`` copied with ``update``; every other record shared."""
    registry = getattr(catalog, section)
    records = {**registry.records, record_id: registry.records[record_id].model_copy(update=update)}
    return dataclasses.replace(catalog, **{section: Registry(registry.kind, records)})


def with_constants(catalog: Catalog, values: dict[str, float]) -> Catalog:
    """``catalog`` with each calibration constant ``values`` names set to its value."""
    for constant_id, value in values.items():
        catalog = with_record(catalog, "calibration", constant_id, value=value)
    return catalog
