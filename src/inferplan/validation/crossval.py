"""Cross-validation of the speed fit inside the ``fit`` split: folds keep each source's points
together, so a fold's error says how the model does on sources it has never seen — the honest
figure for a new engine build or lab, harsher than the held-out split (whose points often share a
sweep with fit points).

``inferplan validate --speed --cross-validate`` prints it (about 15–20 minutes: the whole fit runs
once per fold); ``python -m inferplan.validation.crossval 0.05,0.2`` compares ``PRIOR_WEIGHT``
values (docs/speed.md, Leave-source-out error).
"""

from __future__ import annotations

import math
import statistics
import zlib
from collections.abc import Callable

from pydantic import BaseModel, ConfigDict

import inferplan.validation.calibrate_speed as cs
from inferplan.catalog.loader import Catalog, load_catalog
from inferplan.errors import InferplanError
from inferplan.validation.calibrate_pipeline import FIELD, fit_hop
from inferplan.validation.speed import KINDS, kind_of

FOLDS = 3
Progress = Callable[[int, int, str], None]  # (fits done, fits in all, what is being fitted)
MISS = 0.30  # |predicted / measured − 1| beyond which a point misses, as `validate` counts it


class KindCrossValidation(BaseModel):
    model_config = ConfigDict(frozen=True, defer_build=True)

    kind: str
    points: int
    median_abs_error: float  # median |predicted / measured − 1| (validate's error): 0.16 = 16 %
    beyond_30_percent: int


class CrossValidation(BaseModel):
    model_config = ConfigDict(frozen=True, defer_build=True)

    folds: int
    prior_weight: float
    points: int
    mean_abs_log_error: float
    median_abs_error: float
    beyond_30_percent: int
    by_kind: tuple[KindCrossValidation, ...]


def source_folds(catalog: Catalog, points: list[cs.Prepared], folds: int = FOLDS) -> dict[str, int]:
    """Each prepared point's fold, from a hash of its source (a sweep counts as one source)."""
    source = {p.id: p.measured.source for p in catalog.speed_points}
    source.update({f"{prof.id}@{pt.concurrency}": pt.output_tokens_per_s_per_user.source
                   for prof in catalog.serving_profiles for pt in prof.points})
    return {p.id: zlib.crc32(source.get(p.id.split(":")[0], p.id).encode()) % folds for p in points}


def _kinds(catalog: Catalog) -> dict[str, str]:
    return {p.id: kind_of(p) for p in catalog.speed_points}


def held_out_errors(catalog: Catalog, points: list[cs.Prepared], prior_weight: float, folds: int = FOLDS,
                    progress: Progress | None = None, pipeline: list[cs.Prepared] = ()) -> dict[str, float]:
    """Each point's log(predicted / measured) when its fold is left out of the fit (``fit_points``,
    then the stage-boundary cost on the other folds' ``pipeline`` points: with none left, zero).
    ``progress(done, total, label)`` is told before each family's fit."""
    fold = {**source_folds(catalog, points, folds), **source_folds(catalog, list(pipeline), folds)}
    if len(set(fold.values())) < 2:
        raise InferplanError("cross-validation needs points from at least two sources' folds", field="points")
    total = folds * len({p.family for p in points} | set(cs.FAMILIES))  # fit_points fits each family once a fold
    done = 0

    def tick(fold_index: int, family: str) -> None:
        nonlocal done
        if progress:
            progress(done, total, f"fold {fold_index + 1} of {folds}: fitting {family}")
        done += 1

    saved, cs.PRIOR_WEIGHT = cs.PRIOR_WEIGHT, prior_weight
    try:
        errors = {}
        for k in range(folds):
            fits = cs.fit_points([p for p in points if fold[p.id] != k], progress=lambda family, k=k: tick(k, family))
            params = {f.family: f.params for f in fits}
            pooled = next(f.params for f in fits if f.pooled) if any(f.pooled for f in fits) else None
            for p in points:
                if fold[p.id] == k:
                    errors[p.id] = cs.log_error(p, params.get(p.family) or pooled)

            def own(p: cs.Prepared) -> dict[str, float]:
                return params.get(p.family) or pooled

            hop = fit_hop([p for p in pipeline if fold[p.id] != k], own)
            for p in pipeline:
                if fold[p.id] == k:
                    errors[p.id] = cs.log_error(p, {**own(p), FIELD: hop})
        return errors
    finally:
        cs.PRIOR_WEIGHT = saved


def _summary(log_errors: list[float]) -> tuple[float, int]:
    """Median |error| and misses, the error being validate's (predicted − measured) / measured."""
    errors = [abs(math.expm1(e)) for e in log_errors]
    return statistics.median(errors), sum(e > MISS for e in errors)


def cross_validate(catalog: Catalog | None = None, prior_weight: float | None = None, folds: int = FOLDS,
                   points: list[cs.Prepared] | None = None,
                   progress: Progress | None = None) -> CrossValidation:
    """Leave-source-out error of the speed fit over the ``fit`` split, overall and by kind."""
    catalog = catalog or load_catalog()
    prior_weight = cs.PRIOR_WEIGHT if prior_weight is None else prior_weight
    pipeline = cs.prepare(catalog, "fit", pipeline=True)[0] if points is None else []
    points = cs.prepare(catalog, "fit")[0] if points is None else points
    errors = held_out_errors(catalog, points, prior_weight, folds, progress, pipeline)
    kinds = _kinds(catalog)
    by_kind = []
    for kind in KINDS:
        own = [e for pid, e in errors.items() if kinds.get(pid.split(":")[0].split("@")[0], "profile") == kind]
        if own:
            median, beyond = _summary(own)
            by_kind.append(KindCrossValidation(kind=kind, points=len(own), median_abs_error=median,
                                               beyond_30_percent=beyond))
    median, beyond = _summary(list(errors.values()))
    return CrossValidation(folds=folds, prior_weight=prior_weight, points=len(errors),
                           mean_abs_log_error=statistics.fmean(abs(e) for e in errors.values()), median_abs_error=median,
                           beyond_30_percent=beyond, by_kind=tuple(by_kind))


def main() -> None:  # pragma: no cover - a maintenance script
    import sys

    catalog = load_catalog()
    for weight in (float(w) for w in (sys.argv[1] if len(sys.argv) > 1 else "0.05").split(",")):
        cv = cross_validate(catalog, weight)
        print(f"PRIOR_WEIGHT {weight}: mean |log error| {cv.mean_abs_log_error:.4f}, "
              f"median {cv.median_abs_error:.1%}, beyond 30 %: {cv.beyond_30_percent} of {cv.points}")


if __name__ == "__main__":  # pragma: no cover
    main()
