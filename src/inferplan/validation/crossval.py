"""Cross-validation of the speed fit inside the ``fit`` split: folds keep each source's points
together, so a fold's error says how the model does on sources it has never seen.

Used to choose ``PRIOR_WEIGHT`` without looking at held-out points (docs/speed.md, session 7):
``python -m inferplan.validation.crossval 0.05,0.2`` (about 20 minutes per weight).
"""

from __future__ import annotations

import math
import statistics
import zlib

import inferplan.validation.calibrate_speed as cs
from inferplan.catalog.loader import Catalog, load_catalog

FOLDS = 3


def source_folds(catalog: Catalog, points: list[cs.Prepared], folds: int = FOLDS) -> dict[str, int]:
    """Each prepared point's fold, from a hash of its source (a sweep counts as one source)."""
    source = {p.id: p.measured.source for p in catalog.speed_points}
    source.update({f"{prof.id}@{pt.concurrency}": prof.id for prof in catalog.serving_profiles for pt in prof.points})
    return {p.id: zlib.crc32(source.get(p.id.split(":")[0], p.id).encode()) % folds for p in points}


def cross_validate(catalog: Catalog, prior_weight: float, folds: int = FOLDS) -> list[float]:
    """|log error| of every fit point when its fold is left out of the fit."""
    points, _ = cs.prepare(catalog, "fit")
    fold = source_folds(catalog, points, folds)
    saved, cs.PRIOR_WEIGHT = cs.PRIOR_WEIGHT, prior_weight
    try:
        errors = []
        for k in range(folds):
            train = [p for p in points if fold[p.id] != k]
            pooled = cs.fit_params(train, cs.START)
            params = {}
            for family in {p.family for p in train}:
                own = [p for p in train if p.family == family]
                if len(own) >= cs.MIN_POINTS:
                    free = tuple(n for n in cs.BOUNDS
                                 if n not in cs.GUARDED or cs.responding(own, pooled, n) >= cs.MIN_RESPONDING)
                    params[family] = cs.best_of_starts(own, pooled, free)
            errors += [abs(cs.log_error(p, params.get(p.family, pooled))) for p in points if fold[p.id] == k]
        return errors
    finally:
        cs.PRIOR_WEIGHT = saved


def main() -> None:  # pragma: no cover - a maintenance script
    import sys

    catalog = load_catalog()
    for weight in (float(w) for w in (sys.argv[1] if len(sys.argv) > 1 else "0.05").split(",")):
        e = cross_validate(catalog, weight)
        print(f"PRIOR_WEIGHT {weight}: mean |log error| {statistics.fmean(e):.4f}, median {statistics.median(e):.4f}, "
              f"beyond 30 %: {sum(x > math.log(1.3) for x in e)} of {len(e)}")


if __name__ == "__main__":  # pragma: no cover
    main()
