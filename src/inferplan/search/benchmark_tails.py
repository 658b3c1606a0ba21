"""A benchmark run's load as the approximation and the simulation take it, and the latency
percentiles each gives for it: one builder for published runs (``validation/latency``) and the
user's own (``measurements/tails``).

The load of a run (``run_load``):

- a finite offered ``request_rate_per_s``: Poisson arrivals at that rate (the clients' default
  arrival process), for the run's ``requests`` when stated;
- no rate limit and a ``max_concurrency`` C: a closed loop of C clients (at most one per request),
  each sending its next request when the last one ends, for the run's ``requests``;
- no rate limit and no cap: every one of the run's requests sent at once (one client per request).

A run of unstated length is modelled in the steady state (no start-up queue, no short-run end).

``predict_tails`` gives the approximation's percentiles and the mean of the simulation's over runs
of the run's own length, repeated with fresh seeds until ``simulated_requests`` were simulated (a run
longer than that: its first ``simulated_requests``, once).
"""

from __future__ import annotations

import math
import statistics
from typing import Literal

from pydantic import BaseModel, ConfigDict

from inferplan.errors import InvalidScenarioError
from inferplan.search.arrivals import Load
from inferplan.search.queueing import approximate
from inferplan.search.service import ServiceCurve
from inferplan.search.simulate import simulate
from inferplan.units import plural

TAIL_METRICS = ("ttft_p50_s", "ttft_p99_s", "tpot_p50_s", "tpot_p99_s")


class TailFigures(BaseModel):
    """p50 and p99 of time to first token and time per output token, in seconds."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    ttft_p50_s: float
    ttft_p99_s: float
    tpot_p50_s: float
    tpot_p99_s: float


class PredictedTails(BaseModel):
    model_config = ConfigDict(frozen=True, defer_build=True)

    load: str  # what the run offered, as modelled
    approximation: TailFigures
    simulation: TailFigures
    simulation_in_step: bool = False  # a simulated run's closed loop stayed in step (``simulate.in_step``)


def run_load(*, input_tokens: float, output_tokens: float, requests: int | None, request_rate_per_s: float | None = None,
             max_concurrency: int | None = None, input_tokens_scv: float = 0.0, output_tokens_scv: float = 0.0,
             lengths: Literal["lognormal", "uniform"] = "lognormal", cached_first_requests: int = 0) -> Load:
    """The load a benchmark run offered (see the module text)."""
    shape = dict(input_tokens=input_tokens, output_tokens=output_tokens, input_tokens_scv=input_tokens_scv,
                 output_tokens_scv=output_tokens_scv, lengths=lengths)
    if requests is not None and 0 < cached_first_requests < requests:  # all cached: the workload's hit rate instead
        shape["cached_first_requests"] = cached_first_requests
    if request_rate_per_s is not None:
        return Load(arrival="poisson", request_rate_per_s=request_rate_per_s, open_loop_requests=requests, **shape)
    clients = max_concurrency if requests is None else min(max_concurrency or requests, requests)
    if clients is None:
        raise InvalidScenarioError("a run with no rate limit needs its concurrency cap or its number of requests",
                                   field="max_concurrency", allowed="a concurrency cap, a request rate or a request count")
    return Load(arrival="closed", clients=clients, closed_loop_requests=requests, **shape)


def describe(load: Load) -> str:
    if load.arrival == "poisson":
        return f"poisson {load.request_rate_per_s:g}/s"
    return f"closed loop, {plural(load.clients, 'client')}"


def predict_tails(curve: ServiceCurve, load: Load, *, requests: int | None, simulated_requests: int) -> PredictedTails:
    """The approximation's percentiles for ``load`` and the simulation's, averaged over runs of
    ``requests`` each (``simulated_requests`` at once when the run is unstated or longer)."""
    per_run = min(requests or simulated_requests, simulated_requests)  # a longer run: its first simulated_requests
    runs = max(math.ceil(simulated_requests / per_run), 1)
    results = [simulate(curve, load, requests=per_run, seed=seed) for seed in range(runs)]
    approx = approximate(curve, load)
    return PredictedTails(load=describe(load), approximation=TailFigures(**{m: getattr(approx, m) for m in TAIL_METRICS}),
                          simulation=TailFigures(**{m: statistics.fmean(getattr(r, m) for r in results) for m in TAIL_METRICS}),
                          simulation_in_step=any(r.in_step for r in results))
