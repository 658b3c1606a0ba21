"""The load offered to a deployment: how requests arrive and how long they are.

Arrival processes:

- ``poisson``: independent arrivals at ``request_rate_per_s``.
- ``bursty``: a two-state Markov-modulated Poisson process with the same mean rate (``peak_to_average`` above 1; at 1 the process is Poisson, and it is refused as
  bursty). In the busy
  state requests arrive at ``peak_to_average`` times the mean, in the quiet state at the mean over
  ``peak_to_average``; the busy state holds ``1 / (peak_to_average + 1)`` of the time, so the mean is
  kept. State durations are exponential with means summing to ``burst_period_s``.
- ``trace``: the arrival times and lengths of a ``Trace``, replayed.
- ``closed``: ``clients`` users each sending their next request the moment the last one ends (a
  benchmark's ``--max-concurrency`` with no rate limit); with ``closed_loop_requests`` the run is
  that long and starts with every client sending at once.

``cached_first_requests`` K: the first K requests sent find their whole prompt in the prefix cache
(a benchmark client that draws its prompts from a fixed seed repeats an earlier run's first
prompts; the engine recomputes one token).

Prompt and output lengths (``poisson``, ``bursty``, ``closed``) have the stated mean and squared
coefficient of variation (SCV 0: every request the mean, rounded), log-normal, or uniform
(``lengths="uniform"``: a benchmark's random dataset drawing each length evenly from a range).
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
from pydantic import ConfigDict, Field, model_validator

from inferplan.errors import InvalidScenarioError
from inferplan.units import plural
from inferplan.inputs import Input
from inferplan.search.trace import Trace

ARRIVALS = ("poisson", "bursty", "trace", "closed")
DEFAULT_BURST_PERIOD_S = 60.0  # assumed: one busy and one quiet spell per minute on average
# bursty arrivals with busy spells at the mean rate are Poisson arrivals: a burst needs a peak above it
BURSTY_NEEDS_A_PEAK = "bursty arrivals need a peak above the mean rate (at 1 they are Poisson arrivals)"
BURSTY_PEAK_ALLOWED = "above 1 (at most 100) with arrival bursty"
UNIFORM_MAX_SCV = 1 / 3  # a length drawn evenly from 0 to twice its mean spreads no wider
MAX_BURST_SPELLS = 2_000_000  # busy and quiet spells one simulation draws, one at a time (about 2 s)


class Load(Input):
    model_config = ConfigDict(frozen=True, defer_build=True, extra="forbid", allow_inf_nan=False, arbitrary_types_allowed=True)

    arrival: Literal["poisson", "bursty", "trace", "closed"] = "poisson"
    request_rate_per_s: float | None = Field(None, gt=0, le=1e6, description="mean requests per second (poisson, bursty)")
    peak_to_average: float = Field(1.0, ge=1, le=100, description="busy-state rate over the mean rate (bursty)")
    burst_period_s: float = Field(DEFAULT_BURST_PERIOD_S, gt=0, le=1e6, description="mean busy + quiet spell (bursty)")
    clients: int | None = Field(None, ge=1, le=1_000_000, description="users in a closed loop (closed)")
    closed_loop_requests: int | None = Field(
        None, ge=1, le=100_000_000, description="requests a closed loop sends in all (a benchmark's num_prompts): its "
        "clients send their first requests together, so that share of requests meets a start-up queue (closed)")
    cached_first_requests: int = Field(
        0, ge=0, le=100_000_000, description="the first requests sent whose prompts the prefix cache already holds "
        "(a benchmark repeating an earlier run's prompts on the same server): each prefills one token")
    open_loop_requests: int | None = Field(
        None, ge=1, le=100_000_000, description="requests a Poisson or bursty run sends in all (a benchmark's "
        "num_prompts), starting empty: a short run may end before its running batch reaches the steady state")
    input_tokens: float = Field(1024, ge=1, le=1e8, description="mean prompt tokens per request")
    output_tokens: float = Field(256, ge=1, le=1e8, description="mean output tokens per request")
    input_tokens_scv: float = Field(0.0, ge=0, le=100, description="squared coefficient of variation of prompt lengths")
    output_tokens_scv: float = Field(0.0, ge=0, le=100, description="squared coefficient of variation of output lengths")
    lengths: Literal["lognormal", "uniform"] = Field(
        "lognormal", description="how prompt and output lengths spread around their means: log-normal, or uniform "
        "between the mean ± √(3·SCV) of it (a benchmark's random dataset; SCV at most 1/3)")
    trace: Trace | None = Field(None, exclude=True, description="the requests replayed (trace)")

    @model_validator(mode="after")
    def _what_each_process_needs(self) -> "Load":
        needs_rate = self.arrival in ("poisson", "bursty")
        if needs_rate and self.request_rate_per_s is None:
            raise ValueError(f"request_rate_per_s: {self.arrival} arrivals need a rate")
        if self.arrival == "closed" and self.clients is None:
            raise ValueError("clients: a closed loop needs a number of clients")
        if self.closed_loop_requests is not None and self.arrival != "closed":
            raise ValueError("closed_loop_requests: applies only to a closed loop")
        if self.open_loop_requests is not None and not needs_rate:
            raise ValueError("open_loop_requests: applies only to Poisson or bursty arrivals")
        if self.arrival == "trace" and self.trace is None:
            raise ValueError("trace: trace arrivals need a trace")
        if self.lengths == "uniform" and max(self.input_tokens_scv, self.output_tokens_scv) > UNIFORM_MAX_SCV + 1e-12:
            raise ValueError("lengths: a uniform spread reaches an SCV of 1/3 at most (from 0 to twice the mean)")
        if self.arrival != "bursty" and self.peak_to_average != 1.0:
            raise ValueError("peak_to_average: applies only to bursty arrivals")
        if self.arrival != "bursty" and self.burst_period_s != DEFAULT_BURST_PERIOD_S:
            raise ValueError("burst_period_s: applies only to bursty arrivals")
        if self.arrival == "bursty" and self.peak_to_average <= 1.0:
            raise ValueError(f"peak_to_average: {BURSTY_NEEDS_A_PEAK}")
        return self

    @classmethod
    def from_trace(cls, trace: Trace) -> "Load":
        """A load replaying ``trace``: its rate, lengths and their spread are the trace's own."""
        _, inputs, outputs = trace.arrays()
        return cls(arrival="trace", trace=trace, request_rate_per_s=min(trace.rate_per_s(), 1e6),
                   input_tokens=float(inputs.mean()), output_tokens=float(outputs.mean()),
                   input_tokens_scv=min(_scv(inputs), 100.0), output_tokens_scv=min(_scv(outputs), 100.0))

    def run_quantile_level(self, q: float) -> float:
        """The level of the population quantile that a stated run's percentile ``q`` lands on (its median).

        A benchmark's percentile is ``numpy.percentile`` over the run's N requests (SGLang's
        ``bench_serving``, vLLM's ``benchmark_serving``), whose default linear method takes the
        value at 1-based position ``j = 1 + (N − 1) q`` of the sorted sample. The j-th smallest of N
        draws sits at a level distributed Beta(j, N + 1 − j), whose median is close to
        ``(j − 1/3) / (N + 1/3)`` for any distribution (Hyndman & Fan's median-unbiased type 8,
        numpy's ``median_unbiased``): the median's own level, a p99 over 10 requests at 0.93. With
        no stated run (the steady state), ``q`` itself."""
        n = self.closed_loop_requests or self.open_loop_requests
        return (2 / 3 + (n - 1) * q) / (n + 1 / 3) if n else q

    def arrival_scv(self) -> float:
        """Squared coefficient of variation of the gaps between arrivals within one state (1: Poisson)."""
        if self.arrival == "trace" and self.trace is not None:
            return self.trace.interarrival_scv()
        return 1.0

    def states(self) -> tuple[tuple[float, float], ...]:
        """(share of requests, arrival rate) of each state of the arrival process; one state unless bursty."""
        rate = self.request_rate_per_s or 0.0
        x = self.peak_to_average
        if self.arrival != "bursty" or x == 1.0:
            return ((1.0, rate),)
        return ((x / (x + 1), rate * x), (1 / (x + 1), rate / x))


def rate_text(per_s: float) -> str:
    """A rate as a person reads it: three significant figures, thousands separated, never an exponent
    (0.00347, 2.5, 1,235, 100,000)."""
    if per_s >= 100 or per_s <= 0:
        return f"{per_s:,.0f}"
    decimals = 2 - math.floor(math.log10(per_s))
    return f"{per_s:,.{decimals}f}".rstrip("0").rstrip(".")


def _scv(values: np.ndarray) -> float:
    mean = float(values.mean())
    return float(values.var()) / mean**2 if len(values) > 1 and mean > 0 else 0.0


def draw_lengths(rng: np.random.Generator, mean: float, scv: float, n: int, shape: str = "lognormal") -> np.ndarray:
    """``n`` whole token counts of at least 1 with ``mean`` and ``scv`` (constant when 0): log-normal,
    or uniform between the mean ± √(3·scv) of it."""
    if scv <= 0:
        return np.full(n, max(round(mean), 1), dtype=np.int64)
    if shape == "uniform":
        half = mean * math.sqrt(3 * scv)
        draws = rng.uniform(mean - half, mean + half, n)
    else:
        sigma2 = math.log1p(scv)
        draws = rng.lognormal(math.log(mean) - sigma2 / 2, math.sqrt(sigma2), n)
    return np.maximum(np.rint(draws), 1).astype(np.int64)


def length_quantiles(mean: float, scv: float, qs, shape: str = "lognormal") -> np.ndarray:
    """The ``qs`` quantiles of a length with ``mean`` and ``scv`` (the mean when 0), log-normal or uniform."""
    qs = np.asarray(qs, float)
    if scv <= 0:
        return np.full(qs.shape, float(mean))
    if shape == "uniform":
        half = mean * math.sqrt(3 * scv)
        return mean - half + 2 * half * qs
    from statistics import NormalDist

    sigma = math.sqrt(math.log1p(scv))
    z = np.array([NormalDist().inv_cdf(q) for q in qs.ravel()]).reshape(qs.shape)
    return np.exp(math.log(mean) - sigma**2 / 2 + sigma * z)


def length_survival(mean: float, scv: float, lengths, shape: str = "lognormal") -> np.ndarray:
    """The share of a length with ``mean`` and ``scv`` (log-normal or uniform) above each of ``lengths``."""
    x = np.asarray(lengths, float)
    if scv <= 0:
        return (mean > x).astype(float)
    if shape == "uniform":
        half = mean * math.sqrt(3 * scv)
        return np.clip((mean + half - x) / (2 * half), 0.0, 1.0)
    sigma = math.sqrt(math.log1p(scv))
    z = (np.log(np.maximum(x, 1e-300)) - math.log(mean) + sigma**2 / 2) / sigma
    return np.where(x > 0, 0.5 * np.vectorize(math.erfc)(z / math.sqrt(2)), 1.0)


def length_nodes(mean: float, scv: float, nodes: int, shape: str = "lognormal") -> np.ndarray:
    """``nodes`` equally likely values standing for a length (its mid-quantiles)."""
    return length_quantiles(mean, scv, (np.arange(nodes) + 0.5) / nodes, shape)


def check_burst_spells(load: Load, requests: int) -> None:
    """Bursty arrivals are drawn spell by spell: refuse a burst period so short next to the gaps between
    arrivals that ``requests`` of them would take more than ``MAX_BURST_SPELLS`` spells."""
    if load.arrival != "bursty":
        return
    rate = load.request_rate_per_s
    spells = 2 * requests / (rate * load.burst_period_s)  # a busy and a quiet spell hold rate × period arrivals
    if spells <= MAX_BURST_SPELLS:
        return
    shortest = 2 * requests / (rate * MAX_BURST_SPELLS)
    raise InvalidScenarioError(
        f"a burst period of {load.burst_period_s:g} s at {rate_text(rate)} requests/s holds {rate * load.burst_period_s:.3g} "
        f"requests: {plural(requests, 'request')} would take {spells:,.0f} busy and quiet spells to draw, past the "
        f"{MAX_BURST_SPELLS:,} one simulation draws", field="burst_period_s",
        allowed=f"at least {shortest:.3g} s at {rate_text(rate)} requests/s, or Poisson arrivals")


def _bursty_times(rng: np.random.Generator, load: Load, n: int) -> np.ndarray:
    check_burst_spells(load, n)
    (share_busy, busy), (_, quiet) = load.states()
    x = load.peak_to_average
    dwell = {True: load.burst_period_s / (x + 1), False: load.burst_period_s * x / (x + 1)}
    times: list[np.ndarray] = []
    start, count = 0.0, 0
    busy_now = rng.random() < 1 / (x + 1)
    while count < n:
        length = rng.exponential(dwell[busy_now])
        k = rng.poisson((busy if busy_now else quiet) * length)
        if k:
            times.append(start + np.sort(rng.random(k)) * length)
            count += k
        start += length
        busy_now = not busy_now
    return np.concatenate(times)[:n]


def sample_requests(load: Load, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(arrival_s, input_tokens, output_tokens) of ``n`` requests; arrival times are NaN for a
    closed loop (each follows the end of the one before it from its client). A trace gives its own
    requests, repeated end to end when ``n`` is longer."""
    if load.arrival == "trace":
        times, inputs, outputs = load.trace.arrays()
        reps = math.ceil(n / len(times))
        span = times[-1] + (1 / load.request_rate_per_s if math.isfinite(load.request_rate_per_s) else 0.0)
        times = np.concatenate([times + i * span for i in range(reps)])[:n]
        return times, np.tile(inputs, reps)[:n], np.tile(outputs, reps)[:n]
    inputs = draw_lengths(rng, load.input_tokens, load.input_tokens_scv, n, load.lengths)
    outputs = draw_lengths(rng, load.output_tokens, load.output_tokens_scv, n, load.lengths)
    if load.arrival == "closed":
        return np.full(n, np.nan), inputs, outputs
    if load.arrival == "bursty":
        return _bursty_times(rng, load, n), inputs, outputs
    return np.cumsum(rng.exponential(1 / load.request_rate_per_s, n)), inputs, outputs
