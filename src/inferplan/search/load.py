"""The load a search must carry, from however the request states it.

Users with a workload preset become a request rate the way the Users + ROI simulator counts them
(``economics/workloads.py``): each user's busiest-hour output rate — monthly output tokens spread
over the month, times the preset's peak-to-average factor — over the preset's output tokens per
request. A request rate is taken as the rate to carry, with the lengths stated. A trace (read by
``trace.read_trace``, or given inline as rows: ``trace.trace_from_rows``) is replayed by the queueing approximation at its own rate and spread of
lengths; cells are sized for its longest request.
"""

from __future__ import annotations

import math

from dataclasses import dataclass

from inferplan.catalog.loader import Catalog
from inferplan.economics.workloads import SECONDS_PER_MONTH, WorkloadOverrides, WorkloadProfile, resolve_workload
from inferplan.search.arrivals import Load
from inferplan.search.trace import read_trace, trace_from_rows
from inferplan.search.request import SearchRequest


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
    longest_request: int | None = None  # a trace's longest input + output (else the mean lengths)

    @property
    def max_model_len(self) -> int:
        return self.longest_request or self.input_len + self.output_len


def resolve_load(catalog: Catalog, req: SearchRequest) -> ResolvedLoad:
    if req.users is not None:
        w = resolve_workload(catalog, WorkloadOverrides(preset=req.workload or "chat-seat"))
        rate = req.users * w.peak_output_tokens_per_s / w.output_tokens_per_request
        load = Load(request_rate_per_s=rate, input_tokens=w.input_tokens_per_request, output_tokens=w.output_tokens_per_request)
        return ResolvedLoad(load, w.input_tokens_per_request, w.output_tokens_per_request, rate, req.users * w.monthly_tokens,
                            users=req.users, workload=w, cache_hit_rate=w.cache_hit_rate)
    if req.request_rate_per_s is not None:
        rate, i, o = req.request_rate_per_s, req.input_len, req.output_len
        load = Load(request_rate_per_s=rate, input_tokens=i, output_tokens=o)
        return ResolvedLoad(load, i, o, rate, rate * (i + o) * SECONDS_PER_MONTH)
    return _trace_load(req.trace)


def _trace_load(given: str | list | None) -> ResolvedLoad:
    trace = trace_from_rows(given) if isinstance(given, list) else read_trace(given or "")
    load = Load.from_trace(trace)
    _, inputs, outputs = trace.arrays()
    i, o = math.ceil(load.input_tokens), math.ceil(load.output_tokens)
    rate = load.request_rate_per_s
    return ResolvedLoad(load, i, o, rate, rate * (load.input_tokens + load.output_tokens) * SECONDS_PER_MONTH,
                        longest_request=int((inputs + outputs).max()))
