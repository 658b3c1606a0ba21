"""The serving curve: TTFT, TPOT and throughput of a deployment under a workload.

Steady state of continuous batching with chunked prefill: every iteration each running sequence
decodes (``tokens_per_step`` of them with speculative decoding) and the prefill of arriving
requests is fused in — each request brings its uncached input once per ``output_len`` decoded
tokens. Concurrency beyond what the KV cache holds is an error; beyond the engine's
``max_num_seqs`` requests queue, and the wait (Little's law in a closed loop) is added to TTFT.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from inferplan.catalog.loader import Catalog, load_catalog
from inferplan.errors import InferplanError, InvalidScenarioError
from inferplan.inputs.deployment import Deployment
from inferplan.inputs.workload import Workload
from inferplan.memory.hardware import with_default_engine
from inferplan.memory.context_cache import context_slots
from inferplan.memory.fit_held import planned_length
from inferplan.memory.resolve import resolve_model
from inferplan.memory.slots import most_slots
from inferplan.memory.suggest import longest_context
from inferplan.performance.context import ServingContext
from inferplan.performance.estimate import ServingEstimate, load_note, rate_note
from inferplan.performance.launch_match import run_launch, run_release, settings_differ
from inferplan.performance.local_runs import SOURCE as LOCAL_SOURCE
from inferplan.performance.local_runs import with_user_runs
from inferplan.performance.measured import MAX_QUOTES, matching_points, measured_quotes, quote_note
from inferplan.performance.notes import (FIXED_COST_CAVEAT, fixed_costs, graphs_note, hop_note, padding_note, prompt_note,
                                         queue_note, unpack_note)
from inferplan.performance.phases import StepTime, micro_batches, prefill
from inferplan.performance.profiles import anchor, find_profile, interpolate, profile_range
from inferplan.performance.run_record import MeasuredPoint, UserRun
from inferplan.performance.track_record import with_track_record
from inferplan.units import fmt_billions



def _lone_chunk_s(ctx: ServingContext, start: float, tokens: float) -> float:
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


def _lone_prompt_s(ctx: ServingContext) -> float:
    """A request's prompt with nothing else running: its chunks of the whole budget, each attending to what came before."""
    return sum(_lone_chunk_s(ctx, start, tokens) for start, tokens in
               prompt_chunks(ctx.uncached, ctx.w.input_len - ctx.uncached,
                             ctx.mp.settings.step_budget_tokens(ctx.w.input_len)))


def _first_token_s(ctx: ServingContext, prompt_s: float) -> float:
    """TTFT of a prompt that runs for ``prompt_s``: receiving, tokenising and scheduling it first, and loading its
    host-tier hits."""
    return prompt_s + (ctx.rates.request_overhead_s + ctx.host_kv_load_s)


@dataclass(frozen=True)
class Figures:
    """The numbers of ``estimate_at``'s answer without its wording (assumptions, track record, quoted points),
    each the same float the estimate carries: what a serving curve reads off the speed model."""

    concurrency: int
    running_per_instance: int
    ttft_s: float
    tpot_s: float
    prefill_s: float
    output_tokens_per_s_total: float
    tokens_per_step: float
    engine: str

    @classmethod
    def of(cls, e: ServingEstimate) -> Figures:
        return cls(e.concurrency, e.running_per_instance, e.ttft_s, e.tpot_s, e.prefill_s, e.output_tokens_per_s_total,
                   e.tokens_per_step, e.engine)


def _core(ctx: ServingContext, concurrency: int) -> tuple[int, int, float, float, float, StepTime]:
    """(requests per instance, running, TTFT, TPOT, output tokens/s in all, the cycle's telling step) at ``concurrency``."""
    w = ctx.w
    if concurrency > ctx.max_concurrency():
        raise InvalidScenarioError(
            f"concurrency {concurrency} does not fit: the KV cache holds {ctx.max_concurrency()} requests of "
            f"{w.input_len}+{w.output_len} tokens on this deployment"
            + ctx.slots_note(),
            field="concurrency",
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
    if running == 1:  # alone: its prompt in chunks of the whole budget (nothing else decodes)
        ttft = _lone_prompt_s(ctx)
    else:  # whole chunks of the budget, then what is left in one more iteration
        chunk = ctx.chunk_budget(running)
        whole, rest = divmod(max(ctx.uncached, 1.0), chunk)
        ttft = whole * ctx.chunk_round_s(running - 1, chunk) + (ctx.chunk_round_s(running - 1, rest) if rest > 1e-6 else 0.0)
    ttft = _first_token_s(ctx, ttft)
    # each sequence also spends that time before its prompt runs, so a closed loop's cycle is longer by it
    output_instance = running * w.output_len / (cycle + ctx.rates.request_overhead_s)
    if per_instance > running:  # queued requests wait their turn (closed loop, Little's law)
        loop = per_instance * w.output_len / output_instance
        ttft += max(loop - (ttft + w.output_len * tpot), 0.0)
    # the requests that exist, each at the busiest instance's rate: fewer requests than instances
    # leave some idle (DP ranks in lock-step run at the busiest one's pace anyway)
    total = output_instance * concurrency / per_instance
    return per_instance, running, ttft, tpot, total, step


def figures_at(ctx: ServingContext, concurrency: int) -> Figures:
    """``estimate_at(ctx, concurrency)``'s numbers alone (``Figures``), its wording left out."""
    _, running, ttft, tpot, total, _ = _core(ctx, concurrency)
    return Figures(concurrency, running, ttft, tpot, ttft - ctx.rates.request_overhead_s, total, ctx.tau,
                   ctx.mp.result.engine)


def estimate_at(ctx: ServingContext, concurrency: int) -> ServingEstimate:
    w, d, fit = ctx.w, ctx.d, ctx.mp.result
    per_instance, running, ttft, tpot, total, step = _core(ctx, concurrency)
    assumptions = [*fit.assumptions, *ctx.rates.notes, *ctx.work.notes]
    if per_instance > running:
        assumptions.append(f"{per_instance:,} requests per instance, {running:,} running at once (the engine's limit): the "
                           "rest queue, so tokens/s per user is the rate while a request runs, and the wait is in TTFT; "
                           "the total counts every request's share of the queue")
    if w.speculative_tokens and ctx.pp > 1:
        assumptions.append("speculative decoding with pipeline parallelism: every micro-batch drafts on the last stage; "
                           "engine support for the combination varies by build (check yours)")
    if w.speculative_tokens:
        assumptions.append(f"speculative decoding: {w.speculative_tokens} draft tokens at {ctx.acceptance.text} → "
                           f"{ctx.tau:.2f} tokens per step; {_draft_cost(ctx)}")
    assumptions.extend(ctx.network_notes)
    if ctx.pp > 1:
        assumptions.append(hop_note(ctx, running))
    if w.prefix_cache_hit_rate and not w.prompt_from_prefill_pool:  # a decode pool's prompt is handed over
        assumptions.append(f"prefix cache: {w.prefix_cache_hit_rate:.0%} of input tokens skip prefill compute")
    if (note := graphs_note(ctx.catalog.engine(d.engine), d.enforce_eager, ctx.requests_per_micro_batch(running),
                            ctx.mp.settings.graph_batch)) is not None:
        assumptions.append(note)
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
        tokens_per_step=ctx.tau, acceptance_rate=ctx.acceptance.rate if ctx.acceptance else None,
        bound=step.bound, source="calibrated-model",
        compute_dtype=ctx.rates.compute_dtype, assumptions=tuple(dict.fromkeys(assumptions)),
        queue_note=queue_note(ctx, concurrency, per_instance, running),
    )


def concurrency_for(ctx: ServingContext, w: Workload) -> int:
    if w.concurrency == "max":
        return min(ctx.max_concurrency(), ctx.max_running * ctx.dp)
    return int(w.concurrency)


def with_profile(ctx: ServingContext, est: ServingEstimate, profile) -> ServingEstimate:
    low, high = profile_range(profile)
    if low <= est.concurrency <= high:
        return interpolate(profile, est)
    edge = low if est.concurrency < low else high
    if edge > ctx.max_concurrency():
        return est
    return anchor(profile, est, estimate_at(ctx, edge))


def user_run_estimate(ctx: ServingContext, est: ServingEstimate, user_runs: tuple[UserRun, ...],
                       stated: Deployment | None = None) -> ServingEstimate:
    """``est`` from the user's own matching run, if any (``local_runs.py``); its engine settings compared with
    ``stated``'s, the deployment as asked (default ``ctx.d``), and the model at a measured point taken at the run's
    own launch: its settings and engine release."""
    def model_at(run: UserRun, p: MeasuredPoint) -> ServingEstimate | None:
        try:
            w = ctx.w.model_copy(update={"input_len": max(p.input_tokens, 1), "output_len": max(p.output_tokens, 1),
                                         "concurrency": p.concurrency})
            launch = run_launch(ctx.d, run, run_release(ctx.catalog, ctx.d, run.engine_version), stated=stated)
            return estimate_at(ServingContext(ctx.catalog, launch, w), p.concurrency)
        except InferplanError:
            return None

    par = ctx.mp.result.parallel
    return with_user_runs(ctx.catalog, est, user_runs, d=ctx.d, tp=par.tensor_parallel_size, input_len=ctx.w.input_len,
                          output_len=ctx.w.output_len, model_at=model_at,
                          differ=lambda run: settings_differ(ctx.catalog, ctx.d, run, stated=stated), parallel=par)


MAX_SLOTS = 512  # the most llama.cpp slots 'max' concurrency tries


def _slots_for_load(d: Deployment, w: Workload, catalog: Catalog) -> tuple[Deployment, str | None]:
    """An engine that serves the slots it is started with (llama-server's ``--parallel``, each slot
    ``max_model_len`` of the cache) and none stated: planned as started for the asked concurrency —
    that many slots, or at 'max' the most that fit (``memory/slots.py``) — and said so."""
    if d.max_num_seqs is not None or w.concurrency == 1 or context_slots(catalog, d, catalog.engine(d.engine).id) is None:
        return d, None
    slots = most_slots(d, catalog, MAX_SLOTS) if w.concurrency == "max" else int(w.concurrency)
    if not slots or slots <= 1:
        return d, None
    # none fits: the memory plan's own refusal (GPUs, host RAM) names what to change, not the concurrency
    if w.concurrency != "max" and (most := most_slots(d, catalog, slots)) and most < slots:
        raise InvalidScenarioError(  # the concurrency asked is what does not fit, not a cap the user never gave
            f"concurrency {slots} needs llama-server started with {slots} slots of max_model_len each, and only "
            f"{most} fit{_slot_lengths(d, w, catalog, slots)}", field="concurrency", allowed=f"1..{most} or max")
    return d.model_copy(update={"max_num_seqs": slots}), (
        f"{catalog.engine(d.engine).name} started with {slots} slots for {slots} requests at once (--parallel {slots}; "
        f"no max_num_seqs stated), each holding max_model_len of the cache")


def _slot_lengths(d: Deployment, w: Workload, catalog: Catalog, slots: int) -> str:
    """The context each slot was planned with (stated, or the model's own), and the longest shorter one at which
    ``slots`` slots fit, where that still holds one request of the workload."""
    length = planned_length(d, resolve_model(catalog, d.model), None)
    given = "" if d.max_model_len else " (the model's own: no max_model_len stated)"
    shorter = longest_context(d.model_copy(update={"max_num_seqs": slots}), catalog, length)
    request = w.input_len + w.output_len
    at = (f"; {slots} fit at max_model_len {shorter:,}" if shorter >= request else
          f"; no max_model_len that holds a {request:,}-token request fits {slots}")
    return f" at max_model_len {length:,}{given}{at}"


def estimate(d: Deployment, w: Workload, catalog: Catalog | None = None, *, use_profiles: bool = True,
             user_runs: tuple[UserRun, ...] = ()) -> ServingEstimate:
    """Speed of one deployment under one workload: the user's own measured run where one matches
    (``user_runs``, source ``measured-local``), else a measured profile where one matches (anchoring
    the model outside its range), else the calibrated model with its family's track record; and the
    published points of this deployment quoted beside it. ``use_profiles=False``: the calibrated
    model alone, as validation scores it (no run, no profile, no quoted points)."""
    catalog = catalog or load_catalog()
    stated = with_default_engine(d, catalog)
    d, slots_note = _slots_for_load(stated, w, catalog)
    return _estimate_in(ServingContext(catalog, d, w), stated, slots_note, use_profiles, user_runs)


class EstimateSweep:
    """``estimate`` (without the user's own runs) of one deployment under many workloads, each answer as
    ``estimate`` gives it: the deployment's pieces (memory plan, rates, model work) built once for each
    deployment the engine runs — the slots it is started with follow the concurrency on an engine that sizes
    its context per slot — and reused for every workload that changes only the request (``with_workload``)."""

    def __init__(self, catalog: Catalog, *, use_profiles: bool = True):
        self.catalog, self.use_profiles = catalog, use_profiles
        self._started: dict[tuple[int, int | str], tuple] = {}  # by (deployment asked, concurrency); each object held
        self._contexts: dict[int, tuple[Deployment, ServingContext]] = {}  # by deployment started
        self._figures: dict[tuple, Figures] = {}  # by deployment started, workload type, concurrency and the rest of the workload

    def at(self, d: Deployment, w: Workload) -> ServingEstimate:
        ctx, stated, _, slots_note = self._context(d, w)
        return _estimate_in(ctx, stated, slots_note, self.use_profiles, ())

    def figures(self, d: Deployment, w: Workload) -> Figures:
        """``at(d, w)``'s numbers (``Figures``): the calibrated model's without building its wording, unless a
        measured profile of the deployment answers (then the profile's, from the whole estimate)."""
        ctx, stated, started, slots_note = self._context(d, w)
        if self.use_profiles and find_profile(ctx, stated)[0] is not None:
            return Figures.of(_estimate_in(ctx, stated, slots_note, True, ()))
        concurrency = concurrency_for(ctx, w)  # 'max' and the number it comes to are one answer
        key = (id(started), type(w), concurrency, *(value for name, value in w if name != "concurrency"))
        if key not in self._figures:
            self._figures[key] = figures_at(ctx, concurrency)
        return self._figures[key]

    def lone_prefill_s(self, d: Deployment, w: Workload) -> float:
        """``figures(d, w).prefill_s`` of a workload of one request in flight, its prompt alone timed: what a lone
        prompt takes, read without the request's decode steps."""
        ctx, stated, _, _ = self._context(d, w)
        if concurrency_for(ctx, w) != 1 or self.use_profiles and find_profile(ctx, stated)[0] is not None:
            return self.figures(d, w).prefill_s
        return _first_token_s(ctx, _lone_prompt_s(ctx)) - ctx.rates.request_overhead_s

    def _context(self, d: Deployment, w: Workload) -> tuple[ServingContext, Deployment, Deployment, str | None]:
        """The context of ``d`` under ``w`` as the engine starts it, the deployment as asked, as started and the
        slots' note."""
        key = (id(d), w.concurrency)
        if key not in self._started:  # the engine as asked and as started depend on the concurrency alone
            stated = with_default_engine(d, self.catalog)
            self._started[key] = (d, stated, *_slots_for_load(stated, w, self.catalog))
        _, stated, started, slots_note = self._started[key]
        if id(started) in self._contexts:
            ctx = self._contexts[id(started)][1].with_workload(w)
        else:
            ctx = ServingContext(self.catalog, started, w).remember_steps()
            self._contexts[id(started)] = (started, ctx)
        return ctx, stated, started, slots_note


def _estimate_in(ctx: ServingContext, stated: Deployment, slots_note: str | None, use_profiles: bool,
                 user_runs: tuple[UserRun, ...]) -> ServingEstimate:
    """``estimate``'s answer from its context: ``stated`` is the deployment as asked, its engine named."""
    catalog, w = ctx.catalog, ctx.w
    model_estimate = estimate_at(ctx, concurrency_for(ctx, w))
    if slots_note:
        model_estimate = model_estimate.model_copy(update={"assumptions": (*model_estimate.assumptions, slots_note)})
    if use_profiles and user_runs and w.speculative_tokens == 0 and w.prefix_cache_hit_rate == 0:
        local = user_run_estimate(ctx, model_estimate, user_runs, stated)
        if local.source == LOCAL_SOURCE:
            return with_measured_points(ctx, local)
    profile, skipped = find_profile(ctx, stated) if use_profiles else (None, ())
    result = model_estimate if profile is None else with_profile(ctx, model_estimate, profile)
    result = result.model_copy(update={"assumptions": (*result.assumptions, *skipped)}) if skipped else result
    if result.source != "measured":
        result = with_track_record(catalog, ctx.rates.family, result, offloaded=ctx.mp.offload is not None)
    result = with_measured_points(ctx, result) if use_profiles else result
    m = ctx.mp.result  # its notes, and the weight placement it runs (chosen by llama-server --fit for an Ollama tag)
    result = result.model_copy(update={"layout_note": m.layout_note, "build_note": m.build_note, "n_gpu_layers": m.n_gpu_layers,
                                       "n_cpu_moe": m.n_cpu_moe, "placement_chosen_by": m.placement_chosen_by,
                                       "placement_note": m.placement_note})
    return result.model_copy(update={"rate_note": rate_note(result, ctx.dp), "load_note": load_note(result)})


def with_measured_points(ctx: ServingContext, est: ServingEstimate) -> ServingEstimate:
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


def _draft_cost(ctx: ServingContext) -> str:
    """What a draft token costs, as ``ServingContext.draft_s`` prices it: nothing for n-gram matching, else its
    share of a step (``ModelWork.draft_cost_ratio``) and what that share stands for."""
    if ctx.d.speculative_method == "ngram":
        return "n-gram drafts cost no GPU time (matched over the sequence's own tokens on the host, no draft model)"
    work = ctx.work
    share = f"each draft token costs {work.draft_cost_ratio:.3f} of a step"
    if work.draft_active_params:
        return (f"{share} (of its maths: a forward of draft model {ctx.d.draft_checkpoint}, {fmt_billions(work.draft_active_params)} "
                f"active parameters over the target's {fmt_billions(work.active_params)}; and the kernel launches of its "
                f"{work.draft_layers} decoder layers)")
    return f"{share} (one decoder layer and the lm_head, as MTP and EAGLE heads are built)"
