"""The offload constant derived from measurements: the share of the host's DRAM peak at which the CPU
streams the routed experts a decode step picks (``host-memory-expert-read-efficiency``, offload.yaml).

For each offload speed point the constant lists in ``fitted_on`` (fit-split points with routed experts
in host RAM), the share that makes the planned decode rate equal the measured one is found by
bisection; the constant is their median. Holdout offload points never enter it.
"""

from __future__ import annotations

import dataclasses
import statistics

from inferplan.catalog.loader import Catalog
from inferplan.catalog.registry import Registry
from inferplan.catalog.points_schema import SpeedPoint
from inferplan.validation.speed import check_point

CONSTANT = "host-memory-expert-read-efficiency"
LOW, HIGH = 0.01, 2.0  # bracket of the share searched
STEPS = 40


def with_constant(catalog: Catalog, constant_id: str, value: float) -> Catalog:
    """The catalogue with one calibration constant set to ``value``."""
    records = dict(catalog.calibration.records)
    records[constant_id] = records[constant_id].model_copy(update={"value": value})
    return dataclasses.replace(catalog, calibration=Registry("calibration", records))


def implied_share(point: SpeedPoint, catalog: Catalog) -> float:
    """The expert read share at which ``point``'s predicted decode rate equals its measured one."""
    low, high = LOW, HIGH
    for _ in range(STEPS):
        mid = (low * high) ** 0.5
        error = check_point(point, with_constant(catalog, CONSTANT, mid)).error
        if error is None:
            raise ValueError(f"{point.id} cannot be planned")
        low, high = (mid, high) if error < 0 else (low, mid)
    return (low * high) ** 0.5


def derived_expert_read_share(catalog: Catalog) -> float:
    """Median implied share over the points the constant is fitted on."""
    ids = catalog.calibration.records[CONSTANT].fitted_on
    return statistics.median(implied_share(catalog.speed_points.records[i], catalog) for i in ids)
