"""Waiting for one of ``c`` servers: Erlang C, the Allen–Cunneen mean wait of an M/G/c (G/G/c)
queue and its exponential tail — the formulas the queueing approximation (``queueing.py``) and
the separate prefill and decode pools of a search (``evaluate.py``) wait with."""

from __future__ import annotations

import math

import numpy as np

EXACT_ERLANG_SERVERS = 64  # Erlang C by the Erlang B recursion up to this many servers, Halfin–Whitt above

_erf = np.vectorize(math.erf, otypes=[float])


def erlang_c(servers: np.ndarray, offered: np.ndarray) -> np.ndarray:
    """Probability that an arrival waits in an M/M/c queue with ``servers`` and ``offered`` load
    (λ/μ): Erlang B by its recursion then ``C = cB / (c − a(1 − B))`` up to
    ``EXACT_ERLANG_SERVERS``; above, Halfin and Whitt's limit ``1 / (1 + βΦ(β)/φ(β))`` with
    ``β = (1 − ρ)√c`` (Halfin & Whitt 1981). 1 where the load reaches the servers."""
    c = np.asarray(servers, float)
    a = np.asarray(offered, float)
    c, a = np.broadcast_arrays(c, a)
    out = np.ones(c.shape)
    ok = a < c
    small = ok & (c <= EXACT_ERLANG_SERVERS)
    if small.any():
        cs, as_ = c[small], a[small]
        b = np.ones(cs.shape)
        for k in range(1, int(cs.max()) + 1):
            b = np.where(k <= cs, as_ * b / (k + as_ * b), b)
        out[small] = cs * b / (cs - as_ * (1 - b))
    large = ok & ~small
    if large.any():
        beta = (1 - a[large] / c[large]) * np.sqrt(c[large])
        cdf = 0.5 * (1 + _erf(beta / math.sqrt(2)))
        pdf = np.exp(-beta**2 / 2) / math.sqrt(2 * math.pi)
        with np.errstate(divide="ignore", over="ignore"):  # far below capacity φ(β) underflows to 0: C is 0
            out[large] = 1 / (1 + beta * cdf / pdf)
    return np.clip(out, 0.0, 1.0)


def mgc_wait(arrival_rate_per_s, service_mean_s, service_scv, servers, arrival_scv=1.0):
    """(probability of waiting, mean wait in seconds) of an M/G/c (G/G/c) queue: Erlang C and the
    Allen–Cunneen approximation ``Wq = C(c, a)/(cμ − λ) · (ca² + cs²)/2`` (Allen 1990, §7). Arrays
    broadcast; an overloaded queue waits forever (probability 1, mean inf)."""
    lam, s, scv, c = (np.asarray(v, float) for v in (arrival_rate_per_s, service_mean_s, service_scv, servers))
    ca2 = np.asarray(arrival_scv, float)
    a = lam * s
    p = erlang_c(c, a)
    spare = c / np.where(s > 0, s, np.inf) - lam
    with np.errstate(divide="ignore", invalid="ignore"):
        mean = np.where(spare > 0, p / spare * (ca2 + scv) / 2, np.inf)
    return np.where(spare > 0, p, 1.0), np.where(a > 0, mean, 0.0)


def mgc_wait_quantile(arrival_rate_per_s, service_mean_s, service_scv, servers, q, arrival_scv=1.0):
    """The ``q`` quantile of the wait in an M/G/c queue: ``P(W > t) ≈ C · exp(−t · C / Wq)`` (the
    M/M/c wait's exponential tail, its mean scaled by Allen–Cunneen), so ``t_q = Wq/C · ln(C/(1−q))``
    where ``C > 1 − q``, else 0. Vectorised over every argument."""
    p, mean = mgc_wait(arrival_rate_per_s, service_mean_s, service_scv, servers, arrival_scv)
    with np.errstate(divide="ignore", invalid="ignore"):
        tail = np.where(p > 0, mean / p, 0.0) * np.log(np.maximum(p / (1 - np.asarray(q, float)), 1.0))
    return np.where(np.isfinite(mean), tail, np.inf)
