"""The serving curve: TTFT, TPOT and throughput of a deployment under a workload.

Steady state of continuous batching with chunked prefill: every iteration each running sequence
decodes (``tokens_per_step`` of them with speculative decoding) and the prefill of arriving
requests is fused in — each request brings its uncached input once per ``output_len`` decoded
tokens. Concurrency beyond what the KV cache holds is an error; beyond the engine's
``max_num_seqs`` requests queue, and the wait (Little's law in a closed loop) is added to TTFT.
"""

from __future__ import annotations

import math

from pydantic import BaseModel, ConfigDict

from inferplan.catalog.loader import Catalog, load_catalog
from inferplan.catalog.memo import per_catalog
from inferplan.catalog.schema import SpeedAccuracy
from inferplan.errors import InvalidScenarioError
from inferplan.memory.deployment import Deployment
from inferplan.memory.fit import MemoryPlan, plan_memory
from inferplan.performance.measured import MAX_QUOTES, MeasuredQuote, matching_points, measured_quotes, quote_note
from inferplan.performance.network import network_notes
from inferplan.performance.notes import FIXED_COST_CAVEAT, fixed_costs, hop_note, padding_note, prompt_note, unpack_note
from inferplan.performance.phases import StepTime, decode_step, micro_batches, prefill
from inferplan.performance.profiles import anchor, find_profile, interpolate, profile_range
from inferplan.performance.rates import Rates, check_backend, default_backend, rates_for
from inferplan.performance.track_record import with_track_record
from inferplan.performance.work import ModelWork, model_work
from inferplan.performance.workload import Workload


class ServingEstimate(BaseModel):
    model_config = ConfigDict(frozen=True)

    model: str
    accelerator: str
    engine: str
    quantization: str
    gpus: int
    concurrency: int  # requests in flight across the deployment
    running_per_instance: int  # sequences decoding together in one engine instance
    max_concurrency: int  # what the KV cache holds across the deployment at input+output tokens
    ttft_s: float
    tpot_s: float
    prefill_s: float  # the request's prompt (its chunks, any wait in the queue): TTFT less the fixed per-request cost
    output_tokens_per_s_per_user: float
    output_tokens_per_s_total: float
    output_tokens_per_s_per_gpu: float
    input_tokens_per_s_total: float
    tokens_per_step: float  # accepted tokens per sequence per step (1 without speculation)
    bound: str  # memory | compute | communication | overhead | measured
    source: str  # measured | calibrated-model
    compute_dtype: str
    assumptions: tuple[str, ...]
    # the calibrated model's track record for this engine family on the kinds of figure this
    # estimate gives (single-stream decode and prefill at concurrency 1; per-user decode,
    # throughput and prefill above): from `inferplan validate --speed`, empty for measured estimates
    validated: tuple[SpeedAccuracy, ...] = ()
    # published points measured on this same deployment and concurrency, nearest workload first,
    # with what this estimate gives for each (performance/measured.py)
    measured_points: tuple[MeasuredQuote, ...] = ()


GRAPH_ENGINES = ("vllm", "sglang")  # capture decode steps as graphs unless told not to


def tokens_per_step(k: int, acceptance: float) -> float:
    """Expected tokens a sequence advances per verify step with ``k`` draft tokens."""
    if k == 0:
        return 1.0
    if acceptance >= 1:
        return k + 1.0
    return (1 - acceptance ** (k + 1)) / (1 - acceptance)


class _Context:
    """The pieces one estimate needs, computed once and reused across a concurrency sweep."""

    def __init__(self, catalog: Catalog, d: Deployment, w: Workload):
        request = w.input_len + w.output_len
        sized_for_request = d.max_model_len is None
        if sized_for_request:  # no max_model_len stated: the engine is sized for this request
            d = d.model_copy(update={"max_model_len": request})
        self.catalog, self.d, self.w = catalog, d, w
        try:
            self.mp: MemoryPlan = plan_memory(d, catalog)
        except InvalidScenarioError as exc:
            if sized_for_request and exc.field == "--max-model-len":  # the request itself is too long
                raise InvalidScenarioError(f"a request of {w.input_len:,} + {w.output_len:,} tokens: {exc}",
                                           field="--input-len", allowed=exc.allowed) from None
            raise
        fit = self.mp.result
        if d.engine != fit.engine:  # a name such as "SGLang" or "llama.cpp": carry the catalogue id
            self.d = d = d.model_copy(update={"engine": fit.engine})
        if not fit.fits:
            raise InvalidScenarioError(
                f"{fit.model} does not fit on {fit.parallel.gpus}× {fit.accelerator} at max_model_len "
                f"{fit.max_model_len} (short by {fit.shortfall_bytes / 2**30:.1f} GiB per GPU); "
                "see `inferplan fit`",
                field="--gpus",
            )
        if fit.max_model_len < request:
            if sized_for_request or fit.max_model_len < d.max_model_len:  # the engine caps its context below it
                raise InvalidScenarioError(
                    f"a request of {w.input_len:,} + {w.output_len:,} tokens is longer than the {fit.max_model_len:,} "
                    f"tokens {fit.engine} serves {fit.model} at", field="--input-len",
                    allowed=f"input + output at most {fit.max_model_len:,} tokens")
            raise InvalidScenarioError(
                f"max_model_len {fit.max_model_len} is shorter than one request ({w.input_len} + {w.output_len} tokens): "
                "the engine would refuse it", field="--max-model-len", allowed=f"at least {request}")
        check_backend(d.engine, w.backend, self.mp.accelerator)
        self.backend = backend = w.backend or default_backend(d.engine, self.mp.accelerator)
        self.rates: Rates = rates_for(catalog, self.mp.accelerator, self.mp.quantization, d.engine, backend,
                                     self.mp.hardware, self.mp.kv_dtype.id)
        self.work: ModelWork = model_work(self.mp)
        self.network_notes = network_notes(self.mp, self.work, self.rates)
        self.uncached = w.input_len * (1 - w.prefix_cache_hit_rate)
        self.tau = tokens_per_step(w.speculative_tokens, w.acceptance_rate)
        par = fit.parallel
        self.dp, self.pp, self.gpus = par.data_parallel_size, par.pipeline_parallel_size, par.gpus
        seq = self.mp.layout.room_bytes_per_sequence(w.input_len + w.output_len, self.mp.settings.block_tokens)
        self.kv_limit = int(fit.kv_cache_bytes_per_gpu // seq) if seq else 10**9
        # micro-batches of a round that each get the engine's batch limits: every one of the pp under
        # an engine that holds each micro-batch to them (TensorRT-LLM), else the round shares one set
        self.limited_batches = self.pp if self.mp.settings.limits_per_micro_batch else 1
        # llama.cpp serves as many parallel slots as it is started with (-np); others cap at max_num_seqs
        slots = (self.kv_limit if d.engine == "llamacpp" and d.max_num_seqs is None
                 else self.mp.settings.max_num_seqs * self.limited_batches)
        self.max_running = min(self.kv_limit, slots)
        if self.max_running < 1:
            raise InvalidScenarioError(
                f"no room in the KV cache for one request of {w.input_len}+{w.output_len} tokens",
                field="--input-len",
            )

    def max_concurrency(self) -> int:
        return self.kv_limit * self.dp

    def iteration(self, batch: int, prefill_tokens: float) -> tuple[StepTime, float]:
        """A stage's step (its average: its bound and draft cost) and the round in which each of the
        batch's pipeline micro-batches advances one step. With ``pp`` stages the batch runs as up to
        ``pp`` micro-batches, and the round takes the longer of one micro-batch passing every stage
        (its ``pp − 1`` stage boundaries included: ``boundary_host_s``) and the slowest stage (the last: it runs
        the lm_head) working through all of them."""
        shape = self._step_shape(max(batch / self.pp, 1e-9), prefill_tokens / self.pp)
        step = decode_step(self.work, self.mp.layout, self.rates, **shape)
        if self.pp == 1:
            return step, step.seconds
        last = decode_step(self.work.last_stage(), self.mp.layout, self.rates, **shape)
        trip = self.pp * step.seconds + self.boundary_host_s(self.requests_per_micro_batch(batch))
        return step, max(trip, self.micro_batches_in_flight(batch) * last.seconds)

    def _step_shape(self, sequences: float, prefill_tokens: float) -> dict:
        """decode_step's workload for one micro-batch of ``sequences`` fusing ``prefill_tokens``."""
        w = self.w
        return dict(batch=sequences, context=w.input_len + w.output_len / 2, tokens_per_seq=w.speculative_tokens + 1,
                    prefill_tokens=prefill_tokens, micro_batch=self.mp.settings.prefill_micro_batch_tokens)

    def micro_batches_in_flight(self, batch: float) -> int:
        """Pipeline micro-batches of a round: one per stage, or one per sequence when fewer."""
        return min(max(batch, 1), self.pp)

    def requests_per_micro_batch(self, batch: float) -> float:
        return max(batch, 1) / self.micro_batches_in_flight(batch)

    def chunk_round_s(self, others: int, tokens: float) -> float:
        """A round in which a new request's prompt chunk of ``tokens`` runs beside ``others`` decoding
        sequences: its first token waits for it. Under pipeline parallelism the chunk rides one
        micro-batch, whose trip through every stage is at least as long as that micro-batch's share
        of the others plus the whole chunk at each stage (``iteration`` spreads a round's prefill over
        all ``pp`` micro-batches, right for the cycle's throughput, up to ``pp`` times short here)."""
        spread = self.iteration(others, tokens)[1]
        if self.pp == 1:
            return spread
        share = self.requests_per_micro_batch(others)
        carrier = decode_step(self.work, self.mp.layout, self.rates, **self._step_shape(share, tokens))
        return max(spread, self.pp * carrier.seconds + self.boundary_host_s(share + 1))

    def round_budget(self, running: int) -> float:
        """Prompt tokens a round can fuse beside ``running`` decoding sequences: the engine's token
        budget (once per micro-batch where each gets its own) less their decode tokens."""
        budget = self.mp.settings.max_num_batched_tokens * self.limited_batches
        return max(budget - running * (self.w.speculative_tokens + 1), 1)

    def chunk_budget(self, running: int) -> float:
        """The largest prompt chunk a new request, one of ``running``, gets in one round: the round's
        budget; where each micro-batch has its own, the one it rides less the others' share of it."""
        if self.limited_batches == 1:
            return self.round_budget(running)
        share = self.requests_per_micro_batch(running - 1) if running > 1 else 0
        return max(self.mp.settings.max_num_batched_tokens - share * (self.w.speculative_tokens + 1), 1)

    def boundary_host_s(self, requests: float) -> float:
        """One micro-batch of ``requests`` crossing the ``pp − 1`` stage boundaries: the engine's
        host work per request at each (TensorRT-LLM's pipeline loop runs it between micro-batches,
        not beside the GPU; fitted, docs/speed.md), on top of the stages' GPU time."""
        return (self.pp - 1) * self.rates.pipeline_hop_s_per_request * requests

    def draft_s(self, step: StepTime, batch: float = 1) -> float:
        """The draft tokens' time per round: each costs a share of a whole-model step, which under
        pipeline parallelism is every stage's (``step`` is one stage's), and every micro-batch of the
        round drafts its own on the last stage."""
        if not self.w.speculative_tokens:
            return 0.0
        in_flight = self.micro_batches_in_flight(batch)
        return self.w.speculative_tokens * self.work.draft_cost_ratio * self.pp * step.seconds * in_flight


def _lone_chunk_s(ctx: _Context, start: float, tokens: float) -> float:
    """One chunk of a lone prompt through every pipeline stage. Its micro-batches (llama.cpp's
    n_ubatch) flow through the stages one behind the other, so ``n`` of them over ``pp`` stages take
    ``n + pp − 1`` micro-batch times rather than ``pp × n`` (one micro-batch: ``pp`` stage times),
    and the last one crosses the stage boundaries with its one request."""
    micro = ctx.mp.settings.prefill_micro_batch_tokens
    n = sum(k for _, k in micro_batches(tokens, micro))
    stage = prefill(ctx.work, ctx.mp.layout, ctx.rates, tokens=tokens, prior_context=start, micro_batch=micro).seconds
    return stage * (n + ctx.pp - 1) / n + ctx.boundary_host_s(1)


def prompt_chunks(uncached: float, cached: float, budget: int) -> list[tuple[float, float]]:
    """(prior context, tokens) of each chunk a lone prompt is prefilled in (chunked prefill)."""
    tokens = max(uncached, 1.0)
    n = math.ceil(tokens / budget)
    return [(cached + i * budget, min(budget, tokens - i * budget)) for i in range(n)]


def _estimate(ctx: _Context, concurrency: int) -> ServingEstimate:
    w, d, fit = ctx.w, ctx.d, ctx.mp.result
    if concurrency > ctx.max_concurrency():
        raise InvalidScenarioError(
            f"concurrency {concurrency} does not fit: the KV cache holds {ctx.max_concurrency()} requests of "
            f"{w.input_len}+{w.output_len} tokens on this deployment",
            field="--concurrency",
            allowed=f"1..{ctx.max_concurrency()} or max",
        )
    per_instance = math.ceil(concurrency / ctx.dp)
    running = min(per_instance, ctx.max_running)
    budget = ctx.round_budget(running)
    # One cycle: each running sequence prefills its uncached input once and decodes output_len tokens.
    # Prefill comes in chunks of the batch budget, fused into some iterations; the rest decode only.
    decode_iters = w.output_len / ctx.tau
    cycle_prefill = running * ctx.uncached
    mixed_iters = math.ceil(cycle_prefill / budget) if cycle_prefill >= 1 else 0
    decode_only, decode_round = ctx.iteration(running, 0.0)
    t_decode = decode_round + ctx.draft_s(decode_only, running)
    mixed, t_mixed = decode_only, t_decode
    if mixed_iters:  # whole chunks of the budget and the rest in the last one (mean time per mixed iteration)
        whole = mixed_iters - 1
        mixed, full_round = ctx.iteration(running, budget if whole else cycle_prefill)
        last, last_round = ctx.iteration(running, cycle_prefill - whole * budget) if whole else (mixed, full_round)
        t_mixed = (whole * (full_round + ctx.draft_s(mixed, running)) + last_round + ctx.draft_s(last, running)) / mixed_iters
    cycle = mixed_iters * t_mixed + max(decode_iters - mixed_iters, 0.0) * t_decode
    step = mixed if mixed_iters * t_mixed > max(decode_iters - mixed_iters, 0.0) * t_decode else decode_only
    # a sequence's own prefill comes before its first token (TTFT); while it decodes, only the other
    # sequences' prefill chunks slow its steps
    seen = min(mixed_iters * (running - 1) / running, decode_iters)
    tpot = (seen * t_mixed + (decode_iters - seen) * t_decode) / decode_iters / ctx.tau
    # TTFT: the new request's uncached input in chunks of the batch budget, alongside the others
    if running == 1:  # alone: its prompt in chunks of the whole budget (nothing else decodes), each attending to what came before
        ttft = sum(_lone_chunk_s(ctx, start, tokens)
                   for start, tokens in prompt_chunks(ctx.uncached, w.input_len - ctx.uncached, ctx.mp.settings.max_num_batched_tokens))
    else:  # whole chunks of the budget, then what is left in one more iteration
        chunk = ctx.chunk_budget(running)
        whole, rest = divmod(max(ctx.uncached, 1.0), chunk)
        ttft = whole * ctx.chunk_round_s(running - 1, chunk) + (ctx.chunk_round_s(running - 1, rest) if rest > 1e-6 else 0.0)
    ttft += ctx.rates.request_overhead_s  # receiving, tokenising and scheduling the request
    # each sequence also spends that time before its prompt runs, so a closed loop's cycle is longer by it
    output_instance = running * w.output_len / (cycle + ctx.rates.request_overhead_s)
    if per_instance > running:  # queued requests wait their turn (closed loop, Little's law)
        loop = per_instance * w.output_len / output_instance
        ttft += max(loop - (ttft + w.output_len * tpot), 0.0)
    # the requests that exist, each at the busiest instance's rate: fewer requests than instances
    # leave some idle (DP ranks in lock-step run at the busiest one's pace anyway)
    total = output_instance * concurrency / per_instance
    assumptions = [*fit.assumptions, *ctx.rates.notes, *ctx.work.notes]
    if per_instance > running:
        assumptions.append(f"{per_instance:,} requests per instance, {running:,} running at once (the engine's limit): the "
                           "rest queue, so tokens/s per user is the rate while a request runs, and the wait is in TTFT; "
                           "the total counts every request's share of the queue")
    if w.speculative_tokens and ctx.pp > 1:
        assumptions.append("speculative decoding with pipeline parallelism: every micro-batch drafts on the last stage; "
                           "engine support for the combination varies by build (check yours)")
    if w.speculative_tokens:
        assumptions.append(f"speculative decoding: {w.speculative_tokens} draft tokens at acceptance {w.acceptance_rate:g} → "
                           f"{ctx.tau:.2f} tokens per step; each draft token costs {ctx.work.draft_cost_ratio:.3f} of a step "
                           "(one decoder layer and the lm_head, as MTP and EAGLE heads are built)")
    assumptions.extend(ctx.network_notes)
    if ctx.pp > 1:
        assumptions.append(hop_note(ctx, running))
    if w.prefix_cache_hit_rate:
        assumptions.append(f"prefix cache: {w.prefix_cache_hit_rate:.0%} of input tokens skip prefill compute")
    if d.engine in GRAPH_ENGINES:
        assumptions.append(f"{d.engine} with CUDA/HIP graphs on (its default); --enforce-eager runs decode slower, "
                           "by 0.3-0.8 ms per layer in the measured runs, which this estimate does not include")
    r = ctx.rates
    attention = "" if r.attention_dtype in ("", r.compute_dtype) else f" (attention in {r.attention_dtype}, the KV cache's)"
    assumptions.append(f"rates: {r.bandwidth_efficiency:.0%} of peak bandwidth, {r.compute_efficiency:.0%} of peak "
                       f"{r.compute_dtype} FLOP/s{attention}, a step's memory and compute time combined as their power mean "
                       f"of order {r.overlap_exponent:g} (near the ridge up to {2 ** (1 / r.overlap_exponent):.2f}x "
                       f"the larger); {fixed_costs(ctx, running)} (calibrated, see "
                       f"docs/speed.md); TTFT includes {r.request_overhead_s * 1e3:.0f} ms per request before its prompt "
                       "is processed (receiving, tokenising, scheduling)"
                       + ("" if r.request_overhead_fitted else ": the pooled value, which no TTFT point of this family checks"))
    if ctx.work.unpacked_weights_per_byte and ctx.rates.unpack_flops_per_weight:
        assumptions.append(unpack_note(ctx, step, running))
    if (note := padding_note(ctx, step)) is not None:
        assumptions.append(note)
    if (note := prompt_note(ctx)) is not None:
        assumptions.append(note)
    if step.bound == "overhead":
        assumptions.append(FIXED_COST_CAVEAT)
    return ServingEstimate(
        model=fit.model, accelerator=fit.accelerator, engine=fit.engine, quantization=fit.quantization,
        gpus=ctx.gpus, concurrency=concurrency, running_per_instance=running,
        max_concurrency=ctx.max_concurrency(), ttft_s=ttft, tpot_s=tpot, prefill_s=ttft - ctx.rates.request_overhead_s,
        output_tokens_per_s_per_user=1 / tpot, output_tokens_per_s_total=total,
        output_tokens_per_s_per_gpu=total / ctx.gpus,
        input_tokens_per_s_total=total * w.input_len / w.output_len,
        tokens_per_step=ctx.tau, bound=step.bound, source="calibrated-model",
        compute_dtype=ctx.rates.compute_dtype, assumptions=tuple(dict.fromkeys(assumptions)),
    )


def _concurrency(ctx: _Context, w: Workload) -> int:
    if w.concurrency == "max":
        return min(ctx.max_concurrency(), ctx.max_running * ctx.dp)
    return int(w.concurrency)


def _with_profile(ctx: _Context, est: ServingEstimate, profile) -> ServingEstimate:
    low, high = profile_range(profile)
    if low <= est.concurrency <= high:
        return interpolate(profile, est)
    edge = low if est.concurrency < low else high
    if edge > ctx.max_concurrency():
        return est
    return anchor(profile, est, _estimate(ctx, edge))


def estimate(d: Deployment, w: Workload, catalog: Catalog | None = None, *, use_profiles: bool = True) -> ServingEstimate:
    """Speed of one deployment under one workload: a measured profile where one matches (anchoring
    the model outside its range), else the calibrated model with its family's track record; and the
    published points of this deployment quoted beside it. ``use_profiles=False``: the calibrated
    model alone, as validation scores it (no profile, no quoted points)."""
    catalog = catalog or load_catalog()
    ctx = _Context(catalog, d, w)
    model_estimate = _estimate(ctx, _concurrency(ctx, w))
    profile = find_profile(catalog, ctx.mp, w) if use_profiles else None
    result = model_estimate if profile is None else _with_profile(ctx, model_estimate, profile)
    if result.source != "measured":
        result = with_track_record(catalog, ctx.rates.family, result)
    return with_measured_points(ctx, result) if use_profiles else result


def with_measured_points(ctx: _Context, est: ServingEstimate) -> ServingEstimate:
    """``est`` with the published points of its deployment quoted beside it."""
    par, w = ctx.mp.result.parallel, ctx.w
    points = matching_points(ctx.catalog, est, tp=par.tensor_parallel_size, pp=par.pipeline_parallel_size,
                             backend=ctx.backend,
                             speculative_tokens=w.speculative_tokens, max_load=w.concurrency == "max")
    if not points:
        return est
    quotes = measured_quotes(points, est, w.input_len, w.output_len)
    notes = [quote_note(q, w.input_len, w.output_len) for q in quotes[:MAX_QUOTES]]
    if len(quotes) > MAX_QUOTES:
        notes.append(f"{len(quotes) - MAX_QUOTES} more measured points of this deployment: see measured_points (--json)")
    return est.model_copy(update={"measured_points": quotes, "assumptions": (*est.assumptions, *notes)})


class FrontierPoint(BaseModel):
    model_config = ConfigDict(frozen=True)

    concurrency: int
    output_tokens_per_s_per_user: float
    output_tokens_per_s_per_gpu: float
    ttft_s: float
    bound: str


class Frontier(BaseModel):
    model_config = ConfigDict(frozen=True)

    model: str
    accelerator: str
    gpus: int
    input_len: int
    output_len: int
    max_concurrency: int
    points: tuple[FrontierPoint, ...]
    source: str
    assumptions: tuple[str, ...]


def _sources(found: set[str]) -> str:
    return found.pop() if len(found) == 1 else "measured+calibrated-model"


@per_catalog(maxsize=256)  # the plan view draws the same frontier for every user count and price
def frontier(d: Deployment, w: Workload, catalog: Catalog | None = None, *, points: int = 24) -> Frontier:
    """Throughput per GPU vs tokens/s per user as concurrency sweeps from 1 to what memory holds."""
    catalog = catalog or load_catalog()
    ctx = _Context(catalog, d, w)
    top = min(ctx.max_concurrency(), ctx.max_running * ctx.dp)
    levels = sorted({max(1, round(top ** (i / max(points - 1, 1)))) for i in range(points)})
    estimates = [_estimate(ctx, c) for c in levels]
    profile = find_profile(catalog, ctx.mp, w)
    if profile is not None:
        estimates = [_with_profile(ctx, e, profile) for e in estimates]
    return Frontier(
        model=ctx.mp.result.model, accelerator=ctx.mp.result.accelerator, gpus=ctx.gpus,
        input_len=w.input_len, output_len=w.output_len, max_concurrency=ctx.max_concurrency(),
        points=tuple(
            FrontierPoint(concurrency=e.concurrency, output_tokens_per_s_per_user=e.output_tokens_per_s_per_user,
                          output_tokens_per_s_per_gpu=e.output_tokens_per_s_per_gpu, ttft_s=e.ttft_s, bound=e.bound)
            for e in estimates
        ),
        source=_sources({e.source for e in estimates}),
        assumptions=tuple(dict.fromkeys(a for e in estimates for a in e.assumptions)),
    )
