"""The discrete-event simulation of separate prefill and decode pools (disaggregated serving).

A request reaches the prefill pool ``request_overhead_s`` after it is sent and goes to the prefill
instance with the fewest requests in it; each prefill instance is the one-replica engine of
``simulate.py`` on the prefill layout's serving curve with one output token per request, so its
steps are prompt steps (chunked to its token budget, several prompts sharing a step). When a
prompt completes, its KV cache crosses the link joining the pools (``transfer_s``), and the request
joins the decode instance with the fewest requests in it: an engine on the decode layout's curve,
capped at its running-sequence cap, whose prompt is already in its cache (one token to place),
so its first token comes at the end of the first step it joins — the token the client sees first,
as with vLLM's and SGLang's prefill/decode proxies — and it decodes from there.

The decode pool does not hold back the prefill pool (a prompt finished while every decode slot is
taken waits in the decode instance's queue, its KV cache held on the prefill side), so the two
pools are run one after the other. A closed loop, whose next request waits for the last one to
end, is not simulated here.
"""

from __future__ import annotations

import math

import numpy as np

from inferplan.errors import InvalidScenarioError
from inferplan.search.arrivals import Load, sample_requests
from inferplan.search.service import ServiceCurve
from inferplan.search.simulate import (MAX_REPLICAS, MAX_REQUESTS, Check, Engine, RequestTimes, SimulationResult, drain,
                                       every, least_loaded, request_lists, summarise)


def _route(engines: list[Engine], at: np.ndarray, order: np.ndarray, owner: np.ndarray, check: Check | None) -> None:
    """Each request of ``order`` to the engine with the fewest requests in it when it arrives at ``at``
    (``check`` called as ``simulate.py`` calls it)."""
    period = every(len(engines))
    times = at.tolist()
    for n, r in enumerate(order.tolist()):
        if check is not None and n % period == 0:
            check()
        t = times[r]
        for e in engines:
            if e.now < t:  # an engine already at ``t`` (or past it, mid-step) has nothing to run
                e.run_until(t)
        pick = least_loaded(e.load() for e in engines)
        owner[r] = pick
        engines[pick].push(r, t)
    drain(engines, check)


def simulate_pools_requests(prefill: ServiceCurve, decode: ServiceCurve, load: Load, *, requests: int,
                            prefill_instances: int, decode_instances: int, transfer_s: float,
                            seed: int = 0, check: Check | None = None) -> RequestTimes:
    """Every request's times under ``load`` on ``prefill_instances`` prefill and ``decode_instances``
    decode instances (see the module text); ``check`` is called as ``simulate.py`` calls it, and raises to stop."""
    if load.arrival == "closed":
        raise InvalidScenarioError("separate prefill and decode pools are simulated under open arrivals only",
                                   field="arrival", allowed="poisson, bursty or a trace")
    for name, value, top in (("requests", requests, MAX_REQUESTS), ("prefill_instances", prefill_instances, MAX_REPLICAS),
                             ("decode_instances", decode_instances, MAX_REPLICAS)):
        if not 1 <= value <= top:
            raise InvalidScenarioError(f"{value} {name}: at least 1, at most {top:,}", field=name, allowed=f"1 to {top:,}")
    if not (math.isfinite(transfer_s) and transfer_s >= 0):
        raise InvalidScenarioError(f"a KV hand-over of {transfer_s} s", field="kv_transfer_s", allowed="0 or more seconds")
    rng = np.random.default_rng(seed)
    arrival, inputs, outputs = sample_requests(load, requests, rng)
    overhead = prefill.request_overhead_s
    first = {k: np.full(requests, np.nan) for k in ("admitted", "first", "finish")}
    prompts = request_lists(inputs, np.ones(requests, np.int64), None, prefill.uncached_share)
    pre = [Engine(prefill, prompts, first) for _ in range(prefill_instances)]
    owner = np.zeros(requests, np.int64)
    reached = arrival + overhead
    _route(pre, reached, np.argsort(reached, kind="stable"), owner, check)
    ready = first["finish"] + transfer_s
    second = {k: np.full(requests, np.nan) for k in ("admitted", "first", "finish")}
    handed = request_lists(inputs, outputs, np.ones(requests, bool), decode.uncached_share)
    dec = [Engine(decode, handed, second) for _ in range(decode_instances)]
    _route(dec, ready, np.argsort(ready, kind="stable"), owner, check)
    waited = (first["admitted"] - reached) + (second["admitted"] - ready)  # for a prefill slot, then a decode slot
    return RequestTimes(arrival_s=arrival, admitted_s=reached + waited, first_token_s=second["first"],
                        finish_s=second["finish"], input_tokens=inputs, output_tokens=outputs, replica=owner,
                        request_overhead_s=overhead, busy_s=sum(e.busy_s for e in [*pre, *dec]),
                        running_area=sum(e.area for e in dec))


def simulate_pools(prefill: ServiceCurve, decode: ServiceCurve, load: Load, *, requests: int, prefill_instances: int,
                   decode_instances: int, transfer_s: float, seed: int = 0, check: Check | None = None) -> SimulationResult:
    """p50/p95/p99 TTFT, TPOT and E2E of ``requests`` simulated requests on separate pools; the
    replicas, wait and running figures are the decode pool's."""
    t = simulate_pools_requests(prefill, decode, load, requests=requests, prefill_instances=prefill_instances,
                                decode_instances=decode_instances, transfer_s=transfer_s, seed=seed, check=check)
    return summarise(t, replicas=decode_instances, router="least-loaded", seed=seed, step_s=max(decode.decode_step_s))
