"""The load a search must carry, from however the request states it.

Users with a workload preset become a request rate the way the Users + ROI simulator counts them
(``economics/workloads.py``): each user's busiest-hour output rate — monthly output tokens spread
over the month, times the preset's peak-to-average factor — over the preset's output tokens per
request. A request rate is taken as the rate to carry, with the lengths stated.
"""

from __future__ import annotations

from dataclasses import dataclass

from inferplan.catalog.loader import Catalog
from inferplan.economics.workloads import SECONDS_PER_MONTH, WorkloadOverrides, WorkloadProfile, resolve_workload
from inferplan.errors import InvalidScenarioError
from inferplan.search._standin_queueing import Load
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

    @property
    def max_model_len(self) -> int:
        return self.input_len + self.output_len


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
    return _trace_load(req.trace or "")


def _trace_load(path: str) -> ResolvedLoad:
    raise InvalidScenarioError("trace files are not read yet", field="trace")
