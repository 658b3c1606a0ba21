"""What one serving instance does at each running batch, read off the speed model.

A ``ServiceCurve`` samples ``performance.serving.estimate`` at running batches from 1 to the
instance's slot limit (what the KV cache holds and the engine's running-sequence cap):

- ``tpot_s``: time per output token per request at that batch, the prompts of arriving requests
  fused in (the estimate's steady state of chunked prefill);
- ``decode_step_s``: one decode-only step at that batch (the estimate with every prompt token
  cached, so no prefill rides the steps, times the tokens a step advances);
- ``prefill_s_per_token``: what one prompt token fused into a step at that batch adds to it — the
  estimate's cycle with prompts less the cycle without, per prompt token of the cycle;
- ``ttft_s``: a request's TTFT when it joins that batch (its prompt in chunks beside the others);
- ``prompt_tokens`` / ``prompt_s``: a lone prompt (nothing else running) of that many tokens;
- ``prefill_first``: the engine runs waiting prompts in steps of their own, the running sequences
  paused, instead of fusing them into decode steps (``search/data/scheduling.yaml``).

Under data parallelism the curve is the whole instance's (``slots`` and ``token_budget`` summed
over its ``data_parallel`` ranks, each batch the instance's total, its steps those of the busiest
rank), as the estimate reports it; ``rank()`` is one rank's curve, where a prompt is prefilled: a
request runs on one rank, so its prompt costs what it costs that rank, whatever the others do.

The queueing approximation and the discrete-event simulation both read this one object, so they
price a step exactly as ``inferplan perf`` does.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from inferplan.catalog.loader import Catalog, load_catalog
from inferplan.economics.capacity import decode_pool_shape
from inferplan.inputs.deployment import Deployment
from inferplan.memory.hardware import with_default_engine
from inferplan.memory.fit import plan_memory
from inferplan.memory.slots import with_draft_running_stated, with_most_slots
from inferplan.memory.slots import SLOT_LIMIT
from inferplan.performance.serving import EstimateSweep, Figures
from inferplan.inputs.workload import Workload
from inferplan.search.scheduling import scheduling

DEFAULT_POINTS = 12  # running batches sampled between 1 and the slot limit (log-spaced)
PROMPT_POINTS = 6  # lone-prompt lengths sampled between 1 token and the step's token budget (and the workload's prompt)


@dataclass(frozen=True)
class ServiceCurve:
    slots: int  # most sequences the instance runs at once (KV cache, max_num_seqs)
    concurrency: tuple[int, ...]  # running batch sizes, increasing, 1..slots
    tpot_s: tuple[float, ...]  # time per output token per request at that batch, prompts fused in
    decode_step_s: tuple[float, ...]  # one decode-only step at that batch
    prefill_s_per_token: tuple[float, ...]  # a prompt token fused into a step at that batch
    ttft_s: tuple[float, ...]  # TTFT of a request joining that batch (request overhead included)
    prompt_tokens: tuple[int, ...]  # lone prompt chunk lengths, increasing
    prompt_s: tuple[float, ...]  # a lone prompt chunk of that many tokens (nothing else running)
    prefill_s: float  # the workload's prompt alone (TTFT at batch 1 less the request overhead)
    request_overhead_s: float  # receiving, tokenising, scheduling a request before its prompt runs
    token_budget: int  # tokens one engine step takes (max_num_batched_tokens, per DP rank summed)
    tokens_per_step: float  # output tokens a sequence advances per step (>1 with speculative decoding)
    input_tokens: int  # the workload the curve was read at
    output_tokens: int
    uncached_share: float = 1.0  # of a prompt's tokens, those the prefix cache does not serve
    prefill_first: bool = False  # waiting prompts run in steps of their own before any decode step
    data_parallel: int = 1  # engine ranks the instance runs side by side, each with its own requests
    dp_routing: str = "least-loaded"  # how the engine hands a request to one of them (least-loaded, round-robin)

    def __post_init__(self) -> None:
        n = len(self.concurrency)
        if not n or any(len(a) != n for a in (self.tpot_s, self.decode_step_s, self.prefill_s_per_token, self.ttft_s)):
            raise ValueError("a ServiceCurve needs one value per running batch in every array")
        if len(self.prompt_tokens) != len(self.prompt_s) or not self.prompt_tokens:
            raise ValueError("a ServiceCurve needs one lone-prompt time per prompt length")

    def rank(self) -> "ServiceCurve":
        """One data-parallel rank's curve: its share of the slots and the token budget, its own
        running batch. The instance's batch ``c`` runs ``ceil(c / ranks)`` sequences on the busiest
        rank (``service_curve`` reads it at whole multiples of the ranks: every rank as busy), whose
        steps, TPOT and TTFT the instance's curve already holds; its cost per fused prompt token is
        spread over the instance's ``c`` sequences' prompts, and is ``c / ceil(c / ranks)`` times that
        on the one rank that prefills them."""
        dp = self.data_parallel
        if dp == 1:
            return self
        first: dict[int, int] = {}  # rank batch → the first instance batch running it
        for i, c in enumerate(self.concurrency):
            first.setdefault(math.ceil(c / dp), i)
        batches, rows = tuple(first), tuple(first.values())
        pick = lambda values: tuple(values[i] for i in rows)  # noqa: E731
        per_token = tuple(self.prefill_s_per_token[i] * self.concurrency[i] / n for n, i in first.items())
        return replace(self, slots=math.ceil(self.slots / dp), concurrency=batches, tpot_s=pick(self.tpot_s),
                       decode_step_s=pick(self.decode_step_s), prefill_s_per_token=per_token, ttft_s=pick(self.ttft_s),
                       token_budget=max(self.token_budget // dp, 1), data_parallel=1)

    def tpot_at(self, batch: float) -> float:
        return float(np.interp(batch, self.concurrency, self.tpot_s))

    def ttft_at(self, batch: float) -> float:
        return float(np.interp(batch, self.concurrency, self.ttft_s))

    def step_table(self) -> tuple[list[float], list[float]]:
        """(decode-only step, added seconds per fused prompt token) at every running batch
        0..slots, for the simulation's per-step lookups (index 0: nothing decoding)."""
        batches = np.arange(self.slots + 1, dtype=float)
        step = np.interp(batches, self.concurrency, self.decode_step_s)
        per_token = np.interp(batches, self.concurrency, self.prefill_s_per_token)
        step[0] = 0.0
        return step.tolist(), per_token.tolist()

    def lone_prompt_s(self, tokens: float) -> float:
        """A step that only prefills ``tokens`` prompt tokens (no sequence decoding). Past the longest
        sampled prompt, the step is several prompts: each token more costs what one did between the
        two longest samples (the step's fixed cost is paid once)."""
        if tokens <= 0:
            return 0.0
        top = self.prompt_tokens[-1]
        if tokens <= top:
            return float(np.interp(tokens, self.prompt_tokens, self.prompt_s))
        if len(self.prompt_tokens) < 2:
            return self.prompt_s[-1] * tokens / top
        return self.prompt_s[-1] + (tokens - top) * self._tail_slope_s_per_token()

    def _tail_slope_s_per_token(self) -> float:
        """What a lone prompt step's token costs past the longest sample: its cost between the two longest
        samples (one sample: its own mean)."""
        top = self.prompt_tokens[-1]
        if len(self.prompt_tokens) < 2:
            return self.prompt_s[-1] / top
        return (self.prompt_s[-1] - self.prompt_s[-2]) / (top - self.prompt_tokens[-2])

    def lone_prompt_affine(self) -> tuple[float, float]:
        """A lone prompt step as ``fixed + slope × tokens`` (seconds, seconds per token): the slope of
        ``lone_prompt_s`` past its longest sample, the fixed part what makes it exact at the workload's
        uncached prompt (a sampled length) — what a step of several prompts costs over one."""
        slope = self._tail_slope_s_per_token()
        at = min(max(self.input_tokens * self.uncached_share, 1.0), self.prompt_tokens[-1])
        return max(self.lone_prompt_s(at) - slope * at, 0.0), slope

    def lone_prompt_s_per_token(self) -> float:
        """A lone prompt step's seconds per token when it fills the step's token budget."""
        return self.lone_prompt_s(self.token_budget) / self.token_budget


def _levels(top: int, points: int) -> list[int]:
    return sorted({max(1, round(top ** (i / max(points - 1, 1)))) for i in range(points)})


def _cycle_s(e: Figures, output_tokens: int) -> float:
    """One instance's cycle (each running sequence's prompt and output once), request overhead included."""
    return e.concurrency * output_tokens / e.output_tokens_per_s_total


def service_curve(d: Deployment, w: Workload, catalog: Catalog | None = None, *, points: int = DEFAULT_POINTS,
                  use_profiles: bool = True) -> ServiceCurve:
    """The service curve of deployment ``d`` under requests shaped like ``w`` (its concurrency is
    ignored: the curve sweeps it). Errors are ``estimate``'s (the model does not fit, the request is
    longer than the context ...)."""
    catalog = catalog or load_catalog()
    d = _with_slots(with_default_engine(d, catalog), w, catalog)
    sweep = EstimateSweep(catalog, use_profiles=use_profiles)  # one memory plan, rates and model work for all
    full = sweep.figures(d, w.model_copy(update={"concurrency": "max"}))
    slots = full.concurrency
    uncached = w.input_len * (1 - w.prefix_cache_hit_rate)
    cached_w = decode_pool_shape(w)  # the decode-only step: the shape a decode pool's instance runs
    ranks = _data_parallel(full)  # the instance read with its ranks evenly loaded: each rank's batch a whole number
    levels = sorted({min(ranks * n, slots) for n in _levels(math.ceil(slots / ranks), points)})
    tpot, step, per_token, ttft = [], [], [], []
    for c in levels:
        e = sweep.figures(d, w.model_copy(update={"concurrency": c}))
        bare = sweep.figures(d, cached_w.model_copy(update={"concurrency": c}))
        tpot.append(e.tpot_s)
        ttft.append(e.ttft_s)
        step.append(bare.tpot_s * bare.tokens_per_step)
        extra = _cycle_s(e, w.output_len) - _cycle_s(bare, w.output_len)
        per_token.append(max(extra, 0.0) / (c * uncached) if uncached >= 1 else 0.0)
    lone = sweep.figures(d, w.model_copy(update={"concurrency": 1}))
    sized = d if d.max_model_len else d.model_copy(update={"max_model_len": w.input_len + w.output_len})
    settings = plan_memory(sized, catalog).settings
    step_tokens = settings.step_budget_tokens(w.input_len)  # a prompt run whole: its own step; the context: memory's
    budget = step_tokens * ranks
    prompt_tokens, prompt_s = _lone_prompts(sized, w, sweep, step_tokens)
    return ServiceCurve(
        slots=slots, concurrency=tuple(levels), tpot_s=tuple(tpot), decode_step_s=tuple(step),
        prefill_s_per_token=tuple(per_token), ttft_s=tuple(ttft), prompt_tokens=prompt_tokens, prompt_s=prompt_s,
        prefill_s=lone.prefill_s, request_overhead_s=lone.ttft_s - lone.prefill_s, token_budget=int(budget),
        tokens_per_step=lone.tokens_per_step, input_tokens=w.input_len, output_tokens=w.output_len,
        uncached_share=1 - w.prefix_cache_hit_rate, prefill_first=scheduling().prefill_first(full.engine),
        data_parallel=ranks, dp_routing=scheduling().dp_routing(full.engine),
    )


def _with_slots(d: Deployment, w: Workload, catalog: Catalog) -> Deployment:
    """``d`` started with as many slots as fit where the engine allocates its context per slot and
    ``d`` states none (llama.cpp): what it serves at once is the slots its launch opens; and with the running
    requests its release runs without a draft where a draft would lower them (``with_draft_running_stated``)."""
    sized = d.model_copy(update={"max_model_len": d.max_model_len or w.input_len + w.output_len})
    started = with_draft_running_stated(with_most_slots(sized, catalog, SLOT_LIMIT), catalog)
    # ``d`` itself when nothing changes: the same fields stated, so its memory plan is the one made already
    return d if started is sized else d.model_copy(update={"max_num_seqs": started.max_num_seqs})


def _data_parallel(full: Figures) -> int:
    """Engine instances stepping side by side (data-parallel ranks): the deployment's running
    sequences over one instance's."""
    return max(round(full.concurrency / max(full.running_per_instance, 1)), 1)


def _lone_prompts(d: Deployment, w: Workload, sweep: EstimateSweep, budget: int) -> tuple[tuple[int, ...], tuple[float, ...]]:
    """A lone prompt step's time at lengths from 1 token to one step's budget or the deployment's
    context less one token, the shorter, and at the workload's prompt (no cache hits): a step of
    prompt chunks alone, as a burst of arrivals or a prefill-first engine runs it."""
    top = min(budget, d.max_model_len - 1)
    lengths = sorted(set(_levels(top, PROMPT_POINTS)) | {min(w.input_len, top)})
    times = []
    for n in lengths:
        one = w.model_copy(update={"input_len": n, "output_len": 1, "concurrency": 1, "prefix_cache_hit_rate": 0.0})
        times.append(sweep.lone_prefill_s(d, one))
    return tuple(lengths), tuple(times)
