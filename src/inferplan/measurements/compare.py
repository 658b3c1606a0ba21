"""Predicted vs measured, per imported run: at each measured point, the calibrated model's figure
for the same deployment and workload — the run's offload, host KV tier and host, its engine settings and
engine release (``predicted_deployment``), its EAGLE-3 draft's memory, and its draft tokens at its acceptance rate
(``run_deployment``, ``run_workload``; the notes say where that rate comes from, as the import recorded it,
``draft_origin.py``; a rate assumed for a method that has no default is not predicted at) — (no profile, no
stored run — the model alone, as ``inferplan validate`` scores it) beside what was measured, and the error
(predicted/measured − 1); where the point measured latency percentiles, the approximation's and the simulation's
beside them (``tails.py``)."""

from __future__ import annotations

import statistics

from pydantic import BaseModel, ConfigDict

from inferplan.catalog.loader import Catalog, load_catalog
from inferplan.errors import InferplanError, InvalidScenarioError
from inferplan.inputs.deployment import Deployment
from inferplan.measurements.draft_origin import needs_restating, origin_text, restate_text
from inferplan.measurements.records import MeasuredRun, failure_text
from inferplan.measurements.tails import PointTails, TailMedian, compare_tails, tail_medians
from inferplan.memory.fit import fit
from inferplan.performance.estimate import ServingEstimate
from inferplan.performance.launch_match import release_reading
from inferplan.performance.run_record import MeasuredPoint, run_deployment, run_workload
from inferplan.performance.serving import estimate

# metric -> (the measured point's field, the estimate's figure)
METRICS = {
    "ttft_s": ("ttft_s", lambda e, p: e.ttft_s),
    "tpot_s": ("tpot_s", lambda e, p: e.tpot_s),
    "output_tokens_per_s_total": ("output_tokens_per_s_total", lambda e, p: e.output_tokens_per_s_total),
    "prefill_tokens_per_s": ("prefill_tokens_per_s", lambda e, p: max(p.input_tokens, 1) / e.prefill_s),
}


class MetricComparison(BaseModel):
    model_config = ConfigDict(frozen=True, defer_build=True)

    metric: str
    measured: float
    predicted: float | None = None  # None: no prediction at this point (the point's ``problem`` says why)
    error: float | None = None  # predicted / measured - 1


class PointComparison(BaseModel):
    model_config = ConfigDict(frozen=True, defer_build=True)

    concurrency: int
    input_tokens: int
    output_tokens: int
    metrics: tuple[MetricComparison, ...]
    tails: PointTails | None = None  # measured percentiles vs the approximation and the simulation (``tails.py``)
    problem: str | None = None  # why the model gave no prediction here


class RunComparison(BaseModel):
    model_config = ConfigDict(frozen=True, defer_build=True)

    run: MeasuredRun
    points: tuple[PointComparison, ...]
    median_abs_error: dict[str, float]  # per metric, over the points
    tail_median_abs_error: tuple[TailMedian, ...] = ()  # per percentile, over the points that measured it
    kv_cache_tokens: MetricComparison | None = None  # the KV cache the engine reported vs the memory plan's
    memory_rule: str | None = None  # the memory rule that plan applied (the run's engine release's)
    # requests of the run that failed (``records.failure_text``), and how the run was predicted where its statements
    # left a choice (its release, its drafts' acceptance)
    notes: tuple[str, ...] = ()


def _kv_cache(run: MeasuredRun, d: Deployment, catalog: Catalog) -> tuple[MetricComparison | None, str | None]:
    """The KV cache tokens the engine reported beside what the memory plan of ``d``, the run's deployment,
    gives (one instance), and the memory rule that plan applied."""
    if not run.kv_cache_tokens:
        return None, None
    try:
        result = fit(d, catalog)
    except InferplanError:
        return None, None
    predicted = result.kv_cache_tokens
    return MetricComparison(metric="kv_cache_tokens", measured=run.kv_cache_tokens, predicted=predicted,
                            error=predicted / run.kv_cache_tokens - 1), result.memory_rule


def predicted_deployment(run: MeasuredRun, catalog: Catalog) -> tuple[Deployment, tuple[str, ...]]:
    """The deployment ``run`` measured (``run_deployment``) at the engine release it ran: the one its engine_version
    names where the memory rules plan it for this model (``launch_match.release_reading``: "V1, v0.10.1" reads as
    0.10.1 V1, "vllm/vllm-openai:v0.11.0" as 0.11.0); else the engine's default release, and a note that says why."""
    d = run_deployment(run, max_model_len=run.max_model_len)
    release, why = release_reading(catalog, d, run.engine_version)
    if release is not None:
        return run_deployment(run, max_model_len=run.max_model_len, engine_version=release), ()
    return d, (f"engine version {run.engine_version!r}: {why}; predicted at the engine's default release",)


def _draft_notes(run: MeasuredRun, d: Deployment, catalog: Catalog) -> tuple[str, ...]:
    """The acceptance rate the run's drafts are predicted at and where it comes from, as its import recorded it
    (``draft_origin.origin_text``: stated, the server's measurement, its draft's published one, assumed, or unknown for a
    run stored before the record) — or, where that rate is the default assumed for a method that has none, that
    they are not predicted and how to state the run's rate (``draft_origin.restate_text``); and that an EAGLE-3 run
    naming no draft (one an earlier release stored) is predicted without a draft's memory."""
    if not run.speculative_tokens or run.acceptance_rate is None:
        return ()
    drafts = f"{run.speculative_tokens} draft tokens per step ({run.speculative_method})"
    if needs_restating(run):
        return (f"{drafts} {restate_text(run)}",)
    unnamed = run.speculative_method == "eagle3" and not run.draft_model
    return (f"{drafts} predicted at {origin_text(run, d, catalog)}",
            *(["the run names no EAGLE-3 draft: predicted without a draft's memory"] if unnamed else []))


def _predict(run: MeasuredRun, d: Deployment, p: MeasuredPoint, catalog: Catalog) -> ServingEstimate:
    return estimate(d, run_workload(run, p), catalog, use_profiles=False)


def _unpredicted(where: dict, p: MeasuredPoint, exc: InferplanError, tails: PointTails | None = None) -> PointComparison:
    """The measured figures without a prediction beside them, and why."""
    measured = ((metric, getattr(p, field)) for metric, (field, _) in METRICS.items())
    return PointComparison(**where, metrics=tuple(MetricComparison(metric=metric, measured=value) for metric, value in measured if value),
                           tails=tails, problem=exc.describe())


def compare_point(run: MeasuredRun, d: Deployment, p: MeasuredPoint, catalog: Catalog) -> PointComparison:
    """The figures predicted at ``p``, a point of ``run`` of ``d`` (its deployment), beside the measured ones. A load the
    steady-state model refuses for the means (every request of a run sent at once, more than the KV cache
    holds) still has its percentiles queued and simulated. A run whose drafts' rate has to be restated
    (``draft_origin.needs_restating``) is not predicted at all."""
    where = {"concurrency": p.concurrency, "input_tokens": p.input_tokens, "output_tokens": p.output_tokens}
    if needs_restating(run):
        return _unpredicted(where, p, InvalidScenarioError(
            "its drafts have no acceptance rate to be predicted at (the run's notes say how to state it)",
            field="acceptance_rate"))
    try:
        tails = compare_tails(d, run_workload(run, p), p, catalog)
    except InferplanError as exc:
        return _unpredicted(where, p, exc)
    try:
        est = _predict(run, d, p, catalog)
    except InferplanError as exc:
        return _unpredicted(where, p, exc, tails)
    rows = []
    for metric, (field, figure) in METRICS.items():
        measured = getattr(p, field)
        if measured:
            predicted = figure(est, p)
            rows.append(MetricComparison(metric=metric, measured=measured, predicted=predicted, error=predicted / measured - 1))
    return PointComparison(**where, metrics=tuple(rows), tails=tails)


def compare_run(run: MeasuredRun, catalog: Catalog | None = None) -> RunComparison:
    catalog = catalog or load_catalog()
    d, notes = predicted_deployment(run, catalog)
    points = tuple(compare_point(run, d, p, catalog) for p in run.points)
    by_metric: dict[str, list[float]] = {}
    for point in points:
        for m in point.metrics:
            if m.error is not None:
                by_metric.setdefault(m.metric, []).append(abs(m.error))
    kv, rule = _kv_cache(run, d, catalog)
    failed = failure_text(run)  # said first: the run offered another load than it states
    notes = (*([failed] if failed else []), *notes, *_draft_notes(run, d, catalog))
    return RunComparison(run=run, points=points, kv_cache_tokens=kv, memory_rule=rule, notes=notes,
                         median_abs_error={k: statistics.median(v) for k, v in by_metric.items()},
                         tail_median_abs_error=tail_medians([p.tails for p in points if p.tails]))


def compare_runs(runs: list[MeasuredRun], catalog: Catalog | None = None) -> list[RunComparison]:
    catalog = catalog or load_catalog()
    return [compare_run(r, catalog) for r in runs]
