"""Fit an engine's per-request cost at pipeline stage boundaries on its ``fit`` pipeline points.

Serving with ``pp`` stages, the planner runs the batch as up to ``pp`` micro-batches; a decode round
lasts one micro-batch's trip through every stage, which crosses ``pp − 1`` boundaries. TensorRT-LLM's
pipeline loop (PyTorch back end) does each rank's per-request host work — scheduling, resources,
handing the sampled tokens back — between micro-batches rather than beside the GPU, so each
boundary adds a cost per request of the micro-batch (``Rates.pipeline_hop_s_per_request``). Its
perf overview measured one model at PP1, 2, 4 and 8 on RTX PRO 6000: without the cost the planner
was 4 % (PP2), ~25 % (PP4) and ~70 % (PP8) too fast at 1000/1000.

The constant is fitted after the family constants (which the pipeline points do not calibrate:
``calibrate_speed.calibrates_pipeline``) by a golden-section search minimising the mean
|log(predicted / measured)| over the engine's fit-split pipeline points.

``python -m inferplan.validation.calibrate_pipeline`` prints the value and each point's error.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable
from dataclasses import dataclass

from inferplan.catalog.loader import Catalog, load_catalog
from inferplan.performance.rates import PIPELINE_HOP_CONSTANT
from inferplan.validation.calibrate_speed import Prepared, golden_section_minimum, log_error, pipeline_engines, prepare

FIELD = "pipeline_hop_s_per_request"
CONSTANT_ID = PIPELINE_HOP_CONSTANT
BOUNDS = (0.0, 1e-3)  # seconds per request per boundary: Python host work runs tens of µs per request


@dataclass(frozen=True)
class PipelineFit:
    engine: str
    value_s: float  # per request of a micro-batch, per stage boundary, per step
    points: tuple[str, ...]
    log_errors: tuple[float, ...]  # log(predicted / measured) at the fitted value, per point
    log_errors_without: tuple[float, ...]  # ... and with no boundary cost

    @property
    def mean_abs_log_error(self) -> float:
        return statistics.fmean(abs(e) for e in self.log_errors)


def _errors(points: list[Prepared], value: float, family: Callable[[Prepared], dict[str, float]] | None = None
            ) -> tuple[float, ...]:
    return tuple(log_error(p, {**(family(p) if family else {}), FIELD: value}) for p in points)


def fit_hop(points: list[Prepared], family: Callable[[Prepared], dict[str, float]] | None = None) -> float:
    """The boundary cost that minimises the mean |log error| over ``points`` (0 with none), with
    each point's family constants from ``family`` (else those it was planned with: the shipped ones)."""
    if not points:
        return 0.0
    return golden_section_minimum(lambda v: statistics.fmean(abs(e) for e in _errors(points, v, family)), *BOUNDS,
                                  iterations=60)


def fit_pipeline(catalog: Catalog, engine: str) -> PipelineFit:
    points = [p for p in prepare(catalog, "fit", pipeline=True)[0] if p.ctx.d.engine == engine]
    value = fit_hop(points)
    return PipelineFit(engine, value, tuple(p.id for p in points), _errors(points, value), _errors(points, 0.0))


def main() -> None:  # pragma: no cover - a maintenance script
    catalog = load_catalog()
    for engine in pipeline_engines(catalog):
        fit = fit_pipeline(catalog, engine)
        shipped = catalog.constant(CONSTANT_ID.format(engine))
        print(f"{CONSTANT_ID.format(engine)} = {fit.value_s:.3g} s (shipped {shipped:.3g}); "
              f"mean |log error| {fit.mean_abs_log_error:.3f} on {len(fit.points)} fit points "
              f"(without it {statistics.fmean(abs(e) for e in fit.log_errors_without):.3f})")
        for pid, e, e0 in zip(fit.points, fit.log_errors, fit.log_errors_without):
            print(f"  {math.expm1(e):+7.1%}  (without {math.expm1(e0):+7.1%})  {pid}")


if __name__ == "__main__":  # pragma: no cover
    main()
