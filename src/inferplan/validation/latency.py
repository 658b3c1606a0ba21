"""Latency percentiles under load: the approximation and the simulation against published runs.

Each ``latency_points`` record is a benchmark run: a deployment, a load and measured p50/p99 of TTFT
and TPOT. For each the deployment and its ``ServiceCurve`` come from the calibrated speed model
alone (no measured profile, as speed validation scores it); the load is

- a finite ``request_rate_per_s``: Poisson arrivals at that rate (the benchmarks' default);
- no rate limit and a ``max_concurrency`` C: a closed loop of C clients, each sending its next
  request when the last one ends, for the run's ``num_prompts`` requests;
- no rate limit and no cap: every one of ``num_prompts`` requests sent at once (a closed loop with
  one client per request);
- ``prompts_cached_at_start`` K: the run's first K prompts repeat an earlier run's on the same
  server, so the prefix cache serves them (``Load.cached_first_requests``); when K covers the whole
  run, every prompt hits the cache but its last token (the workload's ``prefix_cache_hit_rate``).

Lengths: the stated means; their spread and shape by the benchmark client and dataset (the catalogue's
``benchmark_datasets``, ``measurements/benchmark_clients.yaml``). The
simulation runs the run's own number of requests, repeated with fresh seeds to
``SIMULATED_REQUESTS`` in all, and reports the mean of each run's percentiles; the approximation
gives each at the level a run's percentile lands on (``Load.run_quantile_level``). Points the speed
model cannot price (the model does not fit, an unknown name) are listed with the reason, not scored.
"""

from __future__ import annotations

import statistics

from pydantic import BaseModel, ConfigDict

from inferplan.catalog.latency_schema import LatencyPoint
from inferplan.catalog.loader import Catalog, load_catalog
from inferplan.catalog.memory_rules import stated_release
from inferplan.errors import InferplanError
from inferplan.inputs.deployment import Deployment
from inferplan.inputs.workload import Workload
from inferplan.search.arrivals import Load
from inferplan.search.benchmark_tails import TAIL_METRICS, predict_tails, run_load
from inferplan.search.service import service_curve

SIMULATED_REQUESTS = 20_000
METRICS = TAIL_METRICS


class LatencyCheck(BaseModel):
    model_config = ConfigDict(frozen=True, defer_build=True)

    id: str
    split: str
    load: str  # what the run offered, as modelled
    metric: str
    measured: float
    approximation: float
    simulation: float

    @property
    def approximation_error(self) -> float:
        return self.approximation / self.measured - 1

    @property
    def simulation_error(self) -> float:
        return self.simulation / self.measured - 1


class LatencySkip(BaseModel):
    model_config = ConfigDict(frozen=True, defer_build=True)

    id: str
    split: str
    reason: str


class LatencyMedian(BaseModel):
    model_config = ConfigDict(frozen=True, defer_build=True)

    split: str  # fit | holdout | all
    metric: str
    points: int
    approximation_abs_error: float  # median |predicted / measured − 1|
    simulation_abs_error: float


class LatencyValidation(BaseModel):
    model_config = ConfigDict(frozen=True, defer_build=True)

    checks: tuple[LatencyCheck, ...]
    skipped: tuple[LatencySkip, ...]
    medians: tuple[LatencyMedian, ...]


def planned_release(p: LatencyPoint, catalog: Catalog) -> str | None:
    """The release a run is planned at: its ``engine_release``, else the release its ``engine_version`` text names
    (``stated_release``), else None (the engine's default release)."""
    return p.engine_release or stated_release(catalog, p.engine, p.engine_version)


def _deployment(p: LatencyPoint, catalog: Catalog) -> Deployment:
    dp = p.gpus // (p.tensor_parallel_size * p.pipeline_parallel_size)
    return Deployment(model=p.model, gpu=p.accelerator, gpus=p.gpus, tensor_parallel_size=p.tensor_parallel_size,
                      engine_version=planned_release(p, catalog),
                      pipeline_parallel_size=p.pipeline_parallel_size, data_parallel_size=dp if dp > 1 else None,
                      enable_expert_parallel=p.expert_parallel, quantization=p.quantization,
                      kv_cache_dtype=p.kv_cache_dtype, engine=p.engine, max_num_seqs=p.max_num_seqs,
                      max_num_batched_tokens=p.max_num_batched_tokens)


def _load(p: LatencyPoint, catalog: Catalog) -> Load:
    spread = next(d for d in catalog.benchmark_datasets if (d.engine, d.dataset) == (p.engine, p.dataset))
    return run_load(input_tokens=p.input_tokens, output_tokens=p.output_tokens, requests=p.num_prompts,
                    request_rate_per_s=p.request_rate_per_s, max_concurrency=p.max_concurrency,
                    input_tokens_scv=spread.prompt_scv.value, output_tokens_scv=spread.output_scv.value,
                    lengths=spread.shape, cached_first_requests=_cached(p))


def _cached(p: LatencyPoint) -> int:
    return round(p.prompts_cached_at_start.value) if p.prompts_cached_at_start is not None else 0


def _workload(p: LatencyPoint) -> Workload:
    """The request shape the speed model takes; a run whose every prompt an earlier run sent finds
    each in the prefix cache but its last token (the engine recomputes at least one)."""
    input_len = max(round(p.input_tokens), 1)
    hit = 1 - 1 / input_len if _cached(p) >= p.num_prompts else 0.0
    return Workload(input_len=input_len, output_len=max(round(p.output_tokens), 1), prefix_cache_hit_rate=hit)


def check_point(p: LatencyPoint, catalog: Catalog) -> list[LatencyCheck]:
    """The approximation's and the simulation's percentiles beside each measured one of ``p``."""
    curve = service_curve(_deployment(p, catalog), _workload(p), catalog, use_profiles=False)
    tails = predict_tails(curve, _load(p, catalog), requests=p.num_prompts, simulated_requests=SIMULATED_REQUESTS)
    return [LatencyCheck(id=p.id, split=p.split, load=tails.load, metric=m, measured=p.measured[m].value,
                         approximation=getattr(tails.approximation, m), simulation=getattr(tails.simulation, m))
            for m in METRICS if m in p.measured and p.measured[m].value > 0]


def _medians(checks: list[LatencyCheck]) -> list[LatencyMedian]:
    out = []
    for split in ("holdout", "fit", "all"):
        for m in METRICS:
            rows = [c for c in checks if c.metric == m and (split == "all" or c.split == split)]
            if rows:
                out.append(LatencyMedian(
                    split=split, metric=m, points=len(rows),
                    approximation_abs_error=statistics.median(abs(c.approximation_error) for c in rows),
                    simulation_abs_error=statistics.median(abs(c.simulation_error) for c in rows)))
    return out


def validate_latency(catalog: Catalog | None = None) -> LatencyValidation:
    """Every shipped latency point checked, or listed with why it cannot be."""
    catalog = catalog or load_catalog()
    checks: list[LatencyCheck] = []
    skipped: list[LatencySkip] = []
    for p in catalog.latency_points:
        try:
            checks.extend(check_point(p, catalog))
        except InferplanError as exc:
            skipped.append(LatencySkip(id=p.id, split=p.split, reason=exc.describe()))
    return LatencyValidation(checks=tuple(checks), skipped=tuple(skipped), medians=tuple(_medians(checks)))
