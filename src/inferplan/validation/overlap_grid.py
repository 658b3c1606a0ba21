"""Choose a constant every family shares on a grid: the whole speed fit reruns at each value, and
each value is scored by the mean |log(predicted / measured)| over the fit split's points under the
family constants fitted at that value. Held-out points take no part. Two constants are chosen so:

- ``roofline-overlap-exponent``, the order ``p`` of the power mean a step's memory and compute
  time combine by (``phases.overlapped``; ``inf`` is the plain roofline, the larger of the two);
- ``gemm-min-rows``, the rows a small-batch weight GEMM computes at the least on engines whose
  kernels pad to tensor-core tiles (``work.ModelWork.padding_flops_per_gpu``; 1 is no padding); the
  weight-only kernels' row blocks (``Rates.weight_gemm_row_blocks``) are read, not moved.

``python -m inferplan.validation.overlap_grid [P,P,...] [--jobs N]`` prints the objective at each
order (default ``GRID``); ``--gemm-rows [M,M,...]`` scans the tile instead (default ``ROWS_GRID``).
One refit takes about ten minutes on one core; ``--jobs`` runs that many values at once (default 2).
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
from inferplan.performance.rates import pads_gemm_rows

GRID = (1.0, 1.5, 2.0, 3.0, 4.0, 6.0, math.inf)
ROWS_GRID = (1.0, 8.0, 16.0, 32.0, 64.0)
FIELDS = ("overlap_exponent", "gemm_min_rows")  # the Rates fields a grid can move


def with_rates(points: list[cs.Prepared], field: str, value: float) -> list[cs.Prepared]:
    """The same points, their rates' ``field`` set to ``value`` (the tile only where the engine pads
    its GEMMs on that hardware, ``rates.pads_gemm_rows``: other points are kept as they are)."""
    if field not in FIELDS:
        raise InvalidScenarioError(f"no grid for {field!r}", field="field", allowed=", ".join(FIELDS))
    if not value >= 1.0:
        allowed = ("1 (memory and compute time summed) or more, inf for the larger" if field == "overlap_exponent"
                   else "1 (no padding) or more rows")
        raise InvalidScenarioError(f"{field} = {value}", field="p" if field == "overlap_exponent" else "rows",
                                   allowed=allowed)
    moved = []
    for pt in points:  # a shallow copy of each context: the fit rebinds its rates, not the caller's
        if field == "gemm_min_rows" and not pads_gemm_rows(pt.ctx.catalog, pt.ctx.d.engine, pt.ctx.mp.hardware.accel):
            moved.append(pt)
            continue
        ctx = copy.copy(pt.ctx)
        ctx.rates = dataclasses.replace(ctx.rates, **{field: value})
        moved.append(dataclasses.replace(pt, ctx=ctx))
    return moved


def with_exponent(points: list[cs.Prepared], p: float) -> list[cs.Prepared]:
    """The same points, their rates combining memory and compute time at order ``p``."""
    return with_rates(points, "overlap_exponent", p)


def grid_objective(points: list[cs.Prepared], value: float, field: str = "overlap_exponent") -> float:
    """Mean |log error| over ``points`` once every family's constants are refitted at ``value``."""
    moved = with_rates(points, field, value)
    fits = {f.family: f.params for f in cs.fit_points(moved)}
    return statistics.fmean(abs(cs.log_error(pt, fits[pt.family])) for pt in moved)


def _one(job: tuple[str, float]) -> tuple[float, float]:  # pragma: no cover - runs in a worker process
    field, value = job
    return value, grid_objective(cs.prepare(load_catalog(), "fit")[0], value, field)


def scan(values: Iterable[float] = GRID, jobs: int = 1, catalog: Catalog | None = None,
         points: list[cs.Prepared] | None = None, field: str = "overlap_exponent") -> dict[float, float]:
    """The objective at each value of ``field``, in the order given, over ``points`` (default: the
    fit split)."""
    values = tuple(values)
    if points is not None or jobs <= 1:
        points = cs.prepare(catalog or load_catalog(), "fit")[0] if points is None else points
        return {v: grid_objective(points, v, field) for v in values}
    from concurrent.futures import ProcessPoolExecutor  # pragma: no cover - the maintenance run

    with ProcessPoolExecutor(jobs) as pool:  # pragma: no cover
        return dict(pool.map(_one, [(field, v) for v in values]))


def main() -> None:  # pragma: no cover - a maintenance script
    import sys

    args = sys.argv[1:]
    jobs = 2
    if "--jobs" in args:
        i = args.index("--jobs")
        jobs = int(args[i + 1])
        del args[i:i + 2]
    field, grid, label = "overlap_exponent", GRID, "p"
    if "--gemm-rows" in args:
        args.remove("--gemm-rows")
        field, grid, label = "gemm_min_rows", ROWS_GRID, "rows"
    values = tuple(float(v) for v in args[0].split(",")) if args else grid
    for value, objective in scan(values, jobs, field=field).items():
        print(f"{label} = {value:g}: mean |log error| {objective:.4f}", flush=True)


if __name__ == "__main__":  # pragma: no cover
    main()
