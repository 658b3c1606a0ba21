"""The context of a speed estimate: everything one deployment under one workload fixes before
any concurrency is chosen (memory plan, calibrated rates, model work, batch limits), and the step
and round times built from them. ``serving.py`` sweeps concurrency over one context; ``notes.py``
words its figures; ``economics`` and ``validation`` reuse one across many concurrencies."""

from __future__ import annotations

import copy

from inferplan.catalog.loader import Catalog
from inferplan.errors import InvalidScenarioError
from inferplan.inputs.deployment import Deployment
from inferplan.inputs.workload import Workload
from inferplan.memory.context_cache import context_slots
from inferplan.memory.fit import MemoryPlan, plan_memory
from inferplan.memory.mtp import with_unnamed_drafts
from inferplan.memory.refusal import refuse_unfit
from inferplan.memory.step_budget import check_step_budget
from inferplan.performance.drafts import Acceptance, check_drafts_priced, resolve_acceptance
from inferplan.performance.network import network_notes
from inferplan.performance.phases import StepTime, decode_step
from inferplan.performance.offload import host_kv_load_s
from inferplan.performance.rates import Rates, check_backend, rates_for
from inferplan.performance.work import ModelWork, model_work, with_draft_model


def tokens_per_step(k: int, acceptance: float) -> float:
    """Expected tokens a sequence advances per verify step with ``k`` draft tokens."""
    if k == 0:
        return 1.0
    if acceptance >= 1:
        return k + 1.0
    return (1 - acceptance ** (k + 1)) / (1 - acceptance)


class ServingContext:
    """The pieces one estimate needs, computed once and reused across a concurrency sweep: the
    deployment as the engine runs it (``d``), the workload (``w``), the memory plan (``mp``), the
    calibrated rates (``rates``), the model's work per token (``work``) and the batch limits that
    follow from them, with the step and round times built from those pieces."""

    def __init__(self, catalog: Catalog, d: Deployment, w: Workload):
        self._asked = d
        request = w.input_len + w.output_len
        self._sized_for_request = sized_for_request = d.max_model_len is None
        if sized_for_request:  # no max_model_len stated: the engine is sized for this request
            d = d.model_copy(update={"max_model_len": request})
        check_drafts_priced(d, w)
        d = with_unnamed_drafts(catalog, d, w.speculative_tokens)  # as deploy launches them: MTP layers, else ngram
        # the drafts' acceptance rate: the stated one, else the draft's published one, else the default
        self.acceptance: Acceptance | None = resolve_acceptance(catalog, d, w.acceptance_rate) if w.speculative_tokens else None
        self.catalog, self.d, self.w = catalog, d, w
        try:
            check_step_budget(d, catalog)  # a longest prompt the engine refuses, as fit and the launch refuse it
            self.mp: MemoryPlan = plan_memory(d, catalog)
        except InvalidScenarioError as exc:
            if sized_for_request and exc.field == "max_model_len":  # the request itself is too long
                raise InvalidScenarioError(f"a request of {w.input_len:,} + {w.output_len:,} tokens: {exc}",
                                           field="input_len", allowed=exc.allowed) from None
            raise
        fit = self.mp.result
        if d.engine != fit.engine:  # a name such as "SGLang" or "llama.cpp": carry the catalogue id
            self.d = d = d.model_copy(update={"engine": fit.engine})
        refuse_unfit(fit, d, catalog)
        self._check_request()
        record = catalog.engine(d.engine)
        check_backend(record, w.backend, self.mp.accelerator,
                      tuple(e for e in catalog.engines if e.backends))
        self.backend = backend = w.backend or record.default_backend(self.mp.accelerator.software)
        self.rates: Rates = rates_for(catalog, self.mp.accelerator, self.mp.gpu_format, d.engine, backend,
                                     self.mp.hardware, self.mp.kv_dtype.id, fit.engine_release)
        self.work: ModelWork = with_draft_model(model_work(self.mp, catalog), catalog, d.draft_checkpoint)
        self.network_notes = network_notes(self.mp, self.work, self.rates)
        par = fit.parallel
        self.dp, self.pp, self.gpus = par.data_parallel_size, par.pipeline_parallel_size, par.gpus
        # micro-batches of a round that each get the engine's batch limits: every one of the pp under
        # an engine that holds each micro-batch to them (TensorRT-LLM), else the round shares one set
        self.limited_batches = self.pp if self.mp.settings.limits_per_micro_batch else 1
        # llama.cpp runs the --parallel slots it is started with (max_num_seqs, else one), each holding
        # max_model_len of the cache: those, not the memory left over, are what it serves at once
        self.started_slots = context_slots(catalog, d, fit.engine)
        self._steps: dict | None = None  # iterations already timed, once ``remember_steps`` turns it on
        self._fill_workload()

    def with_workload(self, w: Workload) -> ServingContext:
        """The context of the same deployment under ``w``, as ``ServingContext(catalog, d, w)`` builds it: the
        deployment's pieces (memory plan, rates, model work) reused where ``w`` drafts, picks its back end and
        sizes the engine's context as this one's workload does, else built anew."""
        same = (w.speculative_tokens, w.acceptance_rate, w.backend) == \
            (self.w.speculative_tokens, self.w.acceptance_rate, self.w.backend)
        if not same or (self._sized_for_request and w.input_len + w.output_len != self.w.input_len + self.w.output_len):
            return ServingContext(self.catalog, self._asked, w)
        ctx = copy.copy(self)
        ctx.w = w
        ctx._check_request()
        ctx._fill_workload()
        return ctx

    def _check_request(self) -> None:
        """Refuse a request longer than the context the engine serves the model at."""
        w, fit, request = self.w, self.mp.result, self.w.input_len + self.w.output_len
        if fit.max_model_len < request:
            if self._sized_for_request or fit.max_model_len < self.d.max_model_len:  # the engine caps its context below it
                raise InvalidScenarioError(
                    f"a request of {w.input_len:,} + {w.output_len:,} tokens is longer than the {fit.max_model_len:,} "
                    f"tokens {fit.engine} serves {fit.model} at", field="input_len",
                    allowed=f"input + output at most {fit.max_model_len:,} tokens")
            raise InvalidScenarioError(
                f"max_model_len {fit.max_model_len} is shorter than one request ({w.input_len} + {w.output_len} tokens): "
                "the engine would refuse it", field="max_model_len", allowed=f"at least {request}")

    def _fill_workload(self) -> None:
        """The pieces that follow the workload: uncached prompt, host-tier loads, tokens per step, batch limits."""
        w, d = self.w, self.d
        self.uncached = w.input_len * (1 - w.prefix_cache_hit_rate)
        self.host_kv_load_s = host_kv_load_s(self.mp, w, self.catalog, d.host_memory_bandwidth_gb_per_s)  # from a host KV tier
        self.tau = tokens_per_step(w.speculative_tokens, self.acceptance.rate) if self.acceptance else 1.0
        self.kv_limit = self.mp.layout.sequences_held(self.mp.result.kv_cache_bytes_per_gpu, w.input_len + w.output_len,
                                                      self.mp.settings.block_tokens)
        fit = self.mp.result
        if fit.state_running_cap is not None:  # a hybrid model's state slots apart (memory/state_pool.py): the
            block = self.mp.settings.block_tokens  # attention pool's tokens hold the sequences
            self.kv_limit = fit.kv_cache_tokens // (-(-(w.input_len + w.output_len) // block) * block)
        started, cells = self.started_slots, fit.unified_cache_cells
        if started is not None:  # the slots, each its own cache; or as many requests as one unified cache's cells hold
            self.kv_limit = started if cells is None else min(started, cells // (w.input_len + w.output_len))
        # the engine's running cap, or the state slots' where lower (memory/running_cap.py): the rest queue
        self.max_running = min(self.kv_limit, fit.running_cap)
        if self.max_running < 1:
            raise InvalidScenarioError(
                f"no room in the KV cache for one request of {w.input_len}+{w.output_len} tokens",
                field="input_len",
            )

    def max_concurrency(self) -> int:
        return self.kv_limit * self.dp

    def slots_note(self) -> str:
        """Why an engine started with a context per slot holds no more: its slots, or the one cache they share."""
        if self.started_slots is None:
            return ""
        cells = self.mp.result.unified_cache_cells
        if cells is None:
            return " (the slots it is started with: max_num_seqs)"
        return f" ({self.started_slots} slots sharing one {cells:,}-cell cache)"

    def iteration(self, batch: int, prefill_tokens: float) -> tuple[StepTime, float]:
        """A stage's step (its average: its bound and draft cost) and the round in which each of the
        batch's pipeline micro-batches advances one step. With ``pp`` stages the batch runs as up to
        ``pp`` micro-batches, and the round takes the longer of one micro-batch passing every stage
        (its ``pp − 1`` stage boundaries included: ``boundary_host_s``) and the slowest stage (the last: it runs
        the lm_head) working through all of them."""
        if self._steps is None:
            return self._iteration(batch, prefill_tokens)
        key = (batch, prefill_tokens, self.w.input_len + self.w.output_len / 2, self.w.speculative_tokens)
        if key not in self._steps:
            self._steps[key] = self._iteration(batch, prefill_tokens)
        return self._steps[key]

    def _iteration(self, batch: int, prefill_tokens: float) -> tuple[StepTime, float]:
        shape = self._step_shape(max(batch / self.pp, 1e-9), prefill_tokens / self.pp)
        step = decode_step(self.work, self.mp.layout, self.rates, **shape)
        if self.pp == 1:
            return step, step.seconds
        last = decode_step(self.work.last_stage(), self.mp.layout, self.rates, **shape)
        trip = self.pp * step.seconds + self.boundary_host_s(self.requests_per_micro_batch(batch))
        return step, max(trip, self.micro_batches_in_flight(batch) * last.seconds)

    def remember_steps(self) -> ServingContext:
        """This context, its ``iteration`` answers kept from now on and shared by the contexts ``with_workload``
        makes of it (a step is a pure function of the deployment's pieces and the step's shape): for a sweep
        that asks the same step of several workloads, and changes none of the pieces (``rates``, ``work``)."""
        self._steps = {}
        return self

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
        budget = self.mp.settings.step_budget_tokens(self.w.input_len) * self.limited_batches
        return max(budget - running * (self.w.speculative_tokens + 1), 1)

    def chunk_budget(self, running: int) -> float:
        """The largest prompt chunk a new request, one of ``running``, gets in one round: the round's
        budget; where each micro-batch has its own, the one it rides less the others' share of it."""
        if self.limited_batches == 1:
            return self.round_budget(running)
        share = self.requests_per_micro_batch(running - 1) if running > 1 else 0
        return max(self.mp.settings.step_budget_tokens(self.w.input_len) - share * (self.w.speculative_tokens + 1), 1)

    def boundary_host_s(self, requests: float) -> float:
        """One micro-batch of ``requests`` crossing the ``pp − 1`` stage boundaries: the engine's
        host work per request at each (TensorRT-LLM's pipeline loop runs it between micro-batches,
        not beside the GPU; fitted, docs/speed.md), on top of the stages' GPU time."""
        return (self.pp - 1) * self.rates.pipeline_hop_s_per_request * requests

    def draft_s(self, step: StepTime, batch: float = 1) -> float:
        """The draft tokens' time per round: each costs a share of a whole-model step, which under
        pipeline parallelism is every stage's (``step`` is one stage's), and every micro-batch of the
        round drafts its own on the last stage. A separate draft model's token costs its share of the step's
        maths and the kernel launches of its own decoder layers (not the step's fixed and per-sequence costs). N-gram
        drafting runs no model: it matches the sequence's last tokens against its earlier ones on the host
        (vllm-project/vllm vllm/v1/spec_decode/ngram_proposer.py, numba over token arrays), so no GPU time."""
        if not self.w.speculative_tokens or self.d.speculative_method == "ngram":
            return 0.0
        in_flight = self.micro_batches_in_flight(batch)
        if self.work.draft_active_params:  # a draft model's forward: its share of the maths, its own layers' launches
            per_token = ((step.seconds - step.overhead_s) * self.work.draft_cost_ratio * self.pp
                         + self.rates.layer_overhead_s * self.work.draft_layers)
            return self.w.speculative_tokens * per_token * in_flight
        return self.w.speculative_tokens * self.work.draft_cost_ratio * self.pp * step.seconds * in_flight
