"""TEMPORARY stand-in for the queueing module (deleted once it is merged)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from inferplan.performance.serving import _Context, _estimate


@dataclass(frozen=True)
class ServiceCurve:
    slots: int
    concurrency: np.ndarray
    tpot_s: np.ndarray
    ttft_s: np.ndarray
    prefill_s: float
    input_len: int
    output_len: int


@dataclass(frozen=True)
class Load:
    request_rate_per_s: float
    input_tokens: int
    output_tokens: int
    arrival: Literal["poisson", "bursty", "trace"] = "poisson"
    peak_to_average: float = 1.0


@dataclass(frozen=True)
class TailLatency:
    ttft_p50_s: float
    ttft_p95_s: float
    ttft_p99_s: float
    tpot_p50_s: float
    tpot_p95_s: float
    tpot_p99_s: float
    e2e_p50_s: float
    e2e_p95_s: float
    e2e_p99_s: float
    utilisation: float
    stable: bool
    requests_per_s: float
    output_tokens_per_s_per_user: float


def service_curve(d, w, catalog, *, points: int = 16) -> ServiceCurve:
    ctx = _Context(catalog, d, w)
    top = min(ctx.max_concurrency(), ctx.max_running * ctx.dp)
    levels = sorted({max(1, round(top ** (i / max(points - 1, 1)))) for i in range(points)})
    est = [_estimate(ctx, c) for c in levels]
    return ServiceCurve(slots=top, concurrency=np.array(levels, float), tpot_s=np.array([e.tpot_s for e in est]),
                        ttft_s=np.array([e.ttft_s for e in est]), prefill_s=est[0].ttft_s,
                        input_len=w.input_len, output_len=w.output_len)


def mgc_wait_quantile(arrival_rate_per_s, service_mean_s, service_scv, servers, q):
    lam, s, c = (np.asarray(x, float) for x in (arrival_rate_per_s, service_mean_s, servers))
    rho = lam * s / c
    ok = rho < 1
    r = np.where(ok, rho, 0.5)
    p_wait = np.minimum(r ** np.sqrt(2 * (c + 1)), 1.0)
    rate = np.where(ok, (c / s - lam) * 2 / (1 + np.asarray(service_scv, float)), 1.0)
    wq = np.where(p_wait > 1 - q, np.log(np.maximum(p_wait, 1e-300) / (1 - q)) / rate, 0.0)
    return np.where(ok, wq, np.inf)


def approximate_many(curve: ServiceCurve, load: Load, *, replicas, slot_cap, request_rate_per_s=None):
    replicas = np.asarray(replicas, float)
    cap = np.minimum(np.asarray(slot_cap, float), curve.slots)
    rate = np.asarray(request_rate_per_s if request_rate_per_s is not None else load.request_rate_per_s, float)
    lam = rate / replicas
    n = np.ones_like(lam * cap)
    for _ in range(8):  # Little: n = lam * (ttft + out * tpot(n)), at most the cap
        t = np.interp(n, curve.concurrency, curve.tpot_s)
        s = np.interp(n, curve.concurrency, curve.ttft_s) + curve.output_len * t
        n = np.clip(lam * s, 1.0, cap)
    tpot = np.interp(n, curve.concurrency, curve.tpot_s)
    ttft0 = np.interp(n, curve.concurrency, curve.ttft_s)
    service = ttft0 + curve.output_len * tpot
    out = {}
    for q, name in ((0.5, "p50"), (0.95, "p95"), (0.99, "p99")):
        wait = mgc_wait_quantile(lam, service, 0.0, cap, q)
        out[f"ttft_{name}_s"] = ttft0 + wait
        out[f"tpot_{name}_s"] = tpot
        out[f"e2e_{name}_s"] = ttft0 + wait + curve.output_len * tpot
    out["utilisation"] = lam * service / cap
    out["stable"] = out["utilisation"] < 1
    out["requests_per_s"] = rate * np.ones_like(lam)
    out["output_tokens_per_s_per_user"] = 1 / tpot
    out["running"] = n
    return out


def approximate(curve: ServiceCurve, load: Load, replicas: int = 1, *, slot_cap: int | None = None) -> TailLatency:
    many = approximate_many(curve, load, replicas=np.array([replicas]), slot_cap=np.array([slot_cap or curve.slots]))
    return TailLatency(**{k: (bool(v[0]) if k == "stable" else float(v[0])) for k, v in many.items() if k != "running"})
