"""Quantiles of a latency that is a base time plus a queueing wait, per candidate: the wait an atom at
zero and an exponential tail (``mgc.py``'s M/G/c wait), the base over equally likely length nodes, for one
arrival state (solved exactly) or a mixture of states (by bisection), optionally plus the residual of
the engine step an arrival finds in progress (``StepResidual``). Used by ``queueing.py`` and the
search's separate prefill and decode pools (``evaluate.py``)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

BISECTION_STEPS = 20  # the bracket narrowed 10^6-fold
RESIDUAL_BISECTION_STEPS = 14  # one step's bracket narrowed 16,000-fold (a 30 ms step: to 2 µs)


@dataclass(frozen=True)
class StepResidual:
    """What is left of the engine step an arrival finds in progress (candidates × states): with
    probability ``1 − busy`` the engine is idle and nothing is left, else uniform on
    ``[least_s, step_s]`` (``least_s`` none: from 0). A Poisson arrival sees the time average
    (PASTA); it lands in a step with probability in proportion to the step's length, and the time
    left of a step of length ``L`` it lands in is uniform on ``[0, L]``, so the residual of steps of
    length ``L`` has density ``(1 − F(x)) / E[L]`` (the equilibrium distribution of renewal theory;
    Kleinrock, Queueing Systems Vol. 1, §5.2): for steps of one length ``d``, uniform on ``[0, d]``
    with mean ``d / 2``. A closed loop's arrival instead comes a fixed time after a step ended (its
    own request's last): ``least_s = step_s``, what is left of the step at that time."""

    busy: np.ndarray
    step_s: np.ndarray
    least_s: np.ndarray | None = None


def poisson_at_least(mean: np.ndarray, count: np.ndarray) -> np.ndarray:
    """``P(N ≥ count)`` for ``N`` Poisson with ``mean`` (elementwise; ``count`` whole, at least 1)."""
    mean, count = np.asarray(mean, float), np.asarray(count)
    term, below = np.exp(-mean), np.zeros(np.broadcast(mean, count).shape)
    for k in range(int(np.max(count))):
        below = below + np.where(k < count, term, 0.0)
        term = term * mean / (k + 1)
    return np.clip(1 - below, 0.0, 1.0)


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
                 q: float, residual: StepResidual | None = None) -> np.ndarray:
    """The ``q`` quantile of ``B + R + W`` per candidate, where ``B`` takes the equally likely node
    values ``base[i, s, k]`` in state ``s`` (probability ``weights[s]``), ``W`` is 0 with
    probability ``1 − p_wait[i, s]``, else exponential with mean ``mean_wait[i, s] / p_wait``, and
    ``R`` is the ``residual`` step (none: 0). One state without a residual: solved exactly node
    interval by node interval; with one, bisected between that quantile and it plus the longest
    step (``R`` lies in between); a mixture of states: by bisection."""
    if base.shape[1] == 1:
        exact = _one_state_quantile(np.sort(base[:, 0, :], axis=1), p_wait[:, 0], mean_wait[:, 0], q)
        if residual is None:
            return exact
        finite = np.isfinite(exact)
        lo = np.where(finite, exact, 0.0)
        hi = lo + residual.step_s.max(axis=1) + 1e-12
        answer = _bisect(base, weights, p_wait, mean_wait, q, residual, lo, hi, RESIDUAL_BISECTION_STEPS)
        return np.where(finite, answer, np.inf)
    return _bisected_quantile(base, weights, p_wait, mean_wait, q, residual)


def _bisected_quantile(base: np.ndarray, weights: np.ndarray, p_wait: np.ndarray, mean_wait: np.ndarray,
                       q: float, residual: StepResidual | None = None) -> np.ndarray:
    """``sum_quantile`` by bisection from the lowest node to the highest plus the longest wait tail
    any state reaches at ``q`` and the longest step."""
    cond = np.where(p_wait > 0, mean_wait / np.maximum(p_wait, 1e-300), 0.0)
    tail = np.where(p_wait > 0, cond * np.log(np.maximum(p_wait / (1 - q), 1.0)), 0.0).max(axis=1)
    lo = base.min(axis=(1, 2))
    hi = base.max(axis=(1, 2)) + tail + (0.0 if residual is None else residual.step_s.max(axis=1)) + 1e-12
    finite = np.isfinite(hi)
    hi = np.where(finite, hi, lo + 1.0)
    return np.where(finite, _bisect(base, weights, p_wait, mean_wait, q, residual, lo, hi, BISECTION_STEPS), np.inf)


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
            # no later than the next node: where the CDF reaches q only there (q·K = j), ``before_next``
            # may round to q and the logarithm's argument divide by zero
            root = np.minimum(left + m * np.log(pw * s_j / (j - q * k)), right)
            here = np.where(after_node >= q, left, np.where(before_next >= q, root, np.nan))
            answer = np.where(np.isnan(answer), here, answer)
    return np.where(np.isfinite(mean_wait), answer, np.inf)


def _bisect(base: np.ndarray, weights: np.ndarray, p_wait: np.ndarray, mean_wait: np.ndarray, q: float,
            residual: StepResidual | None, lo: np.ndarray, hi: np.ndarray, steps: int) -> np.ndarray:
    """The ``q`` quantile of ``B + R + W`` in ``[lo, hi]`` by ``steps`` halvings (``hi`` returned).
    Past a node by ``x``, ``W`` alone is below ``x`` with probability ``G(x) = 1 − p e^{−x/m}``, and
    ``U + W`` (``U`` uniform on ``[0, d]``) with probability ``(1/d) ∫₀^{min(x, d)} G(x − u) du``
    ``= (a − p m (e^{−(x − a)/m} − e^{−x/m})) / d``, ``a = min(x, d)``; a residual uniform on
    ``[l, u]`` is that at ``x − l`` and ``d = u − l``, and one of a single value ``l`` is ``G(x − l)``."""
    with np.errstate(divide="ignore", invalid="ignore"):
        cond = np.where((p_wait > 0) & np.isfinite(mean_wait), mean_wait / np.maximum(p_wait, 1e-300), 0.0)[..., None]
    rate = np.where(cond > 0, 1 / np.where(cond > 0, cond, 1.0), 0.0)
    pw = np.where(cond > 0, p_wait[..., None], 0.0)  # no wait to speak of
    if residual is not None:
        d = residual.step_s[..., None]
        least = np.zeros_like(d) if residual.least_s is None else residual.least_s[..., None]
        busy = np.where(d > 0, residual.busy[..., None], 0.0)
        width = d - least
        inv_w = np.where(width > 0, 1 / np.where(width > 0, width, 1.0), 0.0)
        pwm = pw * cond
    for _ in range(steps):
        mid = (lo + hi) / 2
        x = mid[:, None, None] - base
        xp = np.maximum(x, 0.0)
        with np.errstate(over="ignore", invalid="ignore"):
            tail = np.exp(-xp * rate)
            g = 1 - pw * tail
            if residual is not None:  # past the residual's lower end by ``y``: uniform over the rest, or one value
                y = xp - least
                yp = np.maximum(y, 0.0)
                a = np.minimum(yp, width)
                rest = np.exp(-yp * rate)
                spread = (a - pwm * (np.exp(-(yp - a) * rate) - rest)) * inv_w
                g += busy * (np.where(width > 0, spread, np.where(y >= 0, 1 - pw * rest, 0.0)) - g)
        g[x < 0] = 0.0
        cdf = g.mean(axis=2) @ weights if g.shape[1] > 1 else g[:, 0].mean(axis=1)
        below = cdf < q
        lo, hi = np.where(below, mid, lo), np.where(below, hi, mid)
    return hi
