"""A benchmark run of stated length, which starts empty and may end before the queue settles.

The queueing approximation (``queueing.py``) solves the steady state; a run of N requests at rate
λ lasts N / λ seconds. Two corrections take it as run:

- ``run_batch``: the running batch from ``dn/dt = λ − n / E[S](1 + n)`` (arrivals in, completions
  out at the batch's service time), each arrival seeing the mean over its own life;
- ``settled_share``: of a queue's steady mean wait, the share a run of that span reaches.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

RUN_STEPS = 64  # Euler steps over the run's arrivals (as many again after them)


def run_batch(service_s: Callable[[np.ndarray], np.ndarray], span_s: np.ndarray, lam: np.ndarray,
              slots: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(the running batch a request of the run sees over its life, the batch at the run's last
    arrival) for ``span_s`` seconds of arrivals at ``lam`` per second into an empty instance whose
    request takes ``service_s(1 + n)`` seconds beside ``n`` others: ``RUN_STEPS`` Euler steps over
    the span, then as many with no arrivals; each arrival's batch is the mean over its service time."""
    dt = span_s / RUN_STEPS
    n = np.zeros_like(lam)
    path = []
    for k in range(2 * RUN_STEPS):
        service = service_s(np.minimum(1 + n, slots))
        if k == RUN_STEPS:
            end, life = n, service
        n = np.clip(n + dt * ((lam if k < RUN_STEPS else 0.0) - n / service), 0.0, slots)
        path.append(n)
    cum = np.concatenate([np.zeros((1, len(lam))), np.cumsum(np.stack(path), axis=0)])
    width = np.clip(np.rint(life / dt), 1, RUN_STEPS).astype(np.int64)  # a request's life, in steps
    start = np.arange(RUN_STEPS)[:, None]
    seen = (np.take_along_axis(cum, start + width[None, :], axis=0) - cum[:RUN_STEPS]) / width[None, :]
    return seen.mean(axis=0), end


def settled_share(span_s: np.ndarray, mean_wait_s: np.ndarray, rho: np.ndarray) -> np.ndarray:
    """Of a queue's steady-state mean wait, the share a run of ``span_s`` seconds that starts empty
    averages: ``1 − (1 − e^{−x})/x`` with ``x = span / τ``, the wait taken to approach its steady
    mean as ``1 − e^{−t/τ}``. ``τ = 2σ²/δ²`` is the time scale of reflected Brownian motion with
    variance σ² and drift −δ (Abate & Whitt 1987 give its exact transient), which with the steady
    mean wait ``W = σ²/(2δ)`` and ``δ = 1 − ρ`` is ``4 W / (1 − ρ)``. An unstable queue stays
    unstable."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        tau = 4 * mean_wait_s / np.maximum(1 - rho, 1e-12)
        x = np.where(tau > 0, span_s / np.where(tau > 0, tau, 1.0), np.inf)
        share = np.where(x > 1e-6, 1 - (1 - np.exp(-np.minimum(x, 700))) / np.where(x > 1e-6, x, 1.0), x / 2)
    return np.where(np.isfinite(mean_wait_s) & (rho < 1), np.clip(share, 0.0, 1.0), 1.0)
