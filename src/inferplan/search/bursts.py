"""Bursty arrivals over spells of finite length: the waits each arrival state of a two-state
Markov-modulated Poisson process (``Load.states``) really builds.

The queueing approximation solves each state as if it lasted; a spell does not. With ``x`` the
peak-to-average factor and ``P`` the burst period, busy spells last ``d_b = P/(x + 1)`` on average
and quiet ones ``d_q = P·x/(x + 1)``, exponentially (as ``arrivals._bursty_times`` draws them). Per
candidate, with each state's utilisation ``ρ`` and steady mean wait ``W``:

- A busy state the replica can serve (``ρ_b < 1``) builds its queue over the spell. Taken as a
  reflected Brownian motion with drift ``−δ = ρ_b − 1`` and the variance ``σ² = 2·W_b·δ`` that its
  steady mean ``W_b = σ²/(2δ)`` implies, started empty, the queue an arrival finds when its spell
  is ``A`` seconds old, with ``A`` exponential of mean ``d_b``, is exponential with mean
  ``σ²/(δ + √(δ² + 2σ²/d_b))`` (the supremum of a Brownian motion with drift up to an independent
  exponential time; Wiener–Hopf) — ``W_b`` for long spells, ``σ·√(d_b/2)`` at ``ρ_b → 1`` — and
  not below the quiet state's own wait.
- A busy state it cannot serve (``ρ_b ≥ 1``) while the time-averaged load is below capacity
  (``ρ_b/(x + 1) + ρ_q·x/(x + 1) < 1``, the quiet state itself stable) is a fluid queue: work piles
  up at ``u = ρ_b − 1`` seconds per second in busy spells and drains at ``v = 1 − ρ_q`` in quiet
  ones, a backlog carried over from spell to spell. The two-state Markov-modulated fluid queue
  has an exact stationary law (Anick, Mitra & Sondhi 1982): the backlog exceeds ``y`` in a busy
  spell with probability ``π_b·e^{−y/m}`` and in a quiet one ``π_b·(u/v)·e^{−y/m}``, with
  ``1/m = 1/(u·d_b) − 1/(v·d_q)``. An arrival waits the backlog it finds: every busy arrival,
  exponentially with mean ``m``, and a share ``u/(v·x)`` of quiet ones, alike. The fluid has no
  noise, so near ``ρ_b = 1`` (``m → 0``) a busy arrival waits at least what a Brownian motion
  with drift ``+u`` builds from empty over an exponentially old spell, ``σ²/(√(u² + 2σ²/d_b) − u)``
  — the served formula's limit ``σ·√(d_b/2)`` at ``ρ_b = 1`` — with the heavy-traffic variance
  ``σ² = 2·(1 − ρ_q)·W_q/p_q`` read from the quiet state (``p_q`` its probability of waiting:
  Allen–Cunneen's and Kingman's ``2·(1 − ρ)·W/P(wait)`` does not depend on ``ρ``). The slots that a
  quiet spell leaves free are not counted as absorbing the start of a burst (a short quiet spell
  does not empty them), so waits err long where they do.
- A load above capacity on average stays unstable.

``inferplan simulate`` runs the spells themselves; docs/search.md compares the two.
"""

from __future__ import annotations

import numpy as np

from inferplan.search.arrivals import Load


def spell_waits(load: Load, p_wait: np.ndarray, mean_wait: np.ndarray, utilisation: np.ndarray,
                stable: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(probability of waiting, mean wait, stable), candidates × (busy, quiet), for ``load``'s
    spells; arrays as the steady states give them. Loads that are not bursty come back as they are."""
    if load.arrival != "bursty" or p_wait.shape[1] != 2:
        return p_wait, mean_wait, stable
    x, period = load.peak_to_average, load.burst_period_s
    d_b, d_q = period / (x + 1), period * x / (x + 1)
    rho_b, rho_q = utilisation[:, 0], utilisation[:, 1]
    w_b, w_q = mean_wait[:, 0], mean_wait[:, 1]
    p, w, ok = p_wait.copy(), mean_wait.copy(), stable.copy()
    served = stable[:, 0] & np.isfinite(w_b)
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        drift = 1 - rho_b
        var = 2 * np.where(served, w_b, 0.0) * drift  # the diffusion's variance, from W = σ²/(2δ)
        built = np.where(var > 0, var / (drift + np.sqrt(drift**2 + 2 * var / d_b)), 0.0)
    w[:, 0] = np.where(served, np.minimum(np.maximum(built, w_q), w_b), w[:, 0])
    fluid = ~served & (rho_b >= 1) & stable[:, 1] & np.isfinite(w_q) & (rho_q < 1) & (rho_b / (x + 1) + rho_q * x / (x + 1) < 1)
    up = np.where(fluid, rho_b - 1, 1.0)  # the backlog's drift in a busy spell, seconds of work per second
    down = np.where(fluid, 1 - rho_q, 1.0)  # and in a quiet one, draining
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        decay = 1 / (up * d_b) - 1 / (down * d_q)  # 1/m
        mean = np.where(decay > 0, 1 / decay, np.inf)
        var_q = np.where(fluid & (p_wait[:, 1] > 0), 2 * (1 - rho_q) * w_q / p_wait[:, 1], 0.0)
        noise = np.where(var_q > 0, var_q / (np.sqrt(up**2 + 2 * var_q / d_b) - up), 0.0)
    quiet_share = np.minimum(up / (down * x), 1.0)  # P(waits | quiet arrival)
    p[:, 0] = np.where(fluid, 1.0, p[:, 0])
    w[:, 0] = np.where(fluid, np.maximum(mean, noise), w[:, 0])
    p[:, 1] = np.where(fluid, 1 - (1 - p[:, 1]) * (1 - quiet_share), p[:, 1])
    w[:, 1] = np.where(fluid, w_q + quiet_share * mean, w[:, 1])
    ok[:, 0] |= fluid & np.isfinite(mean)
    return p, w, ok
