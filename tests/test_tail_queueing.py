"""The tail-latency simulation against queueing theory, and the approximation's building blocks.

Reductions: a ServiceCurve whose decode step takes ``STEP_S`` whatever the batch (no batching
speed-up: each slot is an independent server), whose prompts cost nothing, fed a trace of Poisson
arrivals whose output lengths are 1 + geometric. A request's service is then (output) steps of
``STEP_S``: exponential to within 1/mean, so ``c`` slots are an M/M/c queue (``c = 1``: M/M/1).
Tolerances are four standard errors from batch means (20 batches of the run itself), fixed seeds.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from inferplan.search.arrivals import Load
from inferplan.search.mgc import erlang_c, mgc_wait, mgc_wait_quantile
from inferplan.search.queueing import approximate
from inferplan.search.service import ServiceCurve
from inferplan.search.simulate import simulate_requests
from inferplan.search.trace import Trace

STEP_S = 1e-4
MEAN_STEPS = 10_000  # mean service 1 s
REQUESTS = 60_000
WARMUP = 2_000
BATCHES = 20


def _independent_slots(slots: int) -> ServiceCurve:
    flat = (STEP_S, STEP_S)
    return ServiceCurve(slots=slots, concurrency=(1, max(slots, 2)), tpot_s=flat, decode_step_s=flat,
                        prefill_s_per_token=(0.0, 0.0), ttft_s=(0.0, 0.0), prompt_tokens=(1, 2), prompt_s=(0.0, 0.0),
                        prefill_s=0.0, request_overhead_s=0.0, token_budget=10**6, tokens_per_step=1.0,
                        input_tokens=1, output_tokens=MEAN_STEPS)


def _poisson_trace(rate: float, seed: int) -> Load:
    rng = np.random.default_rng(seed)
    times = np.cumsum(rng.exponential(1 / rate, REQUESTS))
    outputs = 1 + rng.geometric(1 / MEAN_STEPS, REQUESTS)
    return Load.from_trace(Trace(arrival_s=tuple(times - times[0]), input_tokens=(1,) * REQUESTS,
                                 output_tokens=tuple(int(x) for x in outputs)))


def _batch_mean(values: np.ndarray) -> tuple[float, float]:
    """Mean and its standard error from batch means (the run's own serial correlation)."""
    means = np.array([b.mean() for b in np.array_split(values[WARMUP:], BATCHES)])
    return float(means.mean()), float(means.std(ddof=1) / math.sqrt(BATCHES))


def _run(slots: int, rate: float, seed: int):
    load = _poisson_trace(rate, seed)
    return simulate_requests(_independent_slots(slots), load, requests=REQUESTS, seed=seed)


def test_the_simulation_is_an_mm1_queue_in_mean_and_tail_of_the_sojourn():
    lam, mu = 0.7, 1 / (MEAN_STEPS * STEP_S)
    t = _run(1, lam, seed=3)
    sojourn = t.e2e_s
    mean, se = _batch_mean(sojourn)
    assert se < 0.05 * (1 / (mu - lam))  # the check is sharp enough to mean something
    assert abs(mean - 1 / (mu - lam)) < 4 * se
    for q in (0.95, 0.99):  # sojourn is exponential with rate mu - lam
        t_q = -math.log(1 - q) / (mu - lam)
        share, se_share = _batch_mean((sojourn > t_q).astype(float))
        assert abs(share - (1 - q)) < 4 * se_share, (q, share)
    waited, se_w = _batch_mean((t.wait_s > 2 * STEP_S).astype(float))
    assert abs(waited - lam / mu) < 4 * se_w  # P(wait) = rho


@pytest.mark.parametrize("slots, rho", [(4, 0.7), (8, 0.85)])
def test_the_simulation_matches_erlang_c_with_independent_slots(slots, rho):
    mu = 1 / (MEAN_STEPS * STEP_S)
    lam = rho * slots * mu
    t = _run(slots, lam, seed=slots)
    a = lam / mu
    top = a**slots / math.factorial(slots) / (1 - rho)
    c_theory = top / (sum(a**k / math.factorial(k) for k in range(slots)) + top)
    waited, se_w = _batch_mean((t.wait_s > 2 * STEP_S).astype(float))
    assert abs(waited - c_theory) < 4 * se_w, (waited, c_theory, se_w)
    wq_theory = c_theory / (slots * mu - lam)
    wq, se = _batch_mean(t.wait_s)
    assert se < 0.1 * wq_theory
    assert abs(wq - wq_theory) < 4 * se, (wq, wq_theory, se)


def test_erlang_c_and_allen_cunneen_reduce_to_the_mmc_formulas():
    for c, a in [(1, 0.5), (4, 2.8), (16, 12.0), (64, 60.0)]:
        top = a**c / math.factorial(c) * c / (c - a)
        exact = top / (sum(a**k / math.factorial(k) for k in range(c)) + top)
        assert erlang_c(np.array([c]), np.array([a]))[0] == pytest.approx(exact, rel=1e-9)
        p, mean = mgc_wait(a, 1.0, 1.0, c)  # mu = 1: Wq = C / (c - a) when both SCVs are 1
        assert mean == pytest.approx(exact / (c - a), rel=1e-9)
        assert mgc_wait_quantile(a, 1.0, 1.0, c, 0.99) == pytest.approx(
            max(math.log(exact / 0.01), 0) / (c - a), rel=1e-9)  # M/M/c: P(W > t) = C e^{-(c - a) t}
    # above the exact range Halfin-Whitt's limit stays near the exact value (c = 100, rho = 0.9)
    c, a = 100, 90.0
    log_terms = [k * math.log(a) - math.lgamma(k + 1) for k in range(c + 1)]
    top = math.exp(log_terms[c]) * c / (c - a)
    exact = top / (sum(math.exp(x) for x in log_terms[:c]) + top)
    assert erlang_c(np.array([c]), np.array([a]))[0] == pytest.approx(exact, rel=0.1)
    assert erlang_c(np.array([4.0]), np.array([4.0]))[0] == 1.0  # overloaded: every arrival waits


def test_the_approximation_gives_the_mmc_wait_on_the_same_reduction():
    curve = _independent_slots(4)
    load = Load(request_rate_per_s=2.8, input_tokens=1, output_tokens=MEAN_STEPS, output_tokens_scv=1.0)
    tail = approximate(curve, load)
    top = 2.8**4 / math.factorial(4) / 0.3
    c_theory = top / (sum(2.8**k / math.factorial(k) for k in range(4)) + top)
    assert tail.wait_probability == pytest.approx(c_theory, rel=0.01)
    assert tail.stable and tail.utilisation == pytest.approx(0.7, rel=0.01)
    overloaded = approximate(curve, load.model_copy(update={"request_rate_per_s": 4.4}))
    assert not overloaded.stable and math.isinf(overloaded.ttft_p99_s)


def test_the_exact_one_state_quantile_agrees_with_bisection():
    from inferplan.search import wait_quantiles

    rng = np.random.default_rng(1)
    base = np.sort(rng.uniform(0, 1, (500, 1, 16)), axis=2)
    p_wait = rng.uniform(0, 1, (500, 1))
    p_wait[:50] = 0.0
    mean_wait = rng.uniform(0, 3, (500, 1)) * p_wait
    for q in (0.5, 0.95, 0.99):
        exact = wait_quantiles._one_state_quantile(base[:, 0, :], p_wait[:, 0], mean_wait[:, 0], q)
        bisected = wait_quantiles._bisected_quantile(base, np.array([1.0]), p_wait, mean_wait, q)
        assert np.allclose(exact, bisected, atol=1e-4)


def test_a_quantile_reached_only_at_the_next_node_is_that_node():
    # q·K whole (a median over an even number of nodes) and a wait short beside the nodes' spacing: the
    # CDF just before the second node rounds to q, where the root's logarithm divides by zero
    from inferplan.search.wait_quantiles import _one_state_quantile

    got = _one_state_quantile(np.array([[0.0, 1.0]]), np.array([0.2]), np.array([0.2 * 1e-3]), 0.5)
    assert got[0] == pytest.approx(1.0)


def test_approximate_many_rows_are_approximate_of_each_candidate():
    from inferplan.search.queueing import approximate_many
    from inferplan.search.tail_types import CurveTable

    curves = [_independent_slots(4), _independent_slots(8)]
    load = Load(request_rate_per_s=2.0, input_tokens=1, output_tokens=MEAN_STEPS, output_tokens_scv=1.0)
    many = approximate_many(CurveTable.of(curves), load, curve_index=np.array([0, 1, 1]), replicas=np.array([1, 1, 2]),
                            request_rate_per_s=np.array([2.0, 5.0, 5.0]), nodes=64)
    singles = [approximate(curves[0], load), approximate(curves[1], load.model_copy(update={"request_rate_per_s": 5.0})),
               approximate(curves[1], load.model_copy(update={"request_rate_per_s": 5.0}), replicas=2)]
    for i, one in enumerate(singles):
        assert many.row(i) == one


def _start_up_curve() -> ServiceCurve:
    step = (0.02, 0.03)
    return ServiceCurve(slots=64, concurrency=(1, 64), tpot_s=step, decode_step_s=step,
                        prefill_s_per_token=(1e-4, 1e-4), ttft_s=(0.05, 0.05), prompt_tokens=(1, 2048),
                        prompt_s=(0.02, 0.2), prefill_s=0.05, request_overhead_s=0.0, token_budget=2048,
                        tokens_per_step=1.0, input_tokens=200, output_tokens=100)


def test_a_closed_loop_start_queues_its_prompts_as_the_simulation_does():
    from inferplan.search.simulate import simulate

    curve = _start_up_curve()
    steady = Load(arrival="closed", clients=64, input_tokens=200, output_tokens=100)
    at_once = steady.model_copy(update={"closed_loop_requests": 64})  # every request in the start-up burst
    sim = simulate(curve, at_once, requests=64, seed=0)
    approx = approximate(curve, at_once)
    assert approximate(curve, steady).ttft_p99_s < 0.5 < sim.ttft_p99_s  # the burst is what makes the tail
    for q in ("p50", "p99"):
        assert getattr(approx, f"ttft_{q}_s") == pytest.approx(getattr(sim, f"ttft_{q}_s"), rel=0.25)


def test_cached_first_requests_skip_the_start_up_queue_in_both_models():
    from inferplan.search.simulate import simulate

    curve = _start_up_curve()
    at_once = Load(arrival="closed", clients=64, closed_loop_requests=64, input_tokens=200, output_tokens=100)
    half = at_once.model_copy(update={"cached_first_requests": 32})
    cold, warm = simulate(curve, at_once, requests=64), simulate(curve, half, requests=64)
    assert warm.ttft_p99_s < 0.6 * cold.ttft_p99_s  # half the prompts to prefill: about half the queue
    assert warm.ttft_p50_s < 0.5 * cold.ttft_p50_s  # the cached half rides the first steps
    approx = approximate(curve, half)
    for q in ("p50", "p99"):
        assert getattr(approx, f"ttft_{q}_s") == pytest.approx(getattr(warm, f"ttft_{q}_s"), rel=0.3, abs=0.03)


def _prefill_curve(uncached_share: float = 1.0) -> ServiceCurve:
    """Prompts cost 0.1 ms a token in a step of 20–60 ms; 128 slots; a 4,096-token step budget; a
    1,000-token prompt's TTFT is its uncached tokens' cost in one step."""
    ttft = 0.02 + 1000 * uncached_share * 1e-4
    return ServiceCurve(slots=128, concurrency=(1, 128), tpot_s=(0.02, 0.06), decode_step_s=(0.02, 0.06),
                        prefill_s_per_token=(1e-4, 1e-4), ttft_s=(ttft, ttft), prompt_tokens=(1, 4096),
                        prompt_s=(0.02, 0.43), prefill_s=0.1, request_overhead_s=0.0, token_budget=4096,
                        tokens_per_step=1.0, input_tokens=1000, output_tokens=200, uncached_share=uncached_share)


def test_a_prompt_cache_shortens_the_spread_of_prompts_in_both_models():
    from inferplan.search.simulate import simulate

    load = Load(request_rate_per_s=2.0, input_tokens=1000, output_tokens=200, input_tokens_scv=1.0)
    curve = _prefill_curve(uncached_share=0.1)  # nine prompt tokens in ten come from the cache
    sim, approx = simulate(curve, load, requests=4000, seed=1), approximate(curve, load)
    assert approx.ttft_p99_s == pytest.approx(sim.ttft_p99_s, rel=0.3)


def test_a_short_poisson_run_never_reaches_the_steady_state_batch():
    from inferplan.search.simulate import simulate

    curve = _prefill_curve()
    steady = Load(request_rate_per_s=4.0, input_tokens=100, output_tokens=400)  # settles near 65 running
    short = steady.model_copy(update={"open_loop_requests": 40})  # 10 s of arrivals; a request lasts 8–24 s
    sims = [simulate(curve, short, requests=40, seed=s) for s in range(40)]
    run, settled = approximate(curve, short), approximate(curve, steady)
    assert run.tpot_p50_s < 0.85 * settled.tpot_p50_s and run.ttft_p99_s <= settled.ttft_p99_s
    assert run.tpot_p50_s == pytest.approx(float(np.mean([r.tpot_p50_s for r in sims])), rel=0.15)


def test_a_run_split_over_replicas_is_each_replicas_share_of_it():
    curve = _prefill_curve()
    one = Load(request_rate_per_s=4.0, input_tokens=100, output_tokens=400, open_loop_requests=40)
    two = one.model_copy(update={"request_rate_per_s": 8.0, "open_loop_requests": 80})
    assert approximate(curve, two, replicas=2).tpot_p50_s == pytest.approx(approximate(curve, one).tpot_p50_s, rel=1e-9)


def test_a_short_run_reaches_the_mean_of_reflected_brownian_motion_started_empty():
    """``settled_share`` against the supremum form of the same process, computed independently:
    started empty, reflected Brownian motion with drift −δ and variance σ² at time t has the law of
    the running maximum M_t, P(M_t > y) = Φ̄((y + δt)/(σ√t)) + e^{−2δy/σ²}·Φ̄((y − δt)/(σ√t)); the
    share is E[M_t] averaged over t in [0, span], over the steady mean σ²/(2δ)."""
    from statistics import NormalDist

    from inferplan.search.transient import settled_share

    tail = lambda x: 1 - NormalDist().cdf(x)  # noqa: E731
    w, rho = 2.0, 0.9  # δ = 0.1, σ² = 2wδ = 0.4
    delta, var = 1 - rho, 2 * w * (1 - rho)
    for span in (5.0, 40.0, 400.0):
        times = np.linspace(span / 200, span, 200)
        ys = np.linspace(0, 40 * w, 2001)
        means = [np.trapezoid([tail((y + delta * t) / math.sqrt(var * t))
                               + math.exp(-2 * delta * y / var) * tail((y - delta * t) / math.sqrt(var * t)) for y in ys], ys)
                 for t in times]
        expected = np.trapezoid(np.concatenate([[0.0], means]), np.concatenate([[0.0], times])) / span / w
        assert settled_share(np.array([span]), np.array([w]), np.array([rho]))[0] == pytest.approx(expected, rel=0.01)
    assert settled_share(np.array([1.0]), np.array([np.inf]), np.array([1.2]))[0] == 1.0  # unstable stays so


def test_the_mixed_step_spread_is_a_scale_mixture_over_output_lengths():
    """Z/√(o − 1) over the load's output lengths: at fixed lengths a normal quantile scaled by
    1/√(o − 1); with uniform lengths its 99th percentile lies above the normal at the mean
    variance, as a Monte Carlo draw of the same mixture says."""
    from statistics import NormalDist

    from inferplan.search.arrivals import length_nodes
    from inferplan.search.queueing import MIXED_STEP_NODES, _over_lengths_quantile

    fixed = Load(request_rate_per_s=1.0, output_tokens=101)
    assert _over_lengths_quantile(fixed, 0.99) == pytest.approx(NormalDist().inv_cdf(0.99) / 10, rel=1e-9)
    spread = Load(request_rate_per_s=1.0, output_tokens=512, output_tokens_scv=1 / 3, lengths="uniform")
    nodes = length_nodes(512, 1 / 3, MIXED_STEP_NODES, "uniform")
    rng = np.random.default_rng(3)
    draws = rng.standard_normal(400_000) / np.sqrt(np.maximum(rng.choice(nodes, 400_000) - 1, 1))
    mixture = _over_lengths_quantile(spread, 0.99)
    assert mixture == pytest.approx(np.quantile(draws, 0.99), rel=0.02)
    assert mixture > NormalDist().inv_cdf(0.99) * math.sqrt(np.mean(1 / (nodes - 1)))


@pytest.mark.parametrize("utilisation", [0.3, 0.6])
def test_the_e2e_tail_carries_each_requests_own_tpot_spread(catalog, utilisation):
    """Llama-3.1-8B on an H100, every request 1,024 + 256 tokens under Poisson arrivals: the E2E p95
    was TTFT p95 + 255 × the mean TPOT, 13 % and 20 % under the simulation at 30 % and 60 % load;
    with each request's TPOT spread at the quantile's level it is within 10 %."""
    from inferplan.inputs.deployment import Deployment
    from inferplan.inputs.workload import Workload
    from inferplan.search.service import service_curve
    from inferplan.search.simulate import simulate

    curve = service_curve(Deployment(model="llama-3.1-8b", gpu="H100"), Workload(input_len=1024, output_len=256), catalog)
    unit = approximate(curve, Load(request_rate_per_s=1.0, input_tokens=1024, output_tokens=256)).utilisation
    load = Load(request_rate_per_s=utilisation / unit, input_tokens=1024, output_tokens=256)
    a, s = approximate(curve, load), simulate(curve, load, requests=20_000, seed=1)
    assert a.e2e_p95_s > a.ttft_p95_s + 255 / a.output_tokens_per_s_per_user
    assert a.e2e_p95_s == pytest.approx(s.e2e_p95_s, rel=0.10)


def test_a_run_of_hours_settles_at_its_rate():
    """20,000 requests at 0.064/s (87 hours) into two slots of a 6.4-7.6 s service: the run's batch
    is the steady one, lam × service ≈ 0.44. Steps of the whole run / 64 (over 4,900 s) once
    overshot the slots and emptied them in turn, so the run ended at no batch and the approximation
    dropped the wait for a slot (TTFT p95 117 ms where the simulation gives 2.1 s)."""
    from inferplan.search.transient import run_batch

    service = lambda b: 6.4 + 1.2 * (np.asarray(b) - 1)  # noqa: E731
    lam, slots = np.array([0.0639]), np.array([2.0])
    mean_run, end = run_batch(service, np.array([20_000 / 0.0639]), lam, slots)
    steady = 0.0639 * service(1.44)
    assert mean_run[0] == pytest.approx(steady, rel=0.02) and end[0] == pytest.approx(steady, rel=0.02)


def _free_prompts() -> ServiceCurve:
    """A prefill instance whose prompts take no time: its pool only passes requests on."""
    zero = (0.0, 0.0)
    return ServiceCurve(slots=10**6, concurrency=(1, 2), tpot_s=zero, decode_step_s=zero, prefill_s_per_token=zero,
                        ttft_s=zero, prompt_tokens=(1, 2), prompt_s=zero, prefill_s=0.0, request_overhead_s=0.0,
                        token_budget=10**6, tokens_per_step=1.0, input_tokens=1, output_tokens=1)


def test_separate_pools_with_free_prompts_are_the_decode_pools_erlang_c_queue():
    """Prompts that cost nothing and a hand-over of no time: the decode pool's ``c`` independent
    slots are an M/M/c queue, so the mean sojourn is Erlang C's (mean wait + service)."""
    from inferplan.search.simulate_pools import simulate_pools_requests

    slots, rho = 4, 0.8
    mu = 1 / (MEAN_STEPS * STEP_S)
    lam = rho * slots * mu
    load = _poisson_trace(lam, seed=11)
    t = simulate_pools_requests(_free_prompts(), _independent_slots(slots), load, requests=REQUESTS,
                                prefill_instances=1, decode_instances=1, transfer_s=0.0, seed=11)
    mean, se = _batch_mean(t.e2e_s)
    wait = erlang_c(slots, lam / mu) / (slots * mu - lam)
    assert se < 0.05 * (wait + 1 / mu)
    assert abs(mean - (wait + 1 / mu)) < 4 * se


def test_separate_pools_at_a_trickle_add_the_prompt_and_the_hand_over():
    """One request at a time: TTFT is the request overhead, the lone prompt on the prefill curve,
    the KV hand-over and the one-token step that places the request on a decode instance (a lone
    prompt of one token on the decode curve); TPOT is one decode step."""
    from inferplan.search.simulate_pools import simulate_pools_requests

    prefill = ServiceCurve(slots=64, concurrency=(1, 2), tpot_s=(0.01, 0.01), decode_step_s=(0.01, 0.01),
                           prefill_s_per_token=(1e-4, 1e-4), ttft_s=(0.2, 0.2), prompt_tokens=(1, 2048),
                           prompt_s=(0.001, 0.2048), prefill_s=0.1, request_overhead_s=0.005, token_budget=4096,
                           tokens_per_step=1.0, input_tokens=1000, output_tokens=100)
    decode = _independent_slots(8)
    times = tuple(float(i) * 1000 for i in range(50))
    load = Load.from_trace(Trace(arrival_s=times, input_tokens=(1000,) * 50, output_tokens=(101,) * 50))
    t = simulate_pools_requests(prefill, decode, load, requests=50, prefill_instances=2, decode_instances=3,
                                transfer_s=0.03)
    prompt = float(np.interp(1000, (1, 2048), (0.001, 0.2048)))
    assert t.ttft_s == pytest.approx(np.full(50, 0.005 + prompt + 0.03 + decode.lone_prompt_s(1)), rel=1e-9)
    assert t.tpot_s == pytest.approx(np.full(50, STEP_S), rel=1e-9)
