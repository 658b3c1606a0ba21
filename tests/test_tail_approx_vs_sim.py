"""The approximation's TPOT against the simulation, the model's own reference, on cases where the
two are built to agree: an engine that runs prompts first (its decode paused for lone prompt
steps) under Poisson arrivals and in a closed loop, and a stated closed loop whose start-up
requests decode beside the prompts sent with theirs. Small simulations (2,000 requests, fixed seeds, averaged over seeds); the bounds
are the seed-to-seed spread of the simulated percentile and a few per cent of model slack."""

from __future__ import annotations

import statistics

import pytest

from inferplan.inputs.deployment import Deployment
from inferplan.inputs.workload import Workload
from inferplan.search.arrivals import Load
from inferplan.search.queueing import approximate
from inferplan.search.service import service_curve
from inferplan.search.simulate import simulate

REQUESTS = 2_000
SEEDS = (0, 1, 2)
UNIFORM = dict(input_tokens_scv=1 / 3, output_tokens_scv=1 / 3, lengths="uniform")  # SGLang's random dataset


def _both(deployment: Deployment, input_tokens: int, output_tokens: int, catalog, **load):
    curve = service_curve(deployment, Workload(input_len=input_tokens, output_len=output_tokens), catalog)
    if "load_share" in load:  # Poisson at a share of the full batch's request rate
        full = curve.prefill_s + (output_tokens - 1) * curve.tpot_at(curve.slots)
        load = dict(arrival="poisson", request_rate_per_s=load.pop("load_share") * curve.slots / full,
                    open_loop_requests=REQUESTS)
    shaped = Load(input_tokens=input_tokens, output_tokens=output_tokens, **UNIFORM, **load)
    sims = [simulate(curve, shaped, requests=REQUESTS, seed=s) for s in SEEDS]
    return approximate(curve, shaped), sims


def _close(approx, sims, metric: str, within: float) -> None:
    sim = statistics.fmean(getattr(s, metric) for s in sims)
    assert getattr(approx, metric) / sim - 1 == pytest.approx(0, abs=within), (metric, getattr(approx, metric), sim)


def test_prefill_first_tpot_counts_the_prompt_steps_that_pause_decode(catalog):
    # qwen3-30b-a3b on one H100 under SGLang: a lone prompt step has a large fixed cost (the experts'
    # weights read once per step), which every arrival's step adds to the running sequences' TPOT
    approx, sims = _both(Deployment(model="qwen3-30b-a3b", gpu="H100", quantization="fp8", engine="sglang"), 256, 512,
                         catalog, load_share=0.6)
    _close(approx, sims, "tpot_p50_s", 0.06)
    _close(approx, sims, "tpot_p99_s", 0.08)


def test_prefill_first_closed_loop_tpot_tracks_the_simulation(catalog):
    # 128 clients of 1k/1k: each client's next prompt pauses the other 127 for a lone prompt step
    approx, sims = _both(Deployment(model="qwen3-30b-a3b", gpu="H100", quantization="fp8", engine="sglang"), 1024, 1024,
                         catalog, arrival="closed", clients=128, closed_loop_requests=REQUESTS)
    _close(approx, sims, "tpot_p50_s", 0.03)
    _close(approx, sims, "tpot_p99_s", 0.05)


def test_closed_loop_start_up_widens_the_tpot_tail(catalog):
    # 256 clients of 1k/1k on one H100 (236 slots) under vLLM: the requests sent together at the start
    # decode beside the prompts queued behind theirs, an eighth of the run, the simulated p99's tail
    approx, sims = _both(Deployment(model="llama-3.1-8b", gpu="H100", engine="vllm"), 1024, 1024, catalog,
                         arrival="closed", clients=256, closed_loop_requests=REQUESTS)
    _close(approx, sims, "tpot_p50_s", 0.03)
    _close(approx, sims, "tpot_p99_s", 0.12)


@pytest.mark.parametrize("clients, input_tokens, output_tokens", [(64, 30_000, 2), (200, 2_000, 1)])
def test_prefill_first_closed_loop_bound_by_its_prompts_waits_only_its_turn(catalog, clients, input_tokens, output_tokens):
    # long prompts, one or two new tokens: the loop runs at what its prompt budget passes (utilisation 1),
    # so a client's wait is its turn behind the others' prompts, not an open queue's 1/(1 − ρ) near ρ = 1
    approx, sims = _both(Deployment(model="qwen3-8b", gpu="H100", engine="sglang"), input_tokens, output_tokens,
                         catalog, arrival="closed", clients=clients, closed_loop_requests=500)
    sim = statistics.fmean(s.ttft_p50_s for s in sims)
    assert 0.5 < approx.ttft_p50_s / sim < 2, (approx.ttft_p50_s, sim)
