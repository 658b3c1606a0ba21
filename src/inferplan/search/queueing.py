"""Tail latency under load, fast: queueing formulas over a ``ServiceCurve`` (docs/search.md).

Per replica (requests split evenly over ``replicas``), for each state of the arrival process:

1. The mean running batch ``n`` solves ``n = λ · E[S](min(1 + n, c))`` (Little's law; an arrival
   runs beside the ``n`` others it finds — PASTA), with ``E[S](b)`` a request's time in a slot at
   batch ``b``: its prompt beside the others plus ``(output − 1)`` tokens at ``tpot(b)``.
2. Waiting for a slot: M/G/c with ``c`` slots at the full-batch service time, the waiting
   probability from Erlang C and the mean wait from the Allen–Cunneen approximation,
   ``Wq = C(c, a) / (c/E[S] − λ) · (ca² + cs²) / 2``.
3. Waiting for the prompt budget: the prompts share each step's token budget, an M/G/1 queue whose
   work per request is its prompt's share of a full step (Kingman: ``ρ/(1−ρ) · E[x] · (ca² + cx²)/2``);
   under data parallelism, one such queue per rank, fed its share of the arrivals, each prompt at
   that rank's budget and cost per token (the running batch and the slots stay the instance's).
4. The two waits as one: an atom at zero and an exponential tail with their summed mean (the
   exponential tail of the M/M/c wait, Allen–Cunneen's scaling); TTFT and E2E quantiles solve
   ``P(base + R + W ≤ t) = q`` with the base over log-normal length nodes and ``R`` what is left of
   the decode step an arrival finds in progress on its rank: none when the rank is idle, else
   uniform over the step (``wait_quantiles.StepResidual``); a closed loop's arrival comes the
   request overhead after a step's end, so what is left is one value (``_step_busy``).
5. TPOT at the batch a request sees: its time average over a lifetime ≈ one service time has
   variance ``2e⁻¹ · n`` (the number in an M/M/∞ system averaged over its mean service time); plus
   the spread of how many of its steps carry another request's prompt chunk (binomial). An engine
   that runs prompts first pauses the batch for whole prompt steps instead: their mean and spread
   from the arrivals during each cycle (``prompt_steps.py``), which also lengthen the service time.

A run of stated length (``open_loop_requests`` N, a benchmark's ``num_prompts``) starts empty and
may end before it settles: its running batch follows ``dn/dt = λ − n / E[S](1 + n)`` over the
run's N / λ seconds (each request seeing the mean over its own life), the slots fill no further
than the run's last batch (their offered load is capped there), and each queue's mean wait is the
share of its steady mean that a run of that span reaches (the relaxation of reflected Brownian
motion; ``transient.py``). Prompt lengths count only the tokens the prefix cache does not serve.
A stated run's percentiles (open or closed loop) are the ones a benchmark takes over its N requests:
each quantile at the level where that statistic's median falls (``Load.run_quantile_level``: a
p99 over 10 requests is the population's 93rd percentile, over 500 its 98.9th).

Bursty arrivals: each state of the two-state process is solved as if it lasted, its waits are
then taken over spells of their mean length (``bursts.spell_waits``: a busy queue that a spell
does not build in full, or a fluid backlog where the busy rate exceeds what the replica serves and
the quiet spell drains it), and the percentiles are those of the mixture (requests weighted by
their state's arrivals). A load above what the replica serves on average is unstable.

A closed loop of C clients runs at a batch of ``min(C, c)``, clients beyond the slots waiting
``C / throughput − cycle``, and serves that throughput (its ``requests_per_s``); when the run's length is
stated (``closed_loop_requests`` N), the C requests its clients send together at the start (a share
C/N) queue for the prompt budget one behind the other, the k-th after k prompts; the
``cached_first_requests`` among them (prompts the prefix cache holds) go first, their first token
at the end of the first step (full of the others' prompt chunks). Cached requests after the start
are taken as uncached (the simulation runs them as one-token prompts). The start's requests decode
beside the prompts queued behind theirs and then see fewer of the others' next prompts than the
steady loop charges: their TPOT is a mixture apart (``_start_tpot_quantile``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from functools import lru_cache
from statistics import NormalDist

import numpy as np

from inferplan.search.arrivals import Load, length_nodes
from inferplan.search.bursts import spell_waits
from inferplan.search.mgc import mgc_wait
from inferplan.search.prompt_steps import prompt_cycle_s, prompt_step_variance
from inferplan.search.service import ServiceCurve
from inferplan.search.tail_types import CurveTable, TailArrays, TailLatency
from inferplan.search.transient import run_batch, settled_share
from inferplan.search.wait_quantiles import StepResidual, poisson_at_least, sum_quantile

QUANTILES = (0.5, 0.95, 0.99)
LIFETIME_BATCH_VARIANCE = 2 * math.exp(-1)  # Var of an M/M/∞ count averaged over one mean service time, per unit mean
FIXED_POINT_STEPS = 8  # Little's law iterations for the mean running batch (from below)
CLOSED_BISECTION_STEPS = 30  # a closed loop's rate beside its prompt steps: the bracket narrowed 10^9-fold
MIXED_STEP_NODES = 16  # output-length nodes averaging a request's share of prompt-carrying steps
START_BISECTION_STEPS = 30  # a stated closed loop's TPOT quantile: the bracket narrowed 10^9-fold
_PHI = np.vectorize(NormalDist().cdf, otypes=[float])


def _interp_rows(x: np.ndarray, xp: np.ndarray, fp: np.ndarray) -> np.ndarray:
    """Piecewise-linear interpolation of each row ``fp[i]`` over ``xp[i]`` at ``x[i]`` (flat outside)."""
    rows = np.arange(len(x))
    idx = np.clip((xp <= x[:, None]).sum(axis=1) - 1, 0, max(xp.shape[1] - 2, 0))
    nxt = np.minimum(idx + 1, xp.shape[1] - 1)
    x0, x1, f0, f1 = xp[rows, idx], xp[rows, nxt], fp[rows, idx], fp[rows, nxt]
    span = np.where(x1 > x0, x1 - x0, 1.0)
    t = np.clip(np.where(x1 > x0, (x - x0) / span, 0.0), 0.0, 1.0)
    return f0 + t * (f1 - f0)


@dataclass(frozen=True)
class _State:
    """One arrival state solved for every candidate (arrays over candidates)."""

    running: np.ndarray  # mean sequences running per replica
    served_per_s: np.ndarray  # requests a replica serves a second: its arrivals, or the rate a closed loop runs at
    batch: np.ndarray  # the batch a request runs in
    tpot_s: np.ndarray
    prefill_s: np.ndarray  # own prompt at the mean length beside the batch
    prefill_slope_s: np.ndarray  # per prompt token more or less than the mean (its uncached share prefilled)
    base_s: np.ndarray  # overhead and fixed waits before the prompt
    busy: np.ndarray  # the chance an arrival finds a step in progress on its rank
    residual_step_s: np.ndarray  # ... and that step's length (what is left of it: uniform up to it)
    residual_least_s: np.ndarray  # ... from this much (a closed loop's: one value, what is left of it)
    p_wait: np.ndarray
    mean_wait_s: np.ndarray
    utilisation: np.ndarray
    stable: np.ndarray
    tpot_quantiles_s: tuple[np.ndarray, ...]  # TPOT at each of QUANTILES of the batch a request averages over
    tpot_batch_sd_s: np.ndarray  # a request's TPOT spread from the batch it averages over
    tpot_mixed_sd_s: np.ndarray  # ... and from the prompt chunks its steps carry, per 1/√(o − 1)
    start_queue_s: np.ndarray | None = None  # a closed loop's start: the last of its clients' prompts sent together
    start_step_s: np.ndarray | None = None  # a closed loop's start: one step full of prompt tokens
    start_chunk_s: np.ndarray | None = None  # a closed loop's start: what a step's full budget of prompt adds
    start_steps: np.ndarray | None = None  # ... and the steps its admitted requests' prompts take on a rank
    start_tokens_per_step: np.ndarray | None = None
    start_admitted: np.ndarray | None = None  # of the requests sent at the start, the share the slots admit at once
    prefill_first: np.ndarray | None = None


def _service(t: CurveTable, batch: np.ndarray, output_mean: float, rate: np.ndarray | None = None,
             prompt_tokens: float = 0.0):
    """(tpot, own prompt, E[S]) at ``batch``, one curve row per candidate; an engine that runs prompts
    first prefills a request's prompt alone, whatever the batch, and (given the instance's arrival
    ``rate`` of prompts of ``prompt_tokens``) pauses the running sequences for others' prompt steps
    (``prompt_steps.py``) in place of the fused chunks the curve's TPOT holds."""
    tpot = _interp_rows(batch, t.concurrency, t.tpot_s)
    alone = t.prefill_first > 0
    if rate is not None and alone.any():
        step = _interp_rows(batch, t.concurrency, t.decode_step_s)
        cycle = prompt_cycle_s(step, rate / t.data_parallel, t.lone_fixed_s, t.lone_slope_s_per_token, prompt_tokens)
        tpot = np.where(alone, cycle / t.tokens_per_step, tpot)
    fused = _interp_rows(batch, t.concurrency, t.ttft_s) - t.request_overhead_s
    prompt = np.where(alone, t.prefill_s, fused)
    return tpot, prompt, prompt + (output_mean - 1) * tpot


def _solve_state(t: CurveTable, load: Load, rate: np.ndarray, slots: np.ndarray, start: bool = False,
                 span_s: np.ndarray | None = None) -> _State:
    """One arrival state for every candidate; ``t`` holds each candidate's own curve row. ``start``:
    the requests a closed loop's clients send together at its start, which queue for the prompt
    budget one behind the other (the k-th waits for k prompts: uniform up to all of them)."""
    out_mean, in_mean = load.output_tokens, load.input_tokens * t.uncached_share  # prompt tokens to prefill
    ca2 = load.arrival_scv()
    if load.arrival == "closed":
        running = np.minimum(rate, slots)  # here ``rate`` carries clients per replica
        tpot, prompt, service = _service(t, np.maximum(running, 1.0), out_mean)
        cycle = service + t.request_overhead_s
        batch, sigma = np.maximum(running, 1.0), np.zeros_like(running)
        p_slot, w_slot = np.zeros_like(running), np.zeros_like(running)
        full = service
    else:
        lam = rate
        tpot, prompt, service = _service(t, np.ones_like(lam), out_mean, lam, in_mean)
        running = np.minimum(lam * service, slots)
        for _ in range(FIXED_POINT_STEPS):  # the smallest fixed point, from below
            tpot, prompt, service = _service(t, np.minimum(1 + running, slots), out_mean, lam, in_mean)
            running = np.minimum(lam * service, slots)
        _, _, full = _service(t, slots, out_mean, lam, in_mean)
        offered = lam * full  # the slots' load at the full-batch service time
        if span_s is not None:  # a run that ends before its batch settles
            mean_run, end_run = run_batch(lambda b: _service(t, b, out_mean, lam, in_mean)[2], span_s, lam, slots)
            running = np.minimum(running, mean_run)
            offered = np.minimum(offered, end_run)  # the slots fill no further than the run's last batch
            tpot, prompt, service = _service(t, np.minimum(1 + running, slots), out_mean, lam, in_mean)
        batch = np.minimum(1 + running, slots)
        cs2 = _service_scv(tpot, prompt, load)
        p_slot, w_slot = mgc_wait(lam, offered / np.maximum(lam, 1e-300), cs2, slots, ca2)
        sigma = np.sqrt(LIFETIME_BATCH_VARIANCE * running)
        slot_wait = np.zeros_like(lam)
    step = _interp_rows(batch, t.concurrency, t.decode_step_s)
    # a prompt is prefilled on the one data-parallel rank that serves its request: that rank's share
    # of the batch and of the token budget, its cost per prompt token (the instance's spreads it
    # over every rank), its share of the arrivals
    ranks = t.data_parallel
    per_token = _interp_rows(batch, t.concurrency, t.prefill_s_per_token) * ranks
    alone = t.prefill_first > 0  # a prompt step of its own: the whole budget, priced as a lone prompt
    budget = t.token_budget / ranks
    free = np.where(alone, budget, np.maximum(budget - batch / ranks * t.tokens_per_step, 1.0))
    per_token = np.where(alone, t.lone_s_per_token, per_token)
    full_step = np.where(alone, 0.0, step) + free * per_token
    work = in_mean / free * full_step  # a prompt's share of its rank's steps, in seconds
    if load.arrival == "closed":  # a closed loop slows to what its slots or its prompt budget pass
        lam = np.minimum(running / cycle, ranks / work)
        if alone.any():  # prompt steps that pause the batch slow the loop they come from: the rate where
            lo, hi = np.zeros_like(lam), lam  # what the loop sends meets what it passes (decreasing in the rate)
            for _ in range(CLOSED_BISECTION_STEPS):
                mid = (lo + hi) / 2
                _, _, passing = _service(t, batch, out_mean, mid, in_mean)
                below = mid < np.minimum(running / (passing + t.request_overhead_s), ranks / work)
                lo, hi = np.where(below, mid, lo), np.where(below, hi, mid)
            # where the prompt budget still binds at ``hi`` the loop runs at that bound itself (rho_p = 1: the
            # closed loop's fixed wait, no queue term), which bisection from below only approaches
            _, _, passing = _service(t, batch, out_mean, hi, in_mean)
            lam = np.where(running / (passing + t.request_overhead_s) >= ranks / work, np.minimum(hi, ranks / work), lo)
            tpot, prompt, full = _service(t, batch, out_mean, lam, in_mean)
            cycle = full + t.request_overhead_s
        slot_wait = np.maximum(rate / lam - cycle, 0.0)  # clients beyond what passes wait their turn
    rho_p = lam / ranks * work
    with np.errstate(divide="ignore", invalid="ignore"):
        w_prompt = np.where(rho_p < 1, rho_p / (1 - rho_p) * work * (ca2 + load.input_tokens_scv) / 2, np.inf)
    if load.arrival == "closed":  # a saturated prompt budget's queue is the closed loop's fixed wait
        # (saturated where the loop runs at the budget's own rate: ``lam / ranks * work`` may round below 1)
        w_prompt = np.where((rho_p < 1) & (lam < ranks / work), w_prompt, 0.0)
        rho_p = np.minimum(rho_p, np.nextafter(1.0, 0.0))
    if span_s is not None and load.arrival != "closed":  # a run too short to settle
        w_slot = w_slot * settled_share(span_s, w_slot, lam * full / slots)
        w_prompt = w_prompt * settled_share(span_s, w_prompt, rho_p)
    busy, least, most = _step_busy(t, load, running, rate, lam, step, start)
    p_wait = 1 - (1 - p_slot) * (1 - np.minimum(rho_p, 1.0))
    utilisation = np.maximum(lam * full / slots, rho_p)
    closed = load.arrival == "closed"  # a closed loop slows to what it is served: full slots are not an overload
    stable = ((utilisation < 1) | closed) & np.isfinite(w_slot) & np.isfinite(w_prompt)
    mixed_sd = np.sqrt(np.where(alone, prompt_step_variance(tpot * t.tokens_per_step, lam / ranks, t.lone_fixed_s,
                                                             t.lone_slope_s_per_token, in_mean, load.input_tokens_scv)
                                / t.tokens_per_step,
                                _mixed_step_variance(t, load, lam / ranks, step, per_token, free, in_mean)))
    paused = tpot - _interp_rows(batch, t.concurrency, t.tpot_s)  # prompt steps in place of fused chunks
    at_batch = lambda z: _interp_rows(np.clip(batch + z * sigma, 1.0, slots), t.concurrency, t.tpot_s) + paused  # noqa: E731
    tpot_q = tuple(at_batch(NormalDist().inv_cdf(q)) + _over_lengths_quantile(load, q) * mixed_sd
                   for q in map(load.run_quantile_level, QUANTILES))
    return _State(running=running, served_per_s=lam, batch=batch, tpot_s=tpot, prefill_s=prompt,
                  prefill_slope_s=per_token * t.uncached_share,
                  base_s=t.request_overhead_s + slot_wait, busy=busy, residual_step_s=most,
                  residual_least_s=least,
                  p_wait=p_wait, mean_wait_s=w_slot + w_prompt, utilisation=utilisation, stable=stable,
                  tpot_quantiles_s=tpot_q, tpot_batch_sd_s=(at_batch(1.0) - at_batch(-1.0)) / 2, tpot_mixed_sd_s=mixed_sd,
                  start_queue_s=rate / ranks * work if start else None,
                  start_step_s=full_step if start else None, start_chunk_s=free * per_token if start else None,
                  start_steps=running / ranks * in_mean / free if start else None, prefill_first=alone,
                  start_tokens_per_step=t.tokens_per_step, start_admitted=running / rate if start else None)


def _step_busy(t: CurveTable, load: Load, running: np.ndarray, rate: np.ndarray, lam: np.ndarray,
               step: np.ndarray, start: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The chance an arrival finds a step under way on the rank that serves it, and the least and the
    most that is left of that step (uniform between). A Poisson arrival finds the ``n`` running in an M/M/∞
    count; on one of ``k`` independent ranks it waits only when its rank is busy: handed requests in
    turn, when one of its own earlier requests, ``k``, ``2k``, … arrivals back, still runs (for one
    service length: ``k`` arrivals within it), handed to the least-loaded rank only when every rank
    is busy, which needs ``k`` running (an upper bound); both ``P(N ≥ k)``, ``1 − e⁻ⁿ`` for one rank.
    A closed loop's client sends when its own request ends, at a step's end, and reaches the engine
    the request overhead ``h`` later: a step is under way when another client of its rank has a
    request in the engine (each is away ``h`` of its ``C/λ`` cycle, independently), and ``h mod d``
    of it is gone (none left at a whole number of steps). The start's requests find the engine idle."""
    ranks = t.data_parallel
    none = np.zeros_like(running)
    if start:
        return none, none, step
    if load.arrival != "closed":
        return poisson_at_least(running, ranks), none, step
    overhead = t.request_overhead_s
    others = np.maximum(rate / ranks - 1, 0.0)  # ``rate`` carries a replica's clients
    away = np.clip(overhead * lam / np.maximum(rate, 1e-300), 0.0, 1.0)
    gone = np.mod(overhead, np.where(step > 0, step, 1.0))
    left = np.where((step > 0) & (gone > 0), step - gone, 0.0)
    return np.where(left > 0, 1 - away**others, 0.0), left, left


def _mixed_step_variance(t: CurveTable, load: Load, lam: np.ndarray, step: np.ndarray, per_token: np.ndarray,
                         free: np.ndarray, prompt_tokens: np.ndarray) -> np.ndarray:
    """Variance of a request's TPOT from which of its steps carry another request's prompt chunk,
    per unit of ``1/(o − 1)``. A prompt of ``I`` tokens rides ``ceil(I / free)`` steps, each longer
    by its chunk × the cost per prompt token; a share ``f`` (chunks arriving per step) of steps is
    such a step, so over a request's ``(o − 1)/τ`` steps the count is binomial: variance
    ``f(1 − f) Δ² / (τ (o − 1))`` per token (``_over_lengths_quantile`` takes the ``1/(o − 1)`` over
    the output lengths)."""
    chunks = np.ceil(prompt_tokens / free)
    delta = prompt_tokens / chunks * per_token  # prefill first: a whole prompt step the sequences wait for
    f = np.clip(lam * chunks * (step + delta), 0.0, 1.0)
    return f * (1 - f) * delta**2 / t.tokens_per_step


def _over_lengths_quantile(load: Load, level: float) -> float:
    """The ``level`` quantile of ``Z/√(o − 1)``, ``Z`` standard normal and ``o`` an output length
    (``MIXED_STEP_NODES`` equally likely nodes of the load's lengths): the binomial count's spread
    is a scale mixture over lengths, whose tail a short output widens (a normal at the mean
    variance would understate it). Solved by bisection on ``mean_k Φ(x·√(o_k − 1)) = level``."""
    outputs = length_nodes(load.output_tokens, load.output_tokens_scv, MIXED_STEP_NODES, load.lengths)
    return _scale_mixture_quantile(tuple(np.sqrt(np.maximum(outputs - 1, 1.0)).tolist()), level)


@lru_cache(maxsize=256)
def _scale_mixture_quantile(inverse_scales: tuple[float, ...], level: float) -> float:
    phi = NormalDist().cdf
    lo, hi = -50.0, 50.0
    for _ in range(60):
        mid = (lo + hi) / 2
        if sum(phi(mid * r) for r in inverse_scales) / len(inverse_scales) < level:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def _service_scv(tpot: np.ndarray, prompt: np.ndarray, load: Load) -> np.ndarray:
    """SCV of a request's time in a slot from the spread of its output and prompt lengths."""
    mean = prompt + (load.output_tokens - 1) * tpot
    var = (tpot * load.output_tokens) ** 2 * load.output_tokens_scv + (prompt ** 2) * load.input_tokens_scv
    return np.where(mean > 0, var / np.maximum(mean, 1e-300) ** 2, 0.0)


def approximate_many(curves: CurveTable, load: Load, *, curve_index: np.ndarray, replicas: np.ndarray | int = 1,
                     request_rate_per_s: np.ndarray | float | None = None, slots: np.ndarray | None = None,
                     nodes: int = 16) -> TailArrays:
    """``approximate`` over many candidates at once. Candidate ``i`` runs ``replicas[i]`` replicas of
    curve row ``curve_index[i]``, with its running sequences capped at ``slots[i]`` (default the
    curve's), under ``load`` at ``request_rate_per_s[i]`` (default the load's; a closed loop's
    clients are the load's). ``nodes``: length nodes per state (fewer is faster, coarser)."""
    row = np.asarray(curve_index, dtype=np.int64)
    n = len(row)
    reps = np.broadcast_to(np.asarray(replicas, float), (n,))
    cap = curves.slots[row] if slots is None else np.minimum(np.broadcast_to(np.asarray(slots, float), (n,)), curves.slots[row])
    mean_rate = np.broadcast_to(np.asarray(load.request_rate_per_s if request_rate_per_s is None else request_rate_per_s,
                                           float), (n,))
    table = curves.take(row)
    if load.arrival == "closed":
        clients = np.full(n, float(load.clients)) / reps
        start = min(load.clients / load.closed_loop_requests, 1.0) if load.closed_loop_requests else 0.0
        states = [(1.0 - start, clients), (start, clients)] if start else [(1.0, clients)]
        solved = [_solve_state(table, load, clients, cap, start=i == 1) for i in range(len(states))]
    else:
        states = [(share, mean_rate * factor / reps) for share, factor in _state_factors(load)]
        span = load.open_loop_requests / np.maximum(mean_rate, 1e-300) if load.open_loop_requests else None
        solved = _in_spells(load, [_solve_state(table, load, rate, cap, span_s=span) for _, rate in states])
    weights = np.array([share for share, _ in states])
    return _assemble(solved, weights, load, mean_rate if load.arrival != "closed" else None, reps, nodes)


def _in_spells(load: Load, solved: list[_State]) -> list[_State]:
    """Bursty states' waits over spells of their mean length (``bursts.spell_waits``)."""
    stack = lambda name: np.stack([getattr(s, name) for s in solved], axis=1)  # noqa: E731
    p, w, ok = spell_waits(load, stack("p_wait"), stack("mean_wait_s"), stack("utilisation"), stack("stable"))
    return [replace(s, p_wait=p[:, i], mean_wait_s=w[:, i], stable=ok[:, i]) for i, s in enumerate(solved)]


def _state_factors(load: Load) -> list[tuple[float, float]]:
    mean = load.request_rate_per_s or 1.0
    return [(share, rate / mean) for share, rate in load.states()]


def _assemble(solved: list[_State], weights: np.ndarray, load: Load, mean_rate: np.ndarray | None,
              reps: np.ndarray, nodes: int) -> TailArrays:
    stack = lambda name: np.stack([getattr(s, name) for s in solved], axis=1)  # noqa: E731
    in_nodes = length_nodes(load.input_tokens, load.input_tokens_scv, nodes, load.lengths) - load.input_tokens
    out_nodes = length_nodes(load.output_tokens, load.output_tokens_scv, nodes, load.lengths) - 1
    tpot, prompt, slope, base = stack("tpot_s"), stack("prefill_s"), stack("prefill_slope_s"), stack("base_s")
    p_wait, mean_wait = stack("p_wait"), stack("mean_wait_s")
    residual = StepResidual(busy=stack("busy"), step_s=stack("residual_step_s"), least_s=stack("residual_least_s"))
    own = np.maximum(prompt[..., None] + slope[..., None] * in_nodes, 1e-9)
    ttft_base = base[..., None] + own
    e2e_base = base[..., None] + prompt[..., None] + tpot[..., None] * out_nodes
    cached = min(load.cached_first_requests / load.clients, 1.0) if load.arrival == "closed" else 0.0
    place = (np.arange(nodes) + 0.5) / nodes  # a start request's place in the start-up queue
    outputs = np.broadcast_to(out_nodes, e2e_base.shape).copy()
    for i, s in enumerate(solved):  # a closed loop's start: mean lengths, the start-up queue over nodes
        if s.start_queue_s is not None:  # the cached prompts go first, in the first step beside others' chunks
            queue = s.start_queue_s[:, None] * np.maximum(place - cached, 0.0)
            own = np.where(place < cached, s.start_step_s[:, None] if cached < 1 else 0.0, prompt[:, i, None])
            ttft_base[:, i] = base[:, i, None] + own + queue
            e2e_base[:, i] = base[:, i, None] + own + tpot[:, i, None] * (load.output_tokens - 1) + queue
            outputs[:, i] = load.output_tokens - 1
    # a request's own TPOT spread, its batch averaged over its own life (``T`` mean lives)
    life = np.maximum(outputs, 1.0) / max(load.output_tokens - 1, 1.0)
    averaged = 2 * (life - 1 + np.exp(-life)) / life**2 / LIFETIME_BATCH_VARIANCE
    e2e_sd = np.maximum(outputs, 0.0) * np.sqrt(stack("tpot_batch_sd_s")[..., None] ** 2 * averaged
                                                      + stack("tpot_mixed_sd_s")[..., None] ** 2 / np.maximum(outputs, 1.0))
    stable = np.all(stack("stable"), axis=1)
    result = {}
    for which, q in enumerate(QUANTILES):
        name, level = f"p{round(q * 100)}", load.run_quantile_level(q)
        result[f"ttft_{name}_s"] = sum_quantile(ttft_base, weights, p_wait, mean_wait, level, residual)
        result[f"e2e_{name}_s"] = sum_quantile(e2e_base + NormalDist().inv_cdf(level) * e2e_sd, weights, p_wait,
                                               mean_wait, level, residual)
        result[f"tpot_{name}_s"] = (_start_tpot_quantile(solved, weights, load, level, cached)
                                    if solved[-1].start_steps is not None else _tpot_quantile(solved, weights, which))
    for key in list(result):
        result[key] = np.where(stable, result[key], np.inf)
    mean_tpot = (tpot * weights).sum(axis=1)
    # a closed loop serves what it runs at: its clients over a cycle, their wait beyond the slots included
    served = mean_rate if mean_rate is not None else solved[0].served_per_s * reps
    return TailArrays(**result, utilisation=stack("utilisation").max(axis=1), stable=stable,
                      requests_per_s=np.asarray(served, float), output_tokens_per_s_per_user=1 / mean_tpot,
                      mean_running=(stack("running") * weights).sum(axis=1),
                      wait_probability=(p_wait * weights).sum(axis=1))


def _tpot_quantile(solved: list[_State], weights: np.ndarray, which: int) -> np.ndarray:
    """TPOT at quantile ``QUANTILES[which]`` of the batch a request averages over its life (normal,
    clipped to 1..slots); with bursty states the larger state's above the median, the
    request-weighted mean at it."""
    values = np.stack([s.tpot_quantiles_s[which] for s in solved], axis=1)
    return values.max(axis=1) if len(solved) > 1 and QUANTILES[which] > 0.5 else (values * weights).sum(axis=1)


def _start_tpot_quantile(solved: list[_State], weights: np.ndarray, load: Load, level: float,
                         cached: float) -> np.ndarray:
    """A stated closed loop's TPOT quantile, its start-up requests apart: the running batch is its
    clients' (no spread), each request's TPOT normal about the mean with the prompt-carrying steps'
    spread over ``√(o − 1)`` at ``MIXED_STEP_NODES`` output lengths ``o``. The steady loop charges each
    request its clients' prompts evenly, ``B·(o − 1)/(ō − 1)`` over its life, ``B = S·E`` the cost of
    one round of them: ``S`` steps full of prompt chunks, each adding ``E`` (the budget's prompt
    tokens at their cost). A request the clients send together at the start and admitted at once
    (weight ``min(C, slots)/N``), at place ``u`` of the start-up queue (the cached prompts first),
    instead decodes beside the prompts behind its own, ``(1 − max(u, cached))·S`` steps of ``E`` (an
    engine that fuses them: only its first ``(o − 1)/τ`` steps; one that runs prompts first: all of
    them, before its first decode step), and then sees only the next prompts of the clients whose
    first request ends before its own (shorter, or as long and ahead of it), ``B·F`` with ``F`` that
    share. Its TPOT differs from the steady one by the difference over ``o − 1``. The quantile of the
    mixture over 16 places and 16 lengths, by bisection."""
    steady, start = solved
    outputs = length_nodes(load.output_tokens, load.output_tokens_scv, MIXED_STEP_NODES, load.lengths)
    tokens = np.maximum(outputs - 1, 1.0)  # (k,)
    place = (np.arange(MIXED_STEP_NODES) + 0.5) / MIXED_STEP_NODES
    behind = (1 - np.maximum(place, cached))[None, :, None] * start.start_steps[:, None, None]  # (i, u, 1)
    steps = np.where(start.prefill_first[:, None, None] > 0, behind,
                     np.minimum(behind, tokens[None, None, :] / start.start_tokens_per_step[:, None, None]))
    # the others' next prompts it sees: those whose first request ends before its own (shorter, or as
    # long and ahead of it in the queue), where the steady loop charges its clients' prompts evenly
    shorter = (outputs[None, :] < outputs[:, None]).mean(axis=1)
    tied = (outputs[None, :] == outputs[:, None]).mean(axis=1)
    seen = shorter[None, :] + tied[None, :] * place[:, None] - tokens[None, :] / max(load.output_tokens - 1, 1.0)  # (u, k)
    burst = start.start_steps[:, None, None] * start.start_chunk_s[:, None, None]  # its clients' prompts, in seconds
    extra = (steps * start.start_chunk_s[:, None, None] + burst * seen[None]) / tokens[None, None, :]  # (i, u, k)
    means = [steady.tpot_s[:, None, None] + np.zeros((1, 1, len(tokens))), start.tpot_s[:, None, None] + extra]
    sds = [s.tpot_mixed_sd_s[:, None, None] / np.sqrt(tokens)[None, None, :] for s in solved]
    share = weights[1] * start.start_admitted  # those beyond the slots start later, as in the steady loop
    cdf = lambda x: sum(w * _PHI((x[:, None, None] - m) / np.maximum(sd, 1e-300)).mean(axis=(1, 2))  # noqa: E731
                        for w, m, sd in zip((1 - share, share), means, sds))
    lo = np.minimum(means[0].min(axis=(1, 2)), means[1].min(axis=(1, 2))) - 10 * sds[0].max(axis=(1, 2))
    hi = np.maximum(means[0].max(axis=(1, 2)), means[1].max(axis=(1, 2))) + 10 * sds[0].max(axis=(1, 2))
    for _ in range(START_BISECTION_STEPS):
        mid = (lo + hi) / 2
        below = cdf(mid) < level
        lo, hi = np.where(below, mid, lo), np.where(below, hi, mid)
    return hi


def approximate(curve: ServiceCurve, load: Load, replicas: int = 1) -> TailLatency:
    """p50/p95/p99 TTFT, TPOT and E2E of ``replicas`` copies of ``curve`` under ``load``."""
    return approximate_many(CurveTable.of([curve]), load, curve_index=np.zeros(1, np.int64),
                            replicas=replicas, nodes=64).row(0)
