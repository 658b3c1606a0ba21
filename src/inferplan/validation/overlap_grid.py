"""Choose ``roofline-overlap-exponent`` on a grid: the whole speed fit reruns at each order ``p``
of the power mean a step's memory and compute time combine by (``phases.overlapped``), and each
``p`` is scored by the mean |log(predicted / measured)| over the fit split's points under the
family constants fitted at that ``p``. Held-out points take no part.

``python -m inferplan.validation.overlap_grid [P,P,...] [--jobs N]`` prints the objective at each
order (default ``GRID``; ``inf`` is the plain roofline, the larger of the two times). One refit
takes about ten minutes on one core; ``--jobs`` runs that many orders at once (default 2).
"""

from __future__ import annotations

import copy
import dataclasses
import math
import statistics
from collections.abc import Iterable

import inferplan.validation.calibrate_speed as cs
from inferplan.catalog.loader import Catalog, load_catalog
from inferplan.errors import InvalidScenarioError

GRID = (1.0, 1.5, 2.0, 3.0, 4.0, 6.0, math.inf)


def with_exponent(points: list[cs.Prepared], p: float) -> list[cs.Prepared]:
    """The same points, their rates combining memory and compute time at order ``p``."""
    if not p >= 1.0:
        raise InvalidScenarioError(f"the order of the power mean is {p}", field="p",
                             allowed="1 (memory and compute time summed) or more, inf for the larger")
    moved = []
    for pt in points:  # a shallow copy of each context: the fit rebinds its rates, not the caller's
        ctx = copy.copy(pt.ctx)
        ctx.rates = dataclasses.replace(ctx.rates, overlap_exponent=p)
        moved.append(dataclasses.replace(pt, ctx=ctx))
    return moved


def grid_objective(points: list[cs.Prepared], p: float) -> float:
    """Mean |log error| over ``points`` once every family's constants are refitted at order ``p``."""
    moved = with_exponent(points, p)
    fits = {f.family: f.params for f in cs.fit_points(moved)}
    return statistics.fmean(abs(cs.log_error(pt, fits[pt.family])) for pt in moved)


def _one(p: float) -> tuple[float, float]:  # pragma: no cover - runs in a worker process
    return p, grid_objective(cs.prepare(load_catalog(), "fit")[0], p)


def scan(orders: Iterable[float] = GRID, jobs: int = 1, catalog: Catalog | None = None,
         points: list[cs.Prepared] | None = None) -> dict[float, float]:
    """The objective at each order, in the order given, over ``points`` (default: the fit split)."""
    orders = tuple(orders)
    if points is not None or jobs <= 1:
        points = cs.prepare(catalog or load_catalog(), "fit")[0] if points is None else points
        return {p: grid_objective(points, p) for p in orders}
    from concurrent.futures import ProcessPoolExecutor  # pragma: no cover - the maintenance run

    with ProcessPoolExecutor(jobs) as pool:  # pragma: no cover
        return dict(pool.map(_one, orders))


def main() -> None:  # pragma: no cover - a maintenance script
    import sys

    args = sys.argv[1:]
    jobs = 2
    if "--jobs" in args:
        i = args.index("--jobs")
        jobs = int(args[i + 1])
        del args[i:i + 2]
    orders = tuple(float(v) for v in args[0].split(",")) if args else GRID
    for p, value in scan(orders, jobs).items():
        print(f"p = {p:g}: mean |log error| {value:.4f}", flush=True)


if __name__ == "__main__":  # pragma: no cover
    main()
