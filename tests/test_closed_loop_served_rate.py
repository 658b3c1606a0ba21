"""A closed loop's approximate ``requests_per_s`` is the rate the loop runs at: its clients over one
cycle, the wait of the clients beyond the slots included, as the simulation serves them. Loops with
more clients than slots (on vLLM and SGLang, prompt-bound and decode-bound), 2,000 requests, the
simulated rate averaged over seeds; the bound is a few per cent of model slack."""

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


@pytest.mark.parametrize(("model", "gpu", "engine", "clients", "input_tokens", "output_tokens"), [
    ("qwen3-32b", "h100-sxm", "vllm", 64, 8000, 200),  # 6 slots: 58 clients wait their turn
    ("llama-3.1-8b", "l4", "vllm", 48, 4000, 300),  # 11 slots
    ("qwen3-8b", "h100-sxm", "sglang", 64, 30000, 2),  # 12 slots, prompts run first: the prompt budget binds
])
def test_a_closed_loop_serves_its_clients_over_one_cycle(catalog, model, gpu, engine, clients, input_tokens,
                                                         output_tokens):
    curve = service_curve(Deployment(model=model, gpu=gpu, engine=engine),
                          Workload(input_len=input_tokens, output_len=output_tokens), catalog)
    load = Load(arrival="closed", clients=clients, input_tokens=input_tokens, output_tokens=output_tokens,
                closed_loop_requests=REQUESTS)
    assert curve.slots < clients
    approx = approximate(curve, load)
    served = statistics.fmean(simulate(curve, load, requests=REQUESTS, seed=s).requests_per_s for s in SEEDS)
    assert approx.requests_per_s / served - 1 == pytest.approx(0, abs=0.03), (approx.requests_per_s, served)
    # Little's law over the loop: its clients over the mean request's time, waiting included
    assert clients / approx.requests_per_s == pytest.approx(approx.e2e_p50_s, rel=0.03)
