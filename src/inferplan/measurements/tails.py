"""Measured latency percentiles beside the approximation's and the simulation's, per load level of a
user's run, the way ``inferplan validate --latency`` checks published runs (``search/benchmark_tails``).

A level is checked when its file gave p50 or p99 of TTFT or TPOT. The deployment's service curve
comes from the calibrated speed model alone (no profile, no stored run); the load is the run's:
Poisson at its offered request rate, else a closed loop of its concurrency, for its number of
requests (unstated: the steady state). Prompt and output lengths have the run's means; they spread
uniformly where the file says so (SGLang's random dataset, by its ``random_range_ratio``), else every
request is the mean, as the acceptance pack's clients send them (vLLM's random dataset with
``--ignore-eos``, SGLang's with ``--random-range-ratio 1``).
"""

from __future__ import annotations

import statistics

from pydantic import BaseModel, ConfigDict, ValidationError

from inferplan.catalog.loader import Catalog
from inferplan.errors import InvalidScenarioError
from inferplan.inputs.deployment import Deployment
from inferplan.inputs.workload import Workload
from inferplan.performance.run_record import MeasuredPoint
from inferplan.search.arrivals import Load
from inferplan.search.benchmark_tails import TAIL_METRICS, predict_tails, run_load
from inferplan.search.service import service_curve

SIMULATED_REQUESTS = 4_000  # per load level, in runs of the measured run's own length
# the Load's field -> the measured point's it comes from
LOAD_FIELDS = {"clients": "concurrency", "closed_loop_requests": "requests", "open_loop_requests": "requests"}


class TailComparison(BaseModel):
    model_config = ConfigDict(frozen=True, defer_build=True)

    metric: str  # ttft_p50_s | ttft_p99_s | tpot_p50_s | tpot_p99_s
    measured: float
    approximation: float
    simulation: float
    approximation_error: float  # approximation / measured - 1
    simulation_error: float


class PointTails(BaseModel):
    model_config = ConfigDict(frozen=True, defer_build=True)

    load: str  # what the run offered, as modelled
    percentiles: tuple[TailComparison, ...]
    trust: str | None = None  # which figure to compare, where the two part for a known reason (``IN_STEP_NOTE``)


class TailMedian(BaseModel):
    model_config = ConfigDict(frozen=True, defer_build=True)

    metric: str
    points: int
    approximation_abs_error: float  # median |predicted / measured - 1| over the run's load levels
    simulation_abs_error: float


def has_tails(p: MeasuredPoint) -> bool:
    return any(getattr(p, m) for m in TAIL_METRICS)


def point_load(p: MeasuredPoint) -> Load:
    try:
        return _load(p)
    except ValidationError as exc:  # a load past what the simulation takes (a million clients ...)
        first = exc.errors()[0]
        load_field = str(first["loc"][0]) if first["loc"] else "clients"
        raise InvalidScenarioError(f"the run's load: {first['msg']}", field=LOAD_FIELDS.get(load_field, load_field)) from None


def _load(p: MeasuredPoint) -> Load:
    spread = {"input_tokens_scv": p.lengths_uniform_scv, "output_tokens_scv": p.lengths_uniform_scv,
              "lengths": "uniform"} if p.lengths_uniform_scv else {}
    return run_load(input_tokens=max(p.input_tokens, 1), output_tokens=max(p.output_tokens, 1), requests=p.requests,
                    request_rate_per_s=p.request_rate_per_s, max_concurrency=p.concurrency, **spread)


def compare_tails(d: Deployment, w: Workload, p: MeasuredPoint, catalog: Catalog) -> PointTails | None:
    """The percentiles ``p`` measured beside the predicted ones for requests shaped like ``w`` (its lengths
    and drafts; None: it measured none). Errors are ``service_curve``'s (the model does not fit, the request
    is longer than the context ...)."""
    if not has_tails(p):
        return None
    curve = service_curve(d, w, catalog, use_profiles=False)
    tails = predict_tails(curve, point_load(p), requests=p.requests, simulated_requests=SIMULATED_REQUESTS)
    rows = []
    for m in TAIL_METRICS:
        measured = getattr(p, m)
        if measured:
            approx, sim = getattr(tails.approximation, m), getattr(tails.simulation, m)
            rows.append(TailComparison(metric=m, measured=measured, approximation=approx, simulation=sim,
                                       approximation_error=approx / measured - 1, simulation_error=sim / measured - 1))
    trust = IN_STEP_NOTE if tails.simulation_in_step else None
    return PointTails(load=tails.load, percentiles=tuple(rows), trust=trust)


# a simulated closed loop of one-length requests that stayed in step, beside a served run's: vLLM's engine
# core steps as soon as a request is in its input queue (``EngineCoreProc.run_busy_loop``,
# vllm/v1/engine/core.py) and its API server tokenises requests one at a time (a one-worker executor,
# vllm/entrypoints/openai/serving_engine.py), so requests sent together reach a step apart, and
# requests of one length that start apart end apart
IN_STEP_NOTE = ("compare the approximation: the simulated clients stayed in step (each round admitted together, its "
                "first tokens waiting on every prompt of the round), while a served run's drift apart: the engine "
                "steps as soon as one request has reached it and the server takes requests sent together one at a "
                "time, and requests of one length that start apart end apart, each newcomer joining a running "
                "batch, the steady state the approximation prices")


def tail_medians(points: list[PointTails]) -> tuple[TailMedian, ...]:
    out = []
    for m in TAIL_METRICS:
        rows = [c for t in points for c in t.percentiles if c.metric == m]
        if rows:
            out.append(TailMedian(metric=m, points=len(rows),
                                  approximation_abs_error=statistics.median(abs(c.approximation_error) for c in rows),
                                  simulation_abs_error=statistics.median(abs(c.simulation_error) for c in rows)))
    return tuple(out)
