"""Steps of prompts alone, as an engine that runs prompts first schedules them (``prefill_first``,
SGLang): what they add to the time per output token of the sequences they pause, in mean and spread.

Such an engine runs, before a decode step, one step of every prompt that waits (up to its budget,
priced as a lone prompt: ``ServiceCurve.lone_prompt_affine``, ``fixed + slope × tokens``). With
prompts reaching a rank at ``λ`` per second, the ``K`` that arrive during one cycle (a decode step
of ``d`` seconds and the prompt step before it, ``T`` in all) are Poisson with mean ``μ = λT``, and
the prompt step costs ``X = 1{K ≥ 1}·fixed + slope·S`` with ``S`` their tokens (each of mean ``Ī``
and squared coefficient of variation ``c²``). So

- the mean cycle solves ``T = d + (1 − e^{−μ})·fixed + μ·Ī·slope`` (a contraction while the prompts'
  share of the time ``λ·(fixed + Ī·slope)`` is below 1; iterated from ``T = d``);
- ``Var X = fixed²·p(1 − p) + slope²·μ·Ī²(1 + c²) + 2·fixed·slope·μ·Ī·(1 − p)`` with ``p = 1 − e^{−μ}``
  (``E[S·1{K ≥ 1}] = E[S]``, as ``S`` is zero when ``K`` is);
- a request of ``o`` output tokens lives ``(o − 1)/τ`` cycles (``τ`` tokens a step), each with its own
  independent ``X``: its TPOT has mean ``T/τ`` and variance ``Var X / (τ (o − 1))``.

The engines that fuse prompt chunks into decode steps (``mixed``) are priced by the speed model's
own steady state instead (``ServiceCurve.tpot_s``).
"""

from __future__ import annotations

import numpy as np

CYCLE_STEPS = 24  # fixed-point iterations for the mean cycle (from below, monotone)


def prompt_cycle_s(step_s: np.ndarray, rate_per_s: np.ndarray, fixed_s: np.ndarray, slope_s_per_token: np.ndarray,
                   prompt_tokens: np.ndarray) -> np.ndarray:
    """The mean cycle ``T`` (a decode step and the prompt step before it) at a rank's prompt arrival
    rate ``rate_per_s``; past the rate the prompt steps take all the time, the last iterate (large)."""
    cycle = np.asarray(step_s, float)
    for _ in range(CYCLE_STEPS):
        mu = rate_per_s * cycle
        cycle = step_s + -np.expm1(-mu) * fixed_s + mu * prompt_tokens * slope_s_per_token
    return cycle


def prompt_step_variance(cycle_s: np.ndarray, rate_per_s: np.ndarray, fixed_s: np.ndarray,
                         slope_s_per_token: np.ndarray, prompt_tokens: np.ndarray, prompt_scv: float) -> np.ndarray:
    """``Var X``: the spread of the prompt step before one decode step (module text)."""
    mu = rate_per_s * cycle_s
    p = -np.expm1(-mu)
    return (fixed_s**2 * p * (1 - p) + slope_s_per_token**2 * mu * prompt_tokens**2 * (1 + prompt_scv)
            + 2 * fixed_s * slope_s_per_token * mu * prompt_tokens * (1 - p))
