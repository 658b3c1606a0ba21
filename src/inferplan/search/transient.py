"""A benchmark run of stated length, which starts empty and may end before the queue settles.

The queueing approximation (``queueing.py``) solves the steady state; a run of N requests at rate
λ lasts N / λ seconds. Two corrections take it as run:

- ``run_batch``: the running batch from ``dn/dt = λ − n / E[S](1 + n)`` (arrivals in, completions
  out at the batch's service time), each arrival seeing the mean over its own life;
- ``settled_share``: of a queue's steady mean wait, the share a run of that span reaches (reflected
  Brownian motion started empty).
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np

RUN_STEPS = 64  # steps over the run's arrivals (as many again after them)


def run_batch(service_s: Callable[[np.ndarray], np.ndarray], span_s: np.ndarray, lam: np.ndarray,
              slots: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(the running batch a request of the run sees over its life, the batch at the run's last
    arrival) for ``span_s`` seconds of arrivals at ``lam`` per second into an empty instance whose
    request takes ``service_s(1 + n)`` seconds beside ``n`` others: ``RUN_STEPS`` steps over
    the span, then as many with no arrivals, each step solved exactly at its service time (stable
    however long the step: a run of hours settles where its rate takes it); each arrival's batch is
    the mean over its service time."""
    dt = span_s / RUN_STEPS
    n = np.zeros_like(lam)
    path = []
    for k in range(2 * RUN_STEPS):
        service = service_s(np.minimum(1 + n, slots))
        if k == RUN_STEPS:
            end, life = n, service
        settled = lam * service if k < RUN_STEPS else 0.0  # where the batch heads at this service time
        n = np.clip(settled + (n - settled) * np.exp(-dt / service), 0.0, slots)
        path.append(n)
    cum = np.concatenate([np.zeros((1, len(lam))), np.cumsum(np.stack(path), axis=0)])
    width = np.clip(np.rint(life / dt), 1, RUN_STEPS).astype(np.int64)  # a request's life, in steps
    start = np.arange(RUN_STEPS)[:, None]
    seen = (np.take_along_axis(cum, start + width[None, :], axis=0) - cum[:RUN_STEPS]) / width[None, :]
    return seen.mean(axis=0), end


def settled_share(span_s: np.ndarray, mean_wait_s: np.ndarray, rho: np.ndarray) -> np.ndarray:
    """Of a queue's steady-state mean wait, the share a run of ``span_s`` seconds that starts empty
    averages over arrivals spread evenly across it. The queue is taken as reflected Brownian motion
    with drift ``−δ`` (``δ = 1 − ρ``) and the variance ``σ²`` that its steady mean ``W = σ²/(2δ)``
    implies; started empty its mean at time ``t`` is ``W·h(t/τ)`` with ``τ = σ²/δ² = 2W/δ`` and
    ``h(u) = 1 − 2(1 + u)·Φ̄(√u) + 2√u·φ(√u)`` (Abate & Whitt 1987: it grows as ``√t`` at first, so a
    short run reaches more of ``W`` than an exponential approach would give). The share is
    ``h``'s average over ``[0, span/τ]``, by ``SHARE_NODES``-point Gauss–Legendre in ``√u``. An
    unstable queue stays unstable."""
    span, w, r = np.broadcast_arrays(np.asarray(span_s, float), np.asarray(mean_wait_s, float), np.asarray(rho, float))
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        tau = 2 * w / np.maximum(1 - r, 1e-12)
        reach = np.where(tau > 0, span / np.where(tau > 0, tau, 1.0), np.inf)
    v, weight = _NODES
    u = np.minimum(reach, 1e12)[..., None] * v**2  # u = reach · v², du = 2 · reach · v dv
    root = np.sqrt(u)
    h = 1 - (1 + u) * _erfc(root / np.sqrt(2)) + 2 * root * np.exp(-u / 2) / np.sqrt(2 * np.pi)
    share = (h * 2 * v * weight).sum(axis=-1)
    return np.where(np.isfinite(w) & (r < 1), np.clip(np.where(np.isfinite(reach), share, 1.0), 0.0, 1.0), 1.0)


SHARE_NODES = 24
_NODES = tuple(np.asarray(a, float) for a in np.polynomial.legendre.leggauss(SHARE_NODES))
_NODES = ((_NODES[0] + 1) / 2, _NODES[1] / 2)  # on [0, 1]
_erfc = np.vectorize(math.erfc, otypes=[float])
