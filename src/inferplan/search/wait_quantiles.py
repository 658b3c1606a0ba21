"""Quantiles of a latency that is a base time plus a queueing wait, per candidate: the wait an atom at
zero and an exponential tail (``mgc.py``'s M/G/c wait), the base over equally likely length nodes, for one
arrival state (solved exactly) or a mixture of states (by bisection). Used by ``queueing.py`` and the
search's separate prefill and decode pools (``evaluate.py``)."""

from __future__ import annotations

import numpy as np

BISECTION_STEPS = 20  # the bracket narrowed 10^6-fold


def mixture_wait_quantile(weights, p_wait: np.ndarray, mean_wait: np.ndarray, q: float) -> np.ndarray:
    """The ``q`` quantile of a wait that is, with probability ``weights[s]``, state ``s``'s M/G/c wait
    (``p_wait``, ``mean_wait``: candidates × states, from ``mgc_wait``): each state's exponential
    tail as in ``mgc_wait_quantile``, the mixture's quantile by bisection (one state: that formula)."""
    p, m = np.asarray(p_wait, float), np.asarray(mean_wait, float)
    if p.shape[1] == 1:
        with np.errstate(divide="ignore", invalid="ignore"):
            tail = np.where(p[:, 0] > 0, m[:, 0] / p[:, 0], 0.0) * np.log(np.maximum(p[:, 0] / (1 - q), 1.0))
        return np.where(np.isfinite(m[:, 0]), tail, np.inf)
    return sum_quantile(np.zeros((*p.shape, 1)), np.asarray(weights, float), p, m, q)


def sum_quantile(base: np.ndarray, weights: np.ndarray, p_wait: np.ndarray, mean_wait: np.ndarray,
                 q: float) -> np.ndarray:
    """The ``q`` quantile of ``B + W`` per candidate, where ``B`` takes the equally likely node
    values ``base[i, s, k]`` in state ``s`` (probability ``weights[s]``) and ``W`` is 0 with
    probability ``1 − p_wait[i, s]``, else exponential with mean ``mean_wait[i, s] / p_wait``.
    One state: solved exactly node interval by node interval; a mixture of states: by bisection."""
    if base.shape[1] == 1:
        return _one_state_quantile(np.sort(base[:, 0, :], axis=1), p_wait[:, 0], mean_wait[:, 0], q)
    return _bisected_quantile(base, weights, p_wait, mean_wait, q)


def _one_state_quantile(base: np.ndarray, p_wait: np.ndarray, mean_wait: np.ndarray, q: float) -> np.ndarray:
    """``sum_quantile`` for one state, ``base`` sorted along its nodes. Between nodes ``b[j−1]`` and
    ``b[j]`` the CDF is ``j/K − (p/K) · e^{−(t − b[j−1])/m} · S_j`` with
    ``S_j = Σ_{k<j} e^{−(b[j−1] − b[k])/m}`` (kept by a recursion, so no exponent is positive); the
    quantile is the first node at which the CDF reaches ``q`` or the root inside the interval after it."""
    n, k = base.shape
    m = np.where(p_wait > 0, mean_wait / np.maximum(p_wait, 1e-300), 0.0)
    pw = np.where(m > 0, p_wait, 0.0)
    inv_m = np.where(m > 0, 1 / np.where(m > 0, m, 1.0), 0.0)
    answer = np.full(n, np.nan)
    s_j = np.zeros(n)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        for j in range(1, k + 1):
            left = base[:, j - 1]
            s_j = (s_j * np.exp(-(left - base[:, j - 2]) * inv_m) if j > 1 else s_j) + 1
            after_node = (j - pw * s_j) / k  # the CDF just past node j - 1
            right = base[:, j] if j < k else np.full(n, np.inf)
            before_next = (j - pw * s_j * np.exp(-(right - left) * inv_m)) / k
            root = left + m * np.log(pw * s_j / (j - q * k))
            here = np.where(after_node >= q, left, np.where(before_next >= q, root, np.nan))
            answer = np.where(np.isnan(answer), here, answer)
    return np.where(np.isfinite(mean_wait), answer, np.inf)


def _bisected_quantile(base: np.ndarray, weights: np.ndarray, p_wait: np.ndarray, mean_wait: np.ndarray,
                       q: float) -> np.ndarray:
    cond = np.where(p_wait > 0, mean_wait / np.maximum(p_wait, 1e-300), 0.0)[..., None]
    pw = p_wait[..., None]
    lo = base.min(axis=(1, 2))
    tail = np.where(p_wait > 0, cond[..., 0] * np.log(np.maximum(p_wait / (1 - q), 1.0)), 0.0).max(axis=1)
    hi = base.max(axis=(1, 2)) + tail + 1e-12
    finite = np.isfinite(hi)
    hi = np.where(finite, hi, lo + 1.0)
    rate = np.where(cond > 0, 1 / np.where(cond > 0, cond, 1.0), 0.0)
    pw = np.where(cond > 0, pw, 0.0)  # no wait to speak of
    for _ in range(BISECTION_STEPS):
        mid = (lo + hi) / 2
        x = mid[:, None, None] - base
        with np.errstate(over="ignore", invalid="ignore"):
            g = 1 - pw * np.exp(-np.maximum(x, 0.0) * rate)
        g[x < 0] = 0.0
        cdf = g.mean(axis=2) @ weights if g.shape[1] > 1 else g[:, 0].mean(axis=1)
        below = cdf < q
        lo, hi = np.where(below, mid, lo), np.where(below, hi, mid)
    return np.where(finite, hi, np.inf)
