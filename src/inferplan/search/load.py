"""The load a search must carry, from however the request states it.

Users with a workload preset become a request rate the way the Users + ROI simulator counts them
(``economics/workloads.py``): each user's busiest-hour output rate — monthly output tokens spread
over the month, times the preset's peak-to-average factor — over the preset's output tokens per
request. A request rate is taken as the rate to carry, with the lengths stated. Either arrives as
stated (``arrival``: Poisson, or bursty spells at ``peak_to_average`` times the rate and quiet ones
below it; with users, the spells come on top of the preset's busiest hour), its prompt and output
lengths log-normal (or uniform, ``lengths``) around their means with the stated squared coefficients
of variation. Spread lengths size the cells for the 99.9th percentile of each
(``LONG_REQUEST_QUANTILE``), capped at each model's own context; longer requests do not fit the
planned context, and each pick says what share of the load that is (``share_longer_than``). A trace
(read by ``trace.read_trace``, or given inline as rows: ``trace.trace_from_rows``) is replayed by
the queueing approximation at its own rate and spread of lengths; cells are sized for its longest
request.
"""

from __future__ import annotations

import math

import dataclasses
from dataclasses import dataclass

from inferplan.catalog.loader import Catalog
from inferplan.economics.workloads import WorkloadOverrides, WorkloadProfile, resolve_workload
import numpy as np

from inferplan.search.arrivals import Load, length_nodes, length_quantiles, length_survival
from inferplan.search.trace import TraceFile, trace_of
from inferplan.search.request import SearchRequest
from inferplan.units import SECONDS_PER_MONTH


LONG_REQUEST_QUANTILE = 0.999  # assumed: the share of each spread length a cell's context holds
_LENGTH_NODES = 4000  # equally likely output lengths over which a prompt's survival is averaged


@dataclass(frozen=True)
class ResolvedLoad:
    load: Load
    input_len: int
    output_len: int
    request_rate_per_s: float
    monthly_tokens: float  # input + output tokens a month at this load
    users: int | None = None
    workload: WorkloadProfile | None = None
    cache_hit_rate: float = 0.0
    longest_request: int | None = None  # a trace's longest input + output, spread lengths' 99.9th percentiles (else the means)
    spread_sized: bool = False  # longest_request from spread lengths' percentiles, not a trace's requests


    @property
    def max_model_len(self) -> int:
        return self.longest_request or self.input_len + self.output_len

    def context_for(self, model_context_tokens: int | None) -> int:
        """The context a model's instance is planned at: ``max_model_len``, except that spread lengths'
        long requests stop at the model's own context (an engine refuses a longer one, and refuses to
        start at it), never below the mean request."""
        if not self.spread_sized or model_context_tokens is None:
            return self.max_model_len
        return max(self.input_len + self.output_len, min(self.max_model_len, model_context_tokens))

    def share_longer_than(self, context_tokens: int) -> float:
        """The share of the load's requests whose prompt plus output exceeds ``context_tokens`` (an
        engine refuses them): for spread lengths the prompt's exact survival past the context less
        each of ``_LENGTH_NODES`` equally likely outputs, averaged; a trace's own requests; else the
        mean request."""
        load = self.load
        if load.trace is not None:
            _, inputs, outputs = load.trace.arrays()
            return float(np.mean(inputs + outputs > context_tokens))
        if not self.spread_sized:
            return float(self.input_len + self.output_len > context_tokens)
        outputs = length_nodes(self.output_len, load.output_tokens_scv, _LENGTH_NODES, load.lengths)
        return float(np.mean(length_survival(self.input_len, load.input_tokens_scv, context_tokens - outputs,
                                             load.lengths)))


def resolve_load(catalog: Catalog, req: SearchRequest) -> ResolvedLoad:
    if req.users is not None:
        w = resolve_workload(catalog, WorkloadOverrides(preset=req.workload or "chat-seat"))
        rate = req.users * w.peak_output_tokens_per_s / w.output_tokens_per_request
        load = Load(request_rate_per_s=rate, input_tokens=w.input_tokens_per_request, output_tokens=w.output_tokens_per_request,
                    **_arrivals(req))
        return ResolvedLoad(load, w.input_tokens_per_request, w.output_tokens_per_request, rate, req.users * w.monthly_tokens,
                            users=req.users, workload=w,
                            cache_hit_rate=w.cache_hit_rate if req.prefix_cache_hit_rate is None else req.prefix_cache_hit_rate,
                            longest_request=_longest(req, w.input_tokens_per_request, w.output_tokens_per_request),
                            spread_sized=_spread(req))
    if req.request_rate_per_s is not None:
        rate, i, o = req.request_rate_per_s, req.input_len, req.output_len
        load = Load(request_rate_per_s=rate, input_tokens=i, output_tokens=o, **_arrivals(req))
        return ResolvedLoad(load, i, o, rate, rate * (i + o) * SECONDS_PER_MONTH, longest_request=_longest(req, i, o),
                            spread_sized=_spread(req), cache_hit_rate=req.prefix_cache_hit_rate or 0.0)
    rl = _trace_load(req.trace)
    return dataclasses.replace(rl, cache_hit_rate=req.prefix_cache_hit_rate or 0.0)


def _longest(req: SearchRequest, input_len: float, output_len: float) -> int | None:
    """The prompt plus output a cell must hold when lengths spread: each at ``LONG_REQUEST_QUANTILE``."""
    if not _spread(req):
        return None
    return sum(math.ceil(float(length_quantiles(mean, scv, LONG_REQUEST_QUANTILE, req.lengths)))
               for mean, scv in ((input_len, req.input_tokens_scv), (output_len, req.output_tokens_scv)))


def _spread(req: SearchRequest) -> bool:
    return req.input_tokens_scv > 0 or req.output_tokens_scv > 0


def _arrivals(req: SearchRequest) -> dict:
    """How the stated rate arrives and how the lengths spread around their means."""
    bursty = req.arrival == "bursty"
    return dict(arrival=req.arrival, peak_to_average=req.peak_to_average if bursty else 1.0,
                burst_period_s=req.burst_period_s, input_tokens_scv=req.input_tokens_scv,
                output_tokens_scv=req.output_tokens_scv, lengths=req.lengths)


def trace_lengths(load: Load) -> tuple[int, int]:
    """The whole-token prompt and output lengths a trace's requests are planned at: their means, rounded up
    (a search's cells and ``inferplan simulate``'s serving curve alike)."""
    return math.ceil(load.input_tokens), math.ceil(load.output_tokens)


def _trace_load(given: str | list | TraceFile | None) -> ResolvedLoad:
    trace = trace_of(given if given is not None else "")
    load = Load.from_trace(trace)
    _, inputs, outputs = trace.arrays()
    i, o = trace_lengths(load)
    rate = load.request_rate_per_s
    return ResolvedLoad(load, i, o, rate, rate * (load.input_tokens + load.output_tokens) * SECONDS_PER_MONTH,
                        longest_request=int((inputs + outputs).max()))
