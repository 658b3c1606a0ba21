"""The typed inputs and results of the queueing approximation (``queueing.py``): service curves stacked as
arrays over candidates (``CurveTable``), the tail latencies of one deployment (``TailLatency``, with the
percentiles alone in ``LatencyPercentiles``) and their array form over candidates (``TailArrays``)."""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np
from pydantic import BaseModel, ConfigDict

from inferplan.search.service import ServiceCurve


class LatencyPercentiles(BaseModel):
    """p50, p95 and p99 of time to first token, time per output token and end-to-end latency."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    ttft_p50_s: float
    ttft_p95_s: float
    ttft_p99_s: float
    tpot_p50_s: float
    tpot_p95_s: float
    tpot_p99_s: float
    e2e_p50_s: float
    e2e_p95_s: float
    e2e_p99_s: float


class TailLatency(LatencyPercentiles):
    utilisation: float  # offered load over what the replicas serve at a full batch (busiest state)
    stable: bool  # every state's load below capacity (else the percentiles are infinite)
    requests_per_s: float
    output_tokens_per_s_per_user: float  # 1 / mean TPOT
    mean_running: float  # sequences running per replica (request-weighted over states)
    wait_probability: float  # share of requests that wait for a slot or for the prompt budget


@dataclass(frozen=True)
class TailArrays:
    """``TailLatency``'s fields as arrays over candidates (``approximate_many``)."""

    ttft_p50_s: np.ndarray
    ttft_p95_s: np.ndarray
    ttft_p99_s: np.ndarray
    tpot_p50_s: np.ndarray
    tpot_p95_s: np.ndarray
    tpot_p99_s: np.ndarray
    e2e_p50_s: np.ndarray
    e2e_p95_s: np.ndarray
    e2e_p99_s: np.ndarray
    utilisation: np.ndarray
    stable: np.ndarray
    requests_per_s: np.ndarray
    output_tokens_per_s_per_user: np.ndarray
    mean_running: np.ndarray
    wait_probability: np.ndarray

    def row(self, i: int) -> TailLatency:
        values = {f.name: getattr(self, f.name)[i].item() for f in fields(self)}
        return TailLatency(**values)


@dataclass(frozen=True)
class CurveTable:
    """Service curves stacked as arrays (rows padded with their last value) for ``approximate_many``."""

    concurrency: np.ndarray  # (curves, points)
    tpot_s: np.ndarray
    ttft_s: np.ndarray
    decode_step_s: np.ndarray
    prefill_s_per_token: np.ndarray
    slots: np.ndarray  # (curves,)
    request_overhead_s: np.ndarray
    token_budget: np.ndarray
    tokens_per_step: np.ndarray
    input_tokens: np.ndarray
    uncached_share: np.ndarray  # of a prompt's tokens, those the prefix cache does not serve
    prefill_first: np.ndarray  # 1: prompts run in steps of their own, the running sequences paused
    lone_s_per_token: np.ndarray  # a lone prompt step's seconds per token (one data-parallel rank's budget)
    lone_fixed_s: np.ndarray  # a lone prompt step as fixed + slope × tokens (one rank's, ``lone_prompt_affine``)
    lone_slope_s_per_token: np.ndarray
    prefill_s: np.ndarray  # the workload's prompt alone
    data_parallel: np.ndarray  # engine ranks side by side, each prefilling its own requests' prompts

    @classmethod
    def of(cls, curves: list[ServiceCurve] | tuple[ServiceCurve, ...]) -> "CurveTable":
        width = max(len(c.concurrency) for c in curves)

        def pad(name: str) -> np.ndarray:
            rows = [list(getattr(c, name)) for c in curves]
            return np.array([r + [r[-1]] * (width - len(r)) for r in rows], dtype=float)

        def col(name: str) -> np.ndarray:
            return np.array([float(getattr(c, name)) for c in curves])

        ranks = [c.rank() for c in curves]  # one data-parallel rank's curve: its lone prompt steps
        affine = [r.lone_prompt_affine() for r in ranks]  # (fixed s, s per token) each, worked out once
        return cls(concurrency=pad("concurrency"), tpot_s=pad("tpot_s"), ttft_s=pad("ttft_s"),
                   decode_step_s=pad("decode_step_s"), prefill_s_per_token=pad("prefill_s_per_token"),
                   slots=col("slots"), request_overhead_s=col("request_overhead_s"), token_budget=col("token_budget"),
                   tokens_per_step=col("tokens_per_step"), input_tokens=col("input_tokens"),
                   uncached_share=col("uncached_share"), prefill_first=col("prefill_first"),
                   lone_s_per_token=np.array([r.lone_prompt_s_per_token() for r in ranks]), prefill_s=col("prefill_s"),
                   lone_fixed_s=np.array([fixed for fixed, _ in affine]),
                   lone_slope_s_per_token=np.array([slope for _, slope in affine]),
                   data_parallel=col("data_parallel"))

    def take(self, rows: np.ndarray) -> "CurveTable":
        """One row per candidate: row ``rows[i]`` of every array."""
        return CurveTable(**{f.name: getattr(self, f.name)[rows] for f in fields(self)})
