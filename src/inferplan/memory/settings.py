"""The batch limits and memory fraction an engine runs a deployment with: stated, else the defaults
of ``engines.yaml`` — by the GPU's memory where the engine picks them so (vLLM's 70 GiB switch,
SGLang's tiers and the fraction it derives from them, lowered where its default attention backend on
the GPU's software stack asks for it) — except where the engine release's memory rule sets them (vLLM V0 profiles a batch of the whole ``max_model_len`` and defaults to 256
sequences; vLLM from 0.20 defaults to a fraction of 0.92; SGLang before 0.4.7 took a fixed fraction by TP size and its
chunk by release, a prompt whole before 0.2.13; SGLang changes its tiers from 0.5.20, keeps memory out for the prefill CUDA graphs it captures by default from 0.5.10
(``memory/prefill_graphs.py``), caps the CUDA-graph batch its fraction reserves for at a stated max_num_seqs from 0.5.22
and sets the running requests itself with a speculative draft or for an architecture when none is stated:
``memory/release_running.py``). Without a stated max_num_seqs, or one a release sets itself, the requests a release
runs at once are its rule's ``running_defaults`` where it states them (mlx-lm's 32, one at a time before its batching
and with a draft; SGLang's from the KV pool it sized, ``pool_running_requests``, applied by ``fit`` once the pool is
known)."""

from __future__ import annotations

from inferplan.catalog.architecture import Architecture
from inferplan.catalog.engine_tiers import FractionScale, attention_dp_chunk, tier_for
from inferplan.catalog.memory_rules import MemoryRule, parse_engine_version
from inferplan.catalog.schema import Accelerator
from inferplan.errors import InvalidScenarioError
from inferplan.inputs.deployment import Deployment
from inferplan.memory.cuda_graphs import capture_sizes
from inferplan.memory.budget_settings import EngineSettings
from inferplan.memory.prefill_graphs import PrefillCapture
from inferplan.memory.release_running import release_running, release_running_cause, release_running_note
from inferplan.memory.state_pool import attention_dp_ranks, draft_named
from inferplan.units import GiB


def engine_settings(d: Deployment, engine, accel: Accelerator, total_bytes: float, rule: MemoryRule | None = None,
                     max_len: int | None = None, *, tp: int = 1, pp: int = 1,
                     scale: FractionScale | None = None, draft_reserve_bytes: float = 0.0,
                     prefill: PrefillCapture | None = None, arch: Architecture | None = None) -> EngineSettings:
    """The engine's batch limits and fraction: stated, else the defaults of engines.yaml for a GPU of
    ``total_bytes`` in an instance of ``tp`` x ``pp`` GPUs (times ``scale``, the factor its attention
    backend applies: ``fraction_scale``), except where the release's rule sets them (a V0 profile batch
    of max_model_len tokens, V0's 256 sequences); ``draft_reserve_bytes``: what the engine keeps besides
    outside a fraction it picks while a speculative draft runs; ``prefill``: the prefill CUDA graphs it captures
    by default, whose memory a fraction it picks keeps out; ``arch``: the model's, whose running requests a release
    may set."""
    if d.model_runner is not None and (rule is None or rule.model_runners is None):
        raise InvalidScenarioError(f"{engine.name}'s memory rule {rule.label if rule else ''} names no model-runner choice: "
                                   "the runner is modelled for vLLM 0.20.0 and later", field="model_runner",
                                   allowed="leave it out, or an engine_version of vLLM 0.20.0 or later")
    if d.model_runner is not None and d.model_runner.upper() == "V1" and rule.model_runners.v2_only:
        raise InvalidScenarioError(f"{rule.label} has no Model Runner V1", field="model_runner",
                                   allowed="leave it out, V2, or an engine_version of vLLM 0.20.0-0.33.0")
    if (d.other_gpu_memory_gb or 0.0) * GiB >= total_bytes:  # nothing would be left for the engine at all
        raise InvalidScenarioError(f"{d.other_gpu_memory_gb:g} GiB held by other processes leaves nothing of {accel.name}'s "
                                   f"{total_bytes / GiB:.2f} GiB", field="other_gpu_memory_gb",
                                   allowed=f"less than {total_bytes / GiB:.2f}, each GPU's memory in GiB")
    large = (engine.large_gpu_bytes is None or total_bytes >= engine.large_gpu_bytes.value) and (
        accel.record_id not in engine.small_default_accelerators
    )
    at, defaults = (rule.planned_release(d.engine_version), rule.gpu_memory_defaults) if rule else (None, None)
    tier = tier_for(defaults.tiers_at(at, engine.defaults_by_gpu_memory) if defaults else engine.defaults_by_gpu_memory,
                    total_bytes)
    # a release that runs a prompt whole (no chunked prefill by default) steps through the longest one at once
    whole = bool(tier and defaults and not defaults.chunks_prompts(at) and not d.max_num_batched_tokens)
    tier_tokens = tier and (max(tier.max_num_batched_tokens, max_len or 0) if whole else tier.max_num_batched_tokens)
    stated = d.max_num_batched_tokens and (  # divided as the release divides its default on these GPUs (SGLang 0.3.6)
        max(d.max_num_batched_tokens // tier.stated_chunk_divisor, 1) if tier and tier.stated_chunk_divisor
        else d.max_num_batched_tokens)
    mnbt = stated or rule_batch_tokens(rule, max_len) or tier_tokens or \
        _value(engine.max_num_batched_tokens if large else engine.small_gpu_max_num_batched_tokens, 2048)
    # SGLang sets its running requests itself while a speculative draft runs, or for an architecture, draft or not
    # (the server's total, divided over its DP attention ranks as a stated total is), after the tier's graph batch
    released = release_running(d, engine.name, rule, at, arch)
    # else the release's own running default (MLX's batch of 32, one at a time with a draft; SGLang's from the
    # pool it sizes: running_from_pool, applied once the pool is known)
    running = rule.running_default(d.engine_version) if rule and not d.max_num_seqs and not released else None
    fixed = running and not running.from_pool and (running.with_draft if draft_named(d) and running.with_draft
                                                   else running.running_requests)
    default_seqs = (released and released.per_rank) or fixed or (
        rule.max_num_seqs_default if rule and rule.max_num_seqs_default
        else _value(engine.max_num_seqs if large else engine.small_gpu_max_num_seqs, 256))
    seqs = d.max_num_seqs or min(default_seqs, mnbt)
    # a reported total the engine's cap is read from (MLX: Metal's working set, measured, by the Mac's size, or the
    # stated wired limit) takes its own fraction
    working_set = accel.software.value == "metal" and engine.metal_working_set is not None
    reported = engine.memory_fraction_of_reported \
        if accel.memory_reported_bytes is not None or d.wired_limit_mb or working_set else None
    release_frac = rule.default_fraction(d.engine_version, tp, total_bytes, pp) if rule else None
    sizing = rule.measured_sizing if rule else None
    sized_off = sizing.switched_off_by(d) if sizing else None
    # a pool's KV connector the engine turns the measured sizing off with, where the switch is left to it
    # (refused with it on the software stack, or falling back with it on the runtime the platform comes as)
    refused = sizing.off_with_connector(accel.software, d.kv_connector) \
        if sizing and d.enable_extensible_kv_cache is None and d.kv_connector else None
    if sizing and (not sizing.used_on(accel.software) or sized_off or refused):  # not measured
        release_frac = sizing.fraction_where_off
    # SGLang from 0.5.22 captures no decode graph past a stated --max-running-requests (whole servers only: under
    # data parallelism the flag may be the total over the ranks, and the tier's batch is kept)
    seqs_cap = d.max_num_seqs if defaults and defaults.caps_graph_batch(at) and (d.data_parallel_size or 1) == 1 else None
    frac = d.gpu_memory_utilization or (reported.value if reported is not None else release_frac or
                                        _default_fraction(engine, tier, total_bytes, int(mnbt), tp, pp, draft_reserve_bytes,
                                                          seqs_cap, prefill.reserve_bytes(int(mnbt)) if prefill else 0.0))
    if scale is not None:  # the engine lowers the fraction it is given as well as its own
        frac *= scale.scale.value
    if d.ubatch_size and engine.prefill_micro_batch_tokens is None:
        raise InvalidScenarioError(f"{engine.name} runs a prompt chunk as one batch: ubatch_size is llama.cpp's n_ubatch",
                                   field="ubatch_size", allowed="leave it out, or max_num_batched_tokens for the chunk",
                                   names=("ubatch_size", "max_num_batched_tokens"))
    # each DP attention rank's step: the chunk divided as the release divides it, after its fraction is picked
    step = attention_dp_chunk(engine.attention_dp_chunk, at, attention_dp_ranks(d), int(mnbt))
    micro = min(int(d.ubatch_size or _value(engine.prefill_micro_batch_tokens, step)), step)  # n_ubatch <= n_batch
    block = rule.block_tokens if rule and rule.block_tokens else engine.block_tokens.value
    return EngineSettings(frac, step, int(seqs), int(block), micro,
                          limits_per_micro_batch=engine.pp_batch_limits == "per_micro_batch",
                          seqs_divided_over_micro_batches=engine.pp_batch_limits == "divided",
                          topk_topp_sampler=d.topk_topp_sampler, cuda_graphs=not d.enforce_eager,
                          graph_batch=None if d.enforce_eager or (defaults and defaults.graph_batch_not_tiers) else
                          _graph_batch(rule, tier, tp, seqs_cap, int(seqs), int(mnbt), 1 + d.speculative_tokens),
                          decode_query_len=1 + d.speculative_tokens,
                          other_gpu_memory_bytes=(d.other_gpu_memory_gb or 0.0) * GiB,
                          release=parse_engine_version(d.engine_version)[0] if d.engine_version else None,
                          model_runner=d.model_runner,
                          measured_sizing_off=sized_off.named(d) if sized_off else
                          refused.named(d.kv_connector) if refused else None,
                          kv_connector=d.kv_connector,
                          running_note=release_running_note(engine.name, at, released) if released else None,
                          running_cause=release_running_cause(engine.name, at, released) if released else None,
                          running_from_pool=running if running and running.from_pool else None,
                          fraction_stated=d.gpu_memory_utilization is not None,
                          whole_prompt_step_tokens=tier.max_num_batched_tokens if whole else None)


def pool_running_requests(settings: EngineSettings, pool_tokens: int, context_tokens: int) -> int | None:
    """The requests the engine runs at once per instance (each DP attention rank) where its release derives them
    from the KV pool it sized (``running_from_pool``: SGLang without a stated --max-running-requests): the pool's
    ``pool_tokens`` over the tokens per request, at most the request table for ``context_tokens``; None elsewhere."""
    running = settings.running_from_pool
    return running.pool_requests(pool_tokens, context_tokens) if running is not None and context_tokens else None


def pool_running_note(engine_name: str, settings: EngineSettings, pool_tokens: int, context_tokens: int,
                      micro_batches: int = 1) -> str:
    """How the release derived its running requests from the pool (``pool_running_requests``), divided over
    ``micro_batches`` pipeline micro-batches where it divides them."""
    running = settings.running_from_pool
    share = max(settings.max_num_seqs // micro_batches, 1)
    divided = (f" ({micro_batches} pipeline micro-batches of {share:,}: its {settings.max_num_seqs:,}-request cap "
               f"divided)" if micro_batches > 1 else "")
    table = running.request_table
    rows = f"max({pool_tokens:,} / {context_tokens:,} x {table.requests_per_pool_context}, {table.requests_floor})"
    rows = rows if table.requests_cap is None else f"min({rows}, {table.requests_cap})"
    extra = f" {'+' if table.extra_rows > 0 else '-'} {abs(table.extra_rows)}" if table.extra_rows else ""
    return (f"{engine_name} runs at most {min(share * micro_batches, settings.max_num_seqs):,} requests at once per instance{divided} when "
            f"--max-running-requests is not given: min({pool_tokens:,} pool tokens // "
            f"{running.pool_tokens_per_request}, a request table of {table.requests(pool_tokens, context_tokens):,} "
            f"requests = {rows}{extra}) "
            f"({', '.join(running.sources)}); the rest queue")


def _graph_batch(rule: MemoryRule | None, tier, tp: int, seqs_cap: int | None, max_num_seqs: int,
                 max_num_batched_tokens: int, decode_query_len: int) -> int | None:
    """The largest decode batch the engine captures as a CUDA graph, where its data states it (None: not
    stated): SGLang's tier batch for the GPU and TP size (``cuda_graph_max_bs``, capped at a stated running cap
    where the release caps it), vLLM's largest default capture size over the decode query length, on a
    rule that states its capture sizes. A decode step of more sequences runs without graphs."""
    if tier is not None:
        return min(tier.graph_batch(tp), seqs_cap or tier.graph_batch(tp))
    estimate = rule.cuda_graph_estimate if rule else None
    if estimate is None:
        return None
    sizes = capture_sizes(estimate.capture_sizes, max_num_seqs, max_num_batched_tokens, decode_query_len)
    return max(sizes) // decode_query_len if sizes else None


def rule_batch_tokens(rule: MemoryRule | None, max_len: int | None) -> int | None:
    """The batch a release profiles when max_num_batched_tokens is not stated, where its rule sets it
    (V0: the whole max_model_len, at least a floor, unless the engine turned chunked prefill on)."""
    profile = rule.activation if rule else None
    if profile is None or profile.profile_tokens != "max_model_len" or not max_len:
        return None
    if profile.chunked_prefill_above_tokens is not None and max_len > profile.chunked_prefill_above_tokens:
        return profile.chunked_prefill_tokens
    return max(max_len, profile.profile_tokens_floor or 1)


def _default_fraction(engine, tier, total_bytes: float, chunk_tokens: int, tp: int, pp: int,
                      draft_reserve_bytes: float = 0.0, seqs_cap: int | None = None, prefill_bytes: float = 0.0) -> float:
    """The fraction the engine picks itself: from its reserve for the chunk and CUDA-graph batch it
    runs on this GPU (SGLang's mem_fraction_static), else its one stated default. ``seqs_cap``: the
    running requests that cap the graph batch, where the release caps it; ``prefill_bytes``: its prefill graphs' term."""
    reserve = engine.memory_fraction_reserve
    if reserve is None or tier is None:
        return _value(engine.memory_fraction, 1.0)
    batch = min(tier.graph_batch(tp), seqs_cap or tier.graph_batch(tp))
    return reserve.fraction(total_bytes, chunk_tokens, batch, tp * pp, draft_reserve_bytes, prefill_bytes)


def fraction_scale(engine, accel: Accelerator, context_tokens: int | None,
                   latent_kv_heads_per_gpu: int | None) -> FractionScale | None:
    """The factor the engine applies to its memory fraction (its own, or the one it is given: the
    deployment's ``gpu_memory_utilization`` is the flag passed) for the attention backend it runs by
    default on this GPU's software stack at ``context_tokens`` (None: none).
    ``latent_kv_heads_per_gpu``: an MLA model's KV heads per GPU, None for other attention."""
    reserve = engine.memory_fraction_reserve
    if reserve is None:
        return None
    software = accel.software.value
    return next((s for s in reserve.fraction_scales
                 if s.applies(software, context_tokens, latent_kv_heads_per_gpu)), None)


def _value(q, default: float) -> float:
    return q.value if q is not None else default
