"""A discrete-event simulation of continuous batching with chunked prefill, step by step.

Each engine step (one replica):

1. every running sequence decodes (``tokens_per_step`` output tokens, its share of the step's token
   budget ``ceil(tokens_per_step)`` tokens);
2. the prompts being prefilled get the rest of the budget in arrival order (a long prompt takes
   several steps: chunked prefill), then waiting requests are admitted, oldest first, while a slot
   (``curve.slots``) and budget are left;
3. the step takes ``decode_step_s[running] + prompt tokens × prefill_s_per_token[running]`` from the
   ``ServiceCurve`` (a step with only prompts: a lone prompt of that many tokens). An engine that
   runs prompts first (``curve.prefill_first``, SGLang) instead gives a step to the prompts alone
   whenever one is being prefilled or can be admitted: the whole budget, priced as a lone prompt,
   while the running sequences wait for the next decode step;
4. a request whose prompt completes has its first token at the step's end and decodes from the
   next step; one that has decoded its output leaves at the end of its last step.

Steps that change nothing but the clock (every sequence decoding, no prompt, no admission) are
taken together up to the next completion or arrival, so the cost is per request, not per token.
Requests reach the engine ``request_overhead_s`` after they are sent (receiving, tokenising).
Replicas: each request goes to the replica with the fewest requests in it (running, prefilling
or waiting; ties to the lowest index) when it arrives — ``router="least-loaded"`` — or to
replicas in turn (``"round-robin"``). A replica of ``curve.data_parallel`` ranks is that many
engines, each on one rank's curve (``ServiceCurve.rank``: its slots, its token budget, a prompt
priced on the rank that prefills it); the replica hands a request to one of its ranks as the
engine's own front end does (``curve.dp_routing``: the rank with the fewest requests in it, or
ranks in turn). A closed loop's clients are spread over replicas (their ranks) in turn, each
sending its next request when the last one ends.

A run given a ``check`` calls it every ``CHECK_VISITS`` engine visits (arrivals routed × engines a
router looks at), every ``CHECK_VISITS`` requests a closed loop's clients send, and every ``CHECK_VISITS``
steps that finish requests once the last request has arrived; ``check`` raises to stop the run (a
search's ``Budget.check``: its deadline, or a client that has gone).
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from dataclasses import dataclass
from typing import Callable, Literal

import numpy as np

from inferplan.errors import InvalidScenarioError
from inferplan.search.arrivals import Load, sample_requests
from inferplan.search.tail_types import LatencyPercentiles
from inferplan.search.service import ServiceCurve

MAX_REQUESTS = 2_000_000
MAX_REPLICAS = 4096
# requests × engines (replicas × data-parallel ranks, or both pools' instances) one simulation may
# run: the least-loaded router visits every engine at each arrival, some 1.6 million visits per CPU
# second on the 2-core machine the benchmarks run on, so this bounds a run to about 12 s there
SIM_WORK_LIMIT = 20_000_000
ROUTERS = ("least-loaded", "round-robin")
# engine visits between two calls of a run's ``check``: a few milliseconds of one core (1.6 million visits a
# second, above), so a stopped run ends at once whatever its size, for a check's cost of well under 1 %
CHECK_VISITS = 4096
Check = Callable[[], None]  # raises to stop a run


def every(engines: int) -> int:
    """Arrivals routed between two checks when each visits ``engines`` engines (``CHECK_VISITS``)."""
    return max(CHECK_VISITS // max(engines, 1), 1)


def drain(engines: list["Engine"], check: Check | None) -> None:
    """Every engine run until its requests have all finished; ``check`` called every ``CHECK_VISITS`` steps
    that finish requests (an overloaded engine may hold most of a run's requests at its last arrival)."""
    if check is None:
        for e in engines:
            e.run_until(math.inf)
        return
    done = 0
    for e in engines:
        while not e.idle():
            e.run_until(math.inf, stop_on_finish=True)
            done += 1
            if done % CHECK_VISITS == 0:
                check()


@dataclass(frozen=True)
class RequestTimes:
    """Every simulated request: when it was sent, reached a slot, got its first token, finished."""

    arrival_s: np.ndarray
    admitted_s: np.ndarray
    first_token_s: np.ndarray
    finish_s: np.ndarray
    input_tokens: np.ndarray
    output_tokens: np.ndarray
    replica: np.ndarray
    request_overhead_s: float
    busy_s: float  # time some replica had work, summed over replicas
    running_area: float  # ∫ running sequences dt, summed over replicas

    @property
    def ttft_s(self) -> np.ndarray:
        return self.first_token_s - self.arrival_s

    @property
    def e2e_s(self) -> np.ndarray:
        return self.finish_s - self.arrival_s

    @property
    def wait_s(self) -> np.ndarray:
        """Time from reaching the engine to being admitted to a slot."""
        return self.admitted_s - self.arrival_s - self.request_overhead_s

    @property
    def tpot_s(self) -> np.ndarray:
        """Per request: (E2E − TTFT) / (output − 1), for requests of two tokens or more."""
        many = self.output_tokens > 1
        return (self.finish_s[many] - self.first_token_s[many]) / (self.output_tokens[many] - 1)


class SimulationResult(LatencyPercentiles):
    requests: int
    replicas: int
    router: str
    seed: int
    wait_mean_s: float  # for a slot, after reaching the engine
    wait_probability: float  # share of requests that waited for a slot or budget (more than one step)
    mean_running: float  # per replica, while the simulation ran
    requests_per_s: float  # completed over the simulated span
    output_tokens_per_s: float
    span_s: float  # first arrival to last completion
    # a closed loop whose clients stayed in step: each round of its requests admitted together, in one
    # step, every request's first token waiting on the whole round's prompts (``in_step``)
    in_step: bool = False


class Engine:
    """One replica's scheduler state."""

    def __init__(self, curve: ServiceCurve, lists: tuple[list[int], list[int]], times: dict[str, np.ndarray],
                 on_finish=None):
        self.step_s, self.per_token_s = curve.step_table()
        self.curve = curve
        self.slots, self.budget = curve.slots, curve.token_budget
        self.decode_tokens = math.ceil(curve.tokens_per_step)
        self.tau = curve.tokens_per_step
        self.prompt, self.outputs = lists  # request_lists: each request's uncached prompt and output tokens
        self.t = times
        self.on_finish = on_finish
        self.now, self.k = 0.0, 0
        self.waiting: deque[int] = deque()
        self.prefilling: deque[list[int]] = deque()
        self.decoding: list[tuple[int, int]] = []  # (last step, request)
        self.busy_s = self.area = 0.0
        self.lone_s: dict[int, float] = {}  # curve.lone_prompt_s by prompt tokens, as the steps ask for them

    def load(self) -> int:
        return len(self.decoding) + len(self.prefilling) + len(self.waiting)

    def idle(self) -> bool:
        return not (self.decoding or self.prefilling or self.waiting)

    def push(self, request: int, at: float) -> None:
        if self.idle():
            self.now = max(self.now, at)
        self.waiting.append(request)

    def run_until(self, t: float, stop_on_finish: bool = False) -> None:
        decoding, prefilling, waiting = self.decoding, self.prefilling, self.waiting
        bounded = math.isfinite(t)
        while (decoding or prefilling or waiting) and self.now < t:
            if decoding and not prefilling and (not waiting or len(decoding) >= self.slots):
                # every sequence decoding, no prompt to run or admit: the steps up to the next completion
                # (or up to ``t``) at once, the step loop's hottest path, so written out here
                n = len(decoding)
                delta = self.step_s[n]
                steps = decoding[0][0] - self.k + 1  # to the next completion
                if delta > 0 and bounded:  # or to the first step ending at ``t`` or later, the sooner; 1 at least
                    upto = math.ceil((t - self.now) / delta)
                    if upto < steps:
                        steps = upto
                    if steps < 1:
                        steps = 1
                span = steps * delta
                self.now += span
                self.busy_s += span
                self.area += span * n
                self.k += steps
                finished = decoding[0][0] == self.k - 1 and self._finish(self.k - 1)
            else:
                finished = self._step()
            if finished and stop_on_finish:
                return

    def _step(self) -> bool:
        n = len(self.decoding)
        alone = self.curve.prefill_first and bool(self.prefilling or (self.waiting and n + len(self.prefilling) < self.slots))
        free = self.budget if alone else self.budget - n * self.decode_tokens
        tokens = 0
        for item in self.prefilling:
            if free <= 0:
                break
            take = min(item[1], free)
            item[1] -= take
            free -= take
            tokens += take
        while self.waiting and free > 0 and n + len(self.prefilling) < self.slots:
            r = self.waiting.popleft()
            self.t["admitted"][r] = self.now
            take = min(self.prompt[r], free)
            self.prefilling.append([r, self.prompt[r] - take])
            free -= take
            tokens += take
        delta = self.step_s[n] + tokens * self.per_token_s[n] if n and not alone else self._lone_prompt_s(tokens)
        end = self.now + delta
        self.busy_s += delta
        self.area += delta * n
        self.now = end
        finished = False if alone else self._finish(self.k)  # a prompt-only step advances no sequence
        first_decode = self.k if alone else self.k + 1  # the decode step a completed prompt starts in
        while self.prefilling and self.prefilling[0][1] == 0:
            r = self.prefilling.popleft()[0]
            self.t["first"][r] = end
            steps = math.ceil((self.outputs[r] - 1) / self.tau)
            if steps == 0:
                self._done(r)
                finished = True
            else:
                heapq.heappush(self.decoding, (first_decode + steps - 1, r))
        if not alone:
            self.k += 1
        return finished

    def _lone_prompt_s(self, tokens: int) -> float:
        """``curve.lone_prompt_s(tokens)``, worked out once per token count: a run asks for a few hundred
        counts (at most the token budget) at every prompt-only step, and each answer is an interpolation."""
        s = self.lone_s.get(tokens)
        if s is None:
            s = self.lone_s[tokens] = self.curve.lone_prompt_s(tokens)
        return s

    def _finish(self, step: int) -> bool:
        finished = False
        while self.decoding and self.decoding[0][0] == step:
            self._done(heapq.heappop(self.decoding)[1])
            finished = True
        return finished

    def _done(self, r: int) -> None:
        self.t["finish"][r] = self.now
        if self.on_finish is not None:
            self.on_finish(r, self.now)


def request_lists(inputs: np.ndarray, outputs: np.ndarray, cached: np.ndarray | None,
                  uncached_share: float) -> tuple[list[int], list[int]]:
    """Each request's uncached prompt and output tokens as lists, made once and shared by every engine
    of a run (which only reads them): a run of 4,096 replicas held 4,096 copies of them."""
    prompt = np.maximum(np.rint(inputs * uncached_share), 1).astype(np.int64)
    return (prompt if cached is None else np.where(cached, 1, prompt)).tolist(), outputs.tolist()


def _check(load: Load, requests: int, replicas: int, router: str) -> None:
    if not 1 <= requests <= MAX_REQUESTS:
        raise InvalidScenarioError(f"requests: {requests} is out of range", field="requests",
                                   allowed=f"1..{MAX_REQUESTS:,}")
    if not 1 <= replicas <= MAX_REPLICAS:
        raise InvalidScenarioError(f"replicas: {replicas} is out of range", field="replicas", allowed=f"1..{MAX_REPLICAS}")
    if router not in ROUTERS:
        raise InvalidScenarioError(f"router: {router!r} is not a router", field="router", allowed=" | ".join(ROUTERS))
    if load.arrival == "closed" and load.clients < replicas:
        raise InvalidScenarioError(f"clients: {load.clients} clients cannot keep {replicas} replicas busy", field="clients",
                                   allowed=f"at least {replicas}")


def simulate_requests(curve: ServiceCurve, load: Load, *, requests: int, seed: int = 0, replicas: int = 1,
                      router: Literal["least-loaded", "round-robin"] = "least-loaded",
                      check: Check | None = None) -> RequestTimes:
    """Every request's times under ``load`` on ``replicas`` copies of ``curve`` (``check``: see the module text)."""
    _check(load, requests, replicas, router)
    rng = np.random.default_rng(seed)
    arrival, inputs, outputs = sample_requests(load, requests, rng)
    times = {key: np.full(requests, np.nan) for key in ("admitted", "first", "finish")}
    owner = np.zeros(requests, np.int64)
    overhead = curve.request_overhead_s
    if load.arrival == "closed":
        units = min(replicas * curve.data_parallel, load.clients)  # every rank of every replica, one client each at least
        engines = _closed_loop(curve.rank(), load, arrival, inputs, outputs, times, owner, units, check)
        owner //= curve.data_parallel  # the rank's replica
    else:
        cached = np.arange(requests) < load.cached_first_requests
        ranks, rank = curve.data_parallel, curve.rank()
        lists = request_lists(inputs, outputs, cached, rank.uncached_share)
        groups = [[Engine(rank, lists, times) for _ in range(ranks)] for _ in range(replicas)]
        engines = [e for g in groups for e in g]
        turns = [0] * replicas  # requests each replica has handed out, for ranks in turn
        period = every(len(engines) if router == "least-loaded" else ranks)
        for r, a in enumerate(arrival.tolist()):
            if check is not None and r % period == 0:
                check()
            at = a + overhead
            if router == "round-robin":
                g = r % replicas
            else:
                for e in engines:
                    if e.now < at:  # an engine already at ``at`` (or past it, mid-step) has nothing to run
                        e.run_until(at)
                g = 0 if replicas == 1 else least_loaded(sum(e.load() for e in group) for group in groups)
            group = groups[g]
            if curve.dp_routing == "round-robin":
                pick = turns[g] % ranks
            else:
                if router == "round-robin":  # the least-loaded router has run every engine to ``at`` already
                    for e in group:
                        e.run_until(at)
                pick = 0 if ranks == 1 else least_loaded(e.load() for e in group)
            turns[g] += 1
            group[pick].run_until(at)
            owner[r] = g
            group[pick].push(r, at)
        drain(engines, check)
    return RequestTimes(arrival_s=arrival, admitted_s=times["admitted"], first_token_s=times["first"],
                        finish_s=times["finish"], input_tokens=inputs, output_tokens=outputs, replica=owner,
                        request_overhead_s=overhead, busy_s=sum(e.busy_s for e in engines),
                        running_area=sum(e.area for e in engines))


def least_loaded(loads) -> int:
    """The index of the first of the smallest loads (the engine a least-loaded router picks)."""
    loads = list(loads)
    return loads.index(min(loads))


def _closed_loop(curve, load, arrival, inputs, outputs, times, owner, replicas, check=None) -> list[Engine]:
    """Clients spread over ``replicas`` engines in turn; each sends at once, then again when its request
    ends. Each engine's requests are sent in index order, its share of ``cached_first_requests`` first."""
    n = len(arrival)
    cached = np.zeros(n, bool)
    overhead = curve.request_overhead_s
    clients = [load.clients // replicas + (1 if i < load.clients % replicas else 0) for i in range(replicas)]
    quota = [n * c // load.clients for c in clients]
    quota[0] += n - sum(quota)
    starts = np.concatenate(([0], np.cumsum(quota)[:-1])).tolist()
    for start, c, m in zip(starts, clients, quota):
        cached[start:start + min(load.cached_first_requests * c // load.clients, m)] = True
    lists = request_lists(inputs, outputs, cached, curve.uncached_share)
    engines, sends = [], 0
    for i, (start, c, m) in enumerate(zip(starts, clients, quota)):
        ids = list(range(start, start + m))
        owner[ids] = i
        pending: list[tuple[float, int]] = []
        sent = iter(ids)

        def send(_finished: int, at: float, pending=pending, sent=sent) -> None:
            nxt = next(sent, None)
            if nxt is not None:
                arrival[nxt] = at
                heapq.heappush(pending, (at + overhead, nxt))

        engine = Engine(curve, lists, times, on_finish=send)
        for _ in range(min(c, m)):
            send(-1, 0.0)
        while pending:
            sends += 1
            if check is not None and sends % CHECK_VISITS == 0:
                check()
            at, r = heapq.heappop(pending)
            engine.run_until(at, stop_on_finish=True)
            if pending and pending[0][0] < at:  # a request ended and its client sent earlier than this one
                heapq.heappush(pending, (at, r))
                continue
            engine.push(r, at)
            if not pending:  # the last request sent: run until one ends (its client may send again)
                engine.run_until(math.inf, stop_on_finish=True)
        drain([engine], check)
        engines.append(engine)
    return engines


def simulate(curve: ServiceCurve, load: Load, *, requests: int, seed: int = 0, replicas: int = 1,
             router: Literal["least-loaded", "round-robin"] = "least-loaded", check: Check | None = None) -> SimulationResult:
    """p50/p95/p99 TTFT, TPOT and E2E of ``requests`` simulated requests (see the module text)."""
    t = simulate_requests(curve, load, requests=requests, seed=seed, replicas=replicas, router=router, check=check)
    result = summarise(t, replicas=replicas, router=router, seed=seed, step_s=max(curve.decode_step_s))
    engines = min(replicas * curve.data_parallel, load.clients) if load.arrival == "closed" else 0
    return result.model_copy(update={"in_step": bool(engines) and in_step(t, load.clients, engines)})


def in_step(t: RequestTimes, clients: int, engines: int) -> bool:
    """Whether a closed loop of ``clients`` over ``engines`` engines stayed in step: its requests admitted at
    no more distinct instants than its rounds (each engine's clients sending one request each), so that every
    round entered one step together. It takes an engine of two clients or more (a lone client waits on no other's
    prompt) and a client of two requests or more (one round is no loop)."""
    n = len(t.admitted_s)
    rounds = math.ceil(n / min(clients, n))
    return clients > engines and rounds > 1 and len(np.unique(t.admitted_s)) <= rounds * engines


def summarise(t: RequestTimes, *, replicas: int, router: str, seed: int, step_s: float) -> SimulationResult:
    """Percentiles of every request's times; a request "waited" when its admission took longer than
    the longest step (``step_s``: an arrival always waits for the step under way)."""
    ttft, tpot, e2e = t.ttft_s, t.tpot_s, t.e2e_s
    span = float(np.nanmax(t.finish_s) - np.nanmin(t.arrival_s)) or 1e-12
    pct = lambda x, q: float(np.percentile(x, q)) if len(x) else 0.0  # noqa: E731
    return SimulationResult(
        requests=len(ttft), replicas=replicas, router=router, seed=seed,
        ttft_p50_s=pct(ttft, 50), ttft_p95_s=pct(ttft, 95), ttft_p99_s=pct(ttft, 99),
        tpot_p50_s=pct(tpot, 50), tpot_p95_s=pct(tpot, 95), tpot_p99_s=pct(tpot, 99),
        e2e_p50_s=pct(e2e, 50), e2e_p95_s=pct(e2e, 95), e2e_p99_s=pct(e2e, 99),
        wait_mean_s=float(t.wait_s.mean()), wait_probability=float((t.wait_s > step_s).mean()),
        mean_running=t.running_area / span / replicas, requests_per_s=len(ttft) / span,
        output_tokens_per_s=float(t.output_tokens.sum()) / span, span_s=span,
    )
