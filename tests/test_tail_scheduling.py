"""How an engine's scheduler places waiting prompts (search/data/scheduling.yaml), in the simulation,
the approximation and the service curve; and the run settings a latency point states."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from inferplan.catalog.loader import load_catalog
from inferplan.search.arrivals import Load
from inferplan.search.queueing import approximate
from inferplan.search.scheduling import scheduling
from inferplan.search.service import ServiceCurve, service_curve
from inferplan.search.simulate import simulate, simulate_requests
from inferplan.search.trace import Trace
from inferplan.validation.latency import _deployment, _workload

STEP_S = 0.02  # a decode step at any batch
PER_TOKEN_S = 1e-4  # a prompt token fused into a decode step
LONE_S = (0.01, 0.01 + 4096 * 5e-5)  # a prompt step alone: 10 ms plus 50 µs a token


def _curve(prefill_first: bool) -> ServiceCurve:
    return ServiceCurve(slots=64, concurrency=(1, 64), tpot_s=(STEP_S, STEP_S), decode_step_s=(STEP_S, STEP_S),
                        prefill_s_per_token=(PER_TOKEN_S, PER_TOKEN_S), ttft_s=(0.05, 0.05), prompt_tokens=(1, 4096),
                        prompt_s=LONE_S, prefill_s=0.035, request_overhead_s=0.0, token_budget=4096,
                        tokens_per_step=1.0, input_tokens=500, output_tokens=200, prefill_first=prefill_first)


def _two_requests(prefill_first: bool):
    """One request decoding 100 tokens from t = 0; a second, of a 1,000-token prompt, sent at 0.5 s."""
    trace = Trace(arrival_s=(0.0, 0.5), input_tokens=(1, 1000), output_tokens=(101, 2))
    return simulate_requests(_curve(prefill_first), Load.from_trace(trace), requests=2)


def test_a_prefill_first_engine_pauses_the_running_sequences_for_a_prompt_step_alone():
    mixed, first = _two_requests(False), _two_requests(True)
    lone_1000 = float(np.interp(1000, (1, 4096), LONE_S))
    step_ends = LONE_S[0] + STEP_S * 25  # the first request's one-token prompt, then decode steps: one ends at 0.51 s
    # the newcomer: its prompt runs alone after the step under way, priced as a lone prompt
    assert first.first_token_s[1] == pytest.approx(step_ends + lone_1000)
    # fused (vLLM): its prompt rides a decode step, which it lengthens by its tokens
    assert mixed.first_token_s[1] == pytest.approx(step_ends + STEP_S + 1000 * PER_TOKEN_S)
    # the running request waits the prompt step out instead of advancing in it
    assert first.finish_s[0] - mixed.finish_s[0] == pytest.approx(lone_1000 - 1000 * PER_TOKEN_S, abs=1e-9)


def test_the_approximation_follows_a_prefill_first_simulation():
    load = Load(request_rate_per_s=3.0, input_tokens=500, output_tokens=200, input_tokens_scv=1 / 3,
                output_tokens_scv=1 / 3)
    curve = _curve(True)
    sim, approx = simulate(curve, load, requests=6000, seed=2), approximate(curve, load)
    for metric in ("ttft_p50_s", "ttft_p99_s", "tpot_p50_s", "tpot_p99_s"):
        assert getattr(approx, metric) == pytest.approx(getattr(sim, metric), rel=0.3), metric


def test_sglang_runs_prompts_first_and_vllm_fuses_them_each_with_a_source():
    rules = scheduling()
    assert rules.prefill_first("sglang") and not rules.prefill_first("vllm")
    engines = {e.id for e in load_catalog().engines}
    assert {e.engine for e in rules.engines} <= engines


@pytest.fixture(scope="module")
def points():
    catalog = load_catalog()
    return catalog, {p.id: p for p in catalog.latency_points}


def test_a_curve_carries_its_engines_policy_and_lone_steps_up_to_the_budget(points):
    catalog, by_id = points
    p = by_id["l-sglcb-q3-235b-b200-1k1k-c16"]
    curve = service_curve(_deployment(p, catalog), _workload(p), catalog, use_profiles=False)
    assert curve.prefill_first
    top, budget = curve.prompt_tokens[-1], curve.token_budget
    assert top == round(p.input_tokens) + round(p.output_tokens) - 1 < budget  # sampled up to the context
    # a step of many prompts pays the step's fixed cost once: cheaper per token than the longest sampled prompt
    assert curve.lone_prompt_s(budget) / budget < curve.prompt_s[-1] / top
    vllm = by_id["l-llmk8s-l33-a100-tp8-qps16"]
    assert not service_curve(_deployment(vllm, catalog), _workload(vllm), catalog, use_profiles=False).prefill_first


def test_a_runs_stated_step_budget_reaches_the_curve(points):
    catalog, by_id = points
    p = by_id["l-vrecipes-l33-mi355x-fp8-c64"]
    assert p.max_num_batched_tokens == 32768
    curve = service_curve(_deployment(p, catalog), _workload(p), catalog, use_profiles=False)
    assert curve.token_budget == 32768


def test_a_lone_step_past_the_longest_sample_pays_the_fixed_cost_once():
    curve = dataclasses.replace(_curve(False), prompt_tokens=(1, 100, 1000), prompt_s=(0.01, 0.02, 0.11))
    assert curve.lone_prompt_s(1000) == pytest.approx(0.11)
    assert curve.lone_prompt_s(3000) == pytest.approx(0.11 + 2000 * 1e-4)  # the last interval's 0.1 ms a token


def test_a_prefill_first_start_up_burst_queues_alike_in_both_models():
    curve = _curve(True)
    burst = Load(arrival="closed", clients=64, closed_loop_requests=64, input_tokens=500, output_tokens=200)
    sim, approx = simulate(curve, burst, requests=64, seed=0), approximate(curve, burst)
    # 64 prompts of 500 tokens in steps of 4,096 alone: about eight steps of 215 ms before the last first token
    assert sim.ttft_p99_s == pytest.approx(8 * curve.lone_prompt_s(4096), rel=0.15)
    for q in ("p50", "p99"):
        assert getattr(approx, f"ttft_{q}_s") == pytest.approx(getattr(sim, f"ttft_{q}_s"), rel=0.25)


def test_a_closed_loop_with_as_many_clients_as_slots_is_not_called_unstable():
    for first in (False, True):
        for clients in (64, 200):  # 64 slots: the loop runs full, its rate what the slots serve
            load = Load(arrival="closed", clients=clients, input_tokens=500, output_tokens=200)
            result = approximate(_curve(first), load)
            assert result.stable and np.isfinite(result.ttft_p99_s), (first, clients)
