"""What fits: weights, engine budget and KV cache per GPU for one deployment.

``fit(deployment)`` answers: does it fit, how much memory each GPU gives to the KV cache, how
many tokens and concurrent ``max_model_len`` sequences that holds, the largest context at a
given concurrency, the shortfall when it does not fit, and the smallest parallelism that would.
Every result lists the assumptions it rests on.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from inferplan.catalog.flags_schema import flags_for
from inferplan.catalog.loader import Catalog, load_catalog
from inferplan.catalog.memory_rules import MemoryRule, memory_rule
from inferplan.catalog.architecture import Architecture
from inferplan.catalog.models import ModelSpec
from inferplan.memory.resolve import resolve_model
from inferplan.catalog.schema import Accelerator, EngineDefaults, KvDtype, Quantization
from inferplan.errors import InvalidScenarioError
from inferplan.inputs.deployment import Deployment
from inferplan.memory.admission import planned_release, rule_label, with_admission
from inferplan.memory.context_cache import context_kv, context_sequences, context_settings
from inferplan.memory.checks import check_context, checked_engine, tp_shards_heads
from inferplan.memory.engine_budget import EngineBudget, EngineSettings, device_total_bytes, engine_budget
from inferplan.memory.expert_scales import expert_scale_bytes
from inferplan.memory.hardware import Hardware, resolve_hardware
from inferplan.memory.settings import engine_settings, fraction_scale
from inferplan.memory.layout import (ParallelPlan, as_launched, describe_split, layout_stated, parallel_plan,
                                     stated_plan, tp_reach)
from inferplan.memory.kv_cache import KvLayout, kv_layout, stated_layout
from inferplan.memory.precision import kv_cache_dtype_of, weight_quantization
from inferplan.memory.offload import (GIB, OffloadSplit, all_layers_on_gpu, check_offload_flags, host_kv_layout, host_kv_tier_bytes,
                                      offload_split)
from inferplan.memory.kt_offload import FIELD as KT_FIELD, kt_split
from inferplan.memory.moe_layout import extra_weight_bytes
from inferplan.memory.mtp import draft_notes, draft_reserve_bytes, draft_rule, kv_architecture
from inferplan.memory.stages import StageWeights, stage_layer_counts, stage_weights
from inferplan.memory.startup import startup_check
from inferplan.memory.attention_workspace import latent_attention, latent_kv_heads_per_gpu, workspace_check
from inferplan.memory.weights import WeightEstimate, weight_bytes
from inferplan.memory.fit_result import MemoryFit


def _stage_weights(w: WeightEstimate, plan: ParallelPlan, spec: ModelSpec, engine: EngineDefaults,
                   embeddings_on_host: bool) -> tuple[tuple[StageWeights, ...], StageWeights, str]:
    """The weights a GPU of each pipeline stage holds, the fullest, and a note on them: under pipeline
    parallelism they differ (the first holds the embeddings, unless the engine keeps them in host
    memory; the last the lm_head)."""
    arch = None if spec.architecture_is_proxy else spec.architecture
    tp, pp, dp = plan.tensor_parallel_size, plan.pipeline_parallel_size, plan.data_parallel_size
    layers = arch.num_layers if arch else 0
    stages = stage_weights(w, tp=tp, pp=pp, expert_shards=tp * (dp if plan.expert_parallel else 1),
                           moe_layers=arch.moe.moe_layers if arch and arch.moe else (), num_layers=layers,
                           embeddings_on_host=embeddings_on_host)
    fullest = max(range(pp), key=lambda i: stages[i].bytes_per_gpu)
    note = ""
    if pp > 1:
        split = "/".join(str(n) for n in stage_layer_counts(layers, pp)) + " layers" if layers else "an even split"
        ends = "the last also holds the lm_head" if embeddings_on_host else \
            "the first also holds the token embeddings, the last the lm_head"
        room = ("each stage's KV cache has the room its own weights leave, all with the same number of blocks"
                if engine.pp_kv_room == "per_stage" else
                f"the fullest (stage {fullest + 1}) sets the KV cache room of every stage")
        gib = 2**30
        note = (f"pipeline stages hold {split}; {ends}: {stages[0].bytes_per_gpu / gib:.2f} GiB per GPU on the first, "
                f"{stages[-1].bytes_per_gpu / gib:.2f} on the last, {min(s.bytes_per_gpu for s in stages) / gib:.2f} on the "
                f"lightest; {room}")
    return stages, stages[fullest], note


@dataclass(frozen=True)
class MemoryPlan:
    """Everything a memory fit worked out, for the layers above it (speed, economics)."""

    result: MemoryFit
    spec: ModelSpec
    accelerator: Accelerator
    quantization: Quantization
    kv_dtype: KvDtype
    weights: WeightEstimate
    layout: KvLayout
    settings: EngineSettings
    hardware: Hardware
    stage_weights: tuple[StageWeights, ...]  # per GPU of each pipeline stage, before what the engine adds
    offload: OffloadSplit | None = None  # weights and KV cache in host RAM
    fraction_scale: float = 1.0  # what the engine multiplies the memory fraction it is given by


def fit(d: Deployment, catalog: Catalog | None = None) -> MemoryFit:
    """Memory fit of one deployment."""
    return plan_memory(d, catalog).result


def plan_memory(d: Deployment, catalog: Catalog | None = None) -> MemoryPlan:
    """Memory fit of one deployment, with the intermediate objects it used."""
    catalog = catalog or load_catalog()
    spec = resolve_model(catalog, d.model)
    hw = resolve_hardware(catalog, d)
    plan, note = parallel_plan(d, spec, catalog.engine(d.engine), hw, flags_for(catalog, d.engine))
    mp = _fit(catalog, d, spec, hw, plan, search_smallest=True)
    copies = _system_copies(catalog, d, spec, hw, mp)
    if copies is not None:
        mp, note = copies
    if note is None:
        return mp
    return dataclasses.replace(mp, result=mp.result.model_copy(update={"layout_note": note}))


def _system_copies(catalog: Catalog, d: Deployment, spec: ModelSpec, hw: Hardware,
                   one_gpu: MemoryPlan) -> tuple[MemoryPlan, str] | None:
    """A system named with no GPU count and no parallel sizes runs data-parallel copies of one GPU each;
    where the model does not fit on one GPU, as many copies of the smallest power-of-two instance that
    holds it as the system has room for, the GPUs fewer than one more copy left idle (None: the one-GPU copies
    stand, as no instance within the system holds the model)."""
    smallest = one_gpu.result.smallest_fit  # of a power-of-two count: copies tile an HGX's 8 GPUs or an NVL72's 72
    if hw.system is None or d.gpus is not None or layout_stated(d) or one_gpu.result.fits or smallest is None \
            or smallest.gpus > hw.gpus:
        return None
    tp, pp = smallest.tensor_parallel_size, smallest.pipeline_parallel_size
    copies = hw.gpus // smallest.gpus
    used = copies * smallest.gpus  # a GPU count below the system's: the copies on part of it
    sized = d.model_copy(update={"tensor_parallel_size": tp, "pipeline_parallel_size": pp, "data_parallel_size": copies,
                                 **({"gpus": used} if used < hw.gpus else {})})
    mp = _fit(catalog, sized, spec, hw if used == hw.gpus else resolve_hardware(catalog, sized),
              stated_plan(sized, used), search_smallest=False)
    idle = f" ({used} GPUs; {hw.gpus - used} left idle)" if used < hw.gpus else ""
    return mp, (f"{hw.system.name}: {hw.gpus} GPUs, {copies} data-parallel {'copy' if copies == 1 else 'copies'} of "
                f"{describe_split(tp, pp)}{idle}, the smallest instance that holds the model (no parallel sizes given)")


def as_planned(d: Deployment, catalog: Catalog) -> Deployment:
    """``d`` with the parallel sizes its plan runs written in, for a reader of the sizes themselves (a
    launch command): the engine's layout over ``--gpus`` alone, or the tensor × pipeline split of the
    instance a system named alone runs copies of; unchanged when it states its layout. A system's copies
    are launched one instance each, as its one-GPU copies are (the data-parallel size is left to fill the
    system): one launch of all of them would need the engine to run data-parallel ranks of a split
    instance, which TensorRT-LLM does not, and one pod to hold a rack's GPUs."""
    if d.gpus is not None or layout_stated(d) or d.system is None:
        return as_launched(d, catalog)
    p = plan_memory(d, catalog).result.parallel
    if p.tensor_parallel_size * p.pipeline_parallel_size == 1:
        return d  # one-GPU copies: as a system without sizes is launched
    idle = p.gpus < resolve_hardware(catalog, d).gpus  # copies that leave part of the system idle run on the rest
    return d.model_copy(update={"tensor_parallel_size": p.tensor_parallel_size,
                                "pipeline_parallel_size": p.pipeline_parallel_size, **({"gpus": p.gpus} if idle else {})})


def _fit(catalog: Catalog, d: Deployment, spec: ModelSpec, hw: Hardware, plan: ParallelPlan, *, search_smallest: bool) -> MemoryPlan:
    d, release_notes = planned_release(catalog, d, spec.architecture)
    engine = checked_engine(catalog, d, spec, hw, plan.tensor_parallel_size, plan.pipeline_parallel_size)
    network = _network_note(hw, plan)
    quant, quant_notes = weight_quantization(catalog, d, spec, hw.accel, engine.id)
    kv_dtype = kv_cache_dtype_of(catalog, d, spec)
    total, total_note = device_total_bytes(catalog, hw.accel, engine)
    check_offload_flags(d, list(catalog.engines), engine)
    mtp = draft_rule(catalog, d, spec, engine.id)
    w = _weights_on_gpu(catalog, d, spec, quant, plan, engine, hw.accel, bool(mtp and mtp.weights_in_pool))
    gpus = plan.tensor_parallel_size * plan.pipeline_parallel_size
    split = kt_split(d, spec, w.estimate, engine, gpus, catalog) or offload_split(d, spec, w.estimate, gpus, w.per_gpu)
    if split is not None:
        w = dataclasses.replace(w, per_gpu=w.per_gpu - split.gpu_bytes_freed, notes=[*w.notes, split.note])
    rule = memory_rule(catalog, engine.id, d.engine_version)
    profile_len = _planned_length(d, spec, None) if rule.activation.profile_tokens == "max_model_len" else None
    scale = fraction_scale(engine, hw.accel, d.max_model_len or spec.context_tokens,
                           latent_kv_heads_per_gpu(spec, plan.tensor_parallel_size))
    settings = engine_settings(d, engine, hw.accel, total, rule, profile_len,
                               tp=plan.tensor_parallel_size, pp=plan.pipeline_parallel_size, scale=scale,
                               draft_reserve_bytes=draft_reserve_bytes(mtp))
    slots = context_sequences(rule.context_cache, d.max_num_seqs)
    if rule.context_cache:  # llama.cpp, MLX: the KV cache is what the context needs, not what memory is left
        settings = dataclasses.replace(settings, **context_settings(rule.context_cache, d.flash_attention,
                                                                    _planned_length(d, spec, None) * slots))
    budget, rooms, budget_notes = _kv_room(catalog, d, engine, quant, hw.accel, spec, settings, plan, total, w, rule)
    kv_arch = kv_architecture(spec.architecture, mtp)  # with the MTP layers where the pool holds them
    layout, layout_notes = _kv_layout(d, kv_arch, kv_dtype, plan, rooms, budget.kv_bytes_per_gpu)
    full_layout = layout
    if split is not None and split.host_kv_fraction:
        layout = host_kv_layout(layout, split.host_kv_fraction)
    context_notes, capped = check_context(d, spec, engine)
    layout, admission_notes = with_admission(catalog, engine.id, d.engine_version, kv_arch, layout,
                                             kv_dtype.bits_per_element.value, settings.max_num_batched_tokens,
                                             _planned_length(d, spec, capped))
    held = _held(d, spec, plan, layout, budget.kv_bytes_per_gpu, settings.block_tokens, capped)
    ctx = rule.context_cache and context_kv(rule.context_cache, layout, held.max_len * slots, settings.flash_attention,
                                            budget.kv_bytes_per_gpu)
    if ctx:  # the engine holds a cache for max_model_len; what is left stays room for a longer -c
        held, budget_notes = dataclasses.replace(held, fits=ctx.fits), [*budget_notes, ctx.note]
    assumptions = [*spec.assumptions, *hw.assumptions, *network, *quant_notes, *([total_note] if total_note else []),
                   *w.notes, *draft_notes(mtp, spec.architecture), *([_scale_note(engine, scale, settings)] if scale else []), *budget_notes, *layout_notes, *release_notes, *admission_notes, *context_notes]
    tier = host_kv_tier_bytes(d, held.kv_gpu, plan.tensor_parallel_size * plan.pipeline_parallel_size)
    host_used, host_budget, host_notes = _host_memory(d, split, full_layout, held.max_len, w.estimate, engine, tier)
    assumptions += host_notes
    gpu_fits = held.fits  # the KV cache alone; start-up and host RAM are checked next
    checks = [c for c in (startup_check(catalog, rule, settings, spec.architecture, total, gpus), workspace_check(
        catalog, rule, hw.accel.software.value, spec.architecture, latent_attention(spec), settings.memory_fraction,
        total, held.tokens, held.max_len, plan.tensor_parallel_size)) if c is not None]
    start = next((c for c in checks if not c.starts), checks[0] if checks else None)  # a failing one first
    if start is not None and not start.starts:
        held, assumptions = dataclasses.replace(held, fits=False), [*assumptions, start.note(rule, settings)]
    if host_budget is not None and host_used > host_budget:
        held = dataclasses.replace(held, fits=False)
    fewer_gpus, fewest = _smallest_fit(catalog, d, spec, hw) if not held.fits and search_smallest else (None, None)
    needed = layout.needed_bytes_per_sequence(held.max_len, settings.block_tokens)
    result = MemoryFit(
        fits=held.fits, model=spec.id, accelerator=hw.accel.id, engine=engine.id, quantization=quant.id,
        kv_cache_dtype=kv_dtype.id, parallel=plan, max_model_len=held.max_len, gpu_memory_bytes=total,
        usable_bytes_per_gpu=budget.usable_bytes_per_gpu, weights_bytes=w.estimate.total_bytes,
        weights_bytes_per_gpu=w.per_gpu, activation_bytes_per_gpu=budget.activation_bytes_per_gpu,
        overhead_bytes_per_gpu=budget.overhead_bytes_per_gpu, kv_cache_bytes_per_gpu=held.kv_gpu,
        kv_cache_bytes_per_token=layout.bytes_per_token, state_bytes_per_sequence=layout.state_bytes_per_seq,
        kv_cache_tokens=held.tokens, max_concurrency=held.concurrency,
        total_max_concurrency=held.concurrency * plan.data_parallel_size, sequence_bytes_per_gpu=held.seq_gpu,
        kv_cache_needed_bytes_per_gpu=needed,
        largest_context_tokens=held.largest, concurrency=d.concurrency,
        shortfall_bytes=0.0 if gpu_fits else _shortfall(layout, rooms, held.max_len, settings.block_tokens,
                                                         needed - budget.kv_bytes_per_gpu),
        smallest_fit=fewer_gpus, fewest_gpus_fit=fewest, assumptions=tuple(dict.fromkeys(assumptions)),
        host_memory_bytes_used=host_used, host_memory_budget_bytes=host_budget,
        host_kv_cache_tokens=int(tier // full_layout.bytes_per_token) if full_layout.bytes_per_token else 0,
        memory_rule_id=rule.id, memory_rule=rule_label(rule, release_notes, d.engine_version), cuda_graph_bytes_per_gpu=budget.cuda_graph_bytes_per_gpu,
        kv_cache_allocated_bytes_per_gpu=ctx and ctx.bytes_per_gpu,
        startup_shortfall_bytes_per_gpu=start.shortfall_bytes_per_gpu if start else 0.0,
        startup_note=start.note(rule, settings) if start and not start.starts else None,
    )
    return MemoryPlan(result, spec, hw.accel, quant, kv_dtype, w.estimate, layout, settings, hw, w.stages, split,
                      scale.scale.value if scale else 1.0)


def _host_memory(d: Deployment, split: OffloadSplit | None, layout: KvLayout, max_len: int, w: WeightEstimate,
                 engine: EngineDefaults, kv_tier: float) -> tuple[float, float | None, list[str]]:
    """Host RAM the offloaded weights, the CPU layers' KV cache and a host KV tier take, the budget, and a
    note when it is short."""
    if split is None and not kv_tier:
        return 0.0, None, []
    if d.host_memory_gb is None:
        raise InvalidScenarioError("weights or KV cache offloaded to host RAM: state how much host memory there is",
                                   field="host_memory_gb", allowed="host RAM in GiB, e.g. 64")
    lookup = w.embedding_bytes if engine.embeddings_on_host else 0.0
    kv = split.host_kv_fraction * layout.sequence_bytes_per_gpu(max_len, 1) * layout_gpus(layout) if split else 0.0
    weights = split.host_weight_bytes if split else 0.0
    used = weights + kv + kv_tier + (lookup if split else 0.0)
    budget = d.host_memory_gb * GIB
    parts = [f"{weights / GIB:.2f} GiB of offloaded weights" if split else "",
             f"{kv / GIB:.2f} GiB of the CPU layers' KV cache" if kv else "",
             f"{kv_tier / GIB:.2f} GiB of host KV tier" if kv_tier else ""]
    notes = [f"host memory: {used / GIB:.2f} GiB of {budget / GIB:.2f} GiB used: " + ", ".join(p for p in parts if p)]
    if split and split.host_kv_fraction >= 1:
        notes.append(f"no layer on the GPU: the whole KV cache ({max_len:,} tokens, llama.cpp's -c) is in host RAM")
    if used > budget:
        notes.append(f"host memory (host_memory_gb) short by {(used - budget) / GIB:.2f} GiB: it does not fit")
    return used, budget, notes


def layout_gpus(layout: KvLayout) -> float:
    """GPUs a layout's per-GPU figures are spread over (its whole-instance bytes over one GPU's)."""
    per_gpu = layout.growing_bytes_per_token_per_gpu + layout.window_bytes_per_token_per_gpu
    return (layout.growing_bytes_per_token + layout.window_bytes_per_token) / per_gpu if per_gpu else 1.0


def _network_note(hw: Hardware, plan: ParallelPlan) -> list[str]:
    """A note when tensor parallelism reaches past the GPUs the hardware joins and no network between
    them is known: a memory answer for a layout `perf` refuses."""
    reach = tp_reach(hw)
    if hw.scale_out is not None or plan.tensor_parallel_size <= reach:
        return []
    return [f"tensor parallelism over {plan.tensor_parallel_size} GPUs goes past the {reach} that "
            f"{hw.system.name if hw.system else hw.accel.name} joins, and the catalogue knows no network between "
            "them: this is the memory answer only; `inferplan perf` refuses the layout"]


@dataclass(frozen=True)
class _GpuWeights:
    """The weights on the fullest GPU (with what the engine adds) and on each pipeline stage."""

    estimate: WeightEstimate
    stages: tuple[StageWeights, ...]
    per_gpu: float
    notes: list[str]
    moe_runner_backend: str | None = None  # as stated (None: the engine's default kernel path)


def _moe_extra(catalog: Catalog, d: Deployment, engine: EngineDefaults, quant: Quantization, accel: Accelerator,
               spec: ModelSpec, plan: ParallelPlan, expert_bytes_per_gpu: float) -> tuple[float, str | None]:
    """What the release's MoE kernel allocates beyond the checkpoint's experts on one GPU (moe_layout)."""
    return extra_weight_bytes(catalog, engine.id, quant.id, accel, expert_bytes_per_gpu, arch=spec.architecture,
                              tp=plan.tensor_parallel_size, expert_parallel=plan.expert_parallel,
                              release=d.engine_version, kernel=d.moe_kernel)


def _weights_on_gpu(catalog: Catalog, d: Deployment, spec: ModelSpec, quant: Quantization, plan: ParallelPlan,
                    engine: EngineDefaults, accel: Accelerator, mtp_loaded: bool = False) -> _GpuWeights:
    weights = weight_bytes(spec, quant, mtp_loaded=mtp_loaded)
    notes = list(weights.assumptions)
    on_host = engine.embeddings_on_host and not accel.unified_memory  # one pool: host memory is the same memory
    stages, fullest, stages_note = _stage_weights(weights, plan, spec, engine, on_host)
    per_gpu = fullest.bytes_per_gpu
    if stages_note:
        notes.append(stages_note)
    if on_host and weights.embedding_bytes and not weights.head_is_embedding:
        notes.append(f"{engine.id} keeps the token-embedding table ({weights.embedding_bytes / 2**30:.2f} GiB) in host "
                     "memory, not on a GPU")
    extra, extra_note = _moe_extra(catalog, d, engine, quant, accel, spec, plan, fullest.expert_bytes_per_gpu)
    if extra_note:
        per_gpu += extra
        notes.append(extra_note)
    scales, scales_note = expert_scale_bytes(catalog, engine.id, spec, quant, accel, fullest.expert_bytes_per_gpu,
                                             d.moe_runner_backend)
    if scales_note:
        per_gpu += scales
        notes.append(scales_note)
    return _GpuWeights(weights, stages, per_gpu, notes, d.moe_runner_backend)


def _kv_room(catalog: Catalog, d: Deployment, engine: EngineDefaults, quant: Quantization, accel: Accelerator, spec: ModelSpec,
             settings: EngineSettings, plan: ParallelPlan, total: float, w: _GpuWeights,
             rule: MemoryRule) -> tuple[EngineBudget, list, list[str]]:
    """The engine's budget on the GPU with the least room for the KV cache, each pipeline stage's
    budget where the engine sizes every stage's cache by its own room (vLLM), and the notes."""
    tp, pp = plan.tensor_parallel_size, plan.pipeline_parallel_size

    def room(weights_gpu: float) -> EngineBudget:
        return engine_budget(catalog, engine, total_bytes=total, weights_bytes_per_gpu=weights_gpu,
                             arch=spec.architecture, settings=settings, tp=tp, gpus_in_instance=tp * pp, rule=rule,
                             accel=accel, weight_bits=quant.bits_per_weight.value)

    budget = room(w.per_gpu)
    rooms = [room(st.bytes_per_gpu + _moe_extra(catalog, d, engine, quant, accel, spec, plan, st.expert_bytes_per_gpu)[0]
                  + expert_scale_bytes(catalog, engine.id, spec, quant, accel, st.expert_bytes_per_gpu,
                                       d.moe_runner_backend)[0])
             for st in w.stages] if pp > 1 and engine.pp_kv_room == "per_stage" else []
    # the weights reported stay the fullest GPU's; its room is the smallest unless extras reorder them
    least = min(rooms, key=lambda b: b.kv_bytes_per_gpu) if rooms else budget
    return least, rooms, list(budget.assumptions)


def _kv_layout(d: Deployment, arch: Architecture | None, kv_dtype: KvDtype, plan: ParallelPlan, rooms: list,
               least_room: float) -> tuple[KvLayout, list[str]]:
    """How a token's KV cache spreads over the instance's GPUs (stated, or from the architecture whose
    layers the pool holds), with each stage's room relative to the least where stages are sized apart."""
    tp, pp = plan.tensor_parallel_size, plan.pipeline_parallel_size
    if d.kv_bytes_per_token is not None:
        layout = stated_layout(d.kv_bytes_per_token, tp=tp, pp=pp)
        notes = [f"KV per token stated by the user: {d.kv_bytes_per_token:,.0f} bytes, split evenly over the instance"]
    else:
        assert arch is not None
        notes = []
        fewest_kv_heads = min(arch.layer_kv_heads(kind) for kind in set(arch.layer_kinds))  # Gemma 4's full layers: fewer
        if tp > fewest_kv_heads and arch.mla is None and fewest_kv_heads:
            notes.append(f"TP {tp} exceeds {fewest_kv_heads} KV heads: each GPU keeps a replicated KV head")
        if arch.mla is not None and tp > 1:
            notes.append("MLA latent KV is replicated on every tensor-parallel rank")
        layout = kv_layout(arch, kv_bits=kv_dtype.bits_per_element.value, tp=tp, pp=pp,
                           residual_tokens=kv_dtype.residual_tokens)
    if rooms and layout.stages and least_room > 0:
        layout = dataclasses.replace(layout, stage_rooms=tuple(r.kv_bytes_per_gpu / least_room for r in rooms))
    return layout, notes


@dataclass(frozen=True)
class _Held:
    """What the KV cache holds at the planned context length."""

    max_len: int
    kv_gpu: float
    seq_gpu: float
    tokens: int
    concurrency: float
    fits: bool
    largest: int | None


def _held(d: Deployment, spec: ModelSpec, plan: ParallelPlan, layout: KvLayout, room: float, block: int,
          capped: int | None) -> _Held:
    max_len = _planned_length(d, spec, capped)
    kv_gpu = max(room, 0.0)
    seq_gpu = layout.sequence_bytes_per_gpu(max_len, block)
    seq_room = layout.room_bytes_per_sequence(max_len, block)  # of the smallest stage's room (seq_gpu on one stage)
    # tokens of context the cache holds in sequences of max_len: a window layer or a recurrent state
    # costs a sequence the same at any length, so a token's share is its sequence's bytes / max_len
    held = math.ceil(max_len / block) * block  # its last block is held whole
    per_tok_gpu = seq_room / held if held else layout.bytes_per_token_per_gpu
    tokens = int(kv_gpu // (block * per_tok_gpu)) * block if per_tok_gpu else 0
    fits = room > 0 and kv_gpu >= layout.needed_bytes_per_sequence(max_len, block)
    largest = None
    if d.concurrency:  # sequences across the deployment, as perf counts them: each instance holds its share
        per_instance = math.ceil(d.concurrency / plan.data_parallel_size)
        largest = layout.max_tokens_per_sequence(kv_gpu, per_instance, block)
        if fits and largest < 1:
            raise InvalidScenarioError(
                f"{d.concurrency:,} sequences leave no room for even one token of context each: the KV cache holds "
                f"{tokens:,} tokens per instance ({plan.data_parallel_size} instance(s))", field="concurrency",
                allowed=f"fewer sequences, at most {plan.data_parallel_size * (tokens // block):,} (one {block}-token block each)")
    return _Held(max_len, kv_gpu, seq_gpu, tokens, kv_gpu / seq_room if seq_room else 0.0, fits, largest)


def _scale_note(engine, scale, settings) -> str:
    return (f"{engine.name} runs the {scale.attention_backend} attention backend by default on {scale.software} and "
            f"lowers its memory fraction (its own, or the one it is given) x {scale.scale.value:g} above "
            f"{scale.above_context_tokens.value:,.0f} tokens of context: {settings.memory_fraction:.3f} planned")


def _planned_length(d: Deployment, spec: ModelSpec, capped: int | None) -> int:
    """The context length planned: the engine's cap, else the one stated, else the model's own."""
    arch = spec.architecture
    length = capped or d.max_model_len or spec.context_tokens or (arch.max_position_embeddings if arch else 0)
    if not length:
        raise InvalidScenarioError(f"{spec.name} states no context length (no context_tokens in the catalogue, no "
                                   "max_position_embeddings in its config): state the length to plan at",
                                   field="max_model_len", allowed="a context length in tokens")
    return length


def _shortfall(layout: KvLayout, rooms: list, tokens: int, block: int, otherwise: float) -> float:
    """Bytes per GPU the worst-off stage lacks for one sequence of ``tokens`` (each stage against its
    own room where the engine sizes them so; else the fullest GPU's room against the largest need)."""
    if not rooms or len(rooms) != len(layout.stages):
        return otherwise
    return max(st.sequence_bytes_per_gpu(tokens, block) - r.kv_bytes_per_gpu for st, r in zip(layout.stages, rooms))


def _smallest_fit(catalog: Catalog, d: Deployment, spec: ModelSpec,
                  hw: Hardware) -> tuple[ParallelPlan | None, ParallelPlan | None]:
    """Fewest GPUs that hold one instance the engine's launcher can start (engine_flags.yaml: a flag for
    each size above 1): of a power-of-two count (what tiles a system), and at any count the engine splits
    over (tensor parallel sizes that split the attention heads, memory/checks.py; pipeline stages of at
    least a layer each). The powers of two are tried first; the counts between the largest that does not
    fit and the smallest that does are then tried in turn, since a layer split (llama.cpp's default,
    vLLM's pipeline parallel) starts on three GPUs as well as on four."""
    limit = 1024
    # a pipeline stage holds a layer at least (a borrowed layout's layer count is not the model's)
    layers = spec.architecture.num_layers if spec.architecture and not spec.architecture_is_proxy else limit
    engine_spec = catalog.engine(d.engine)
    floor = _weights_floor_bytes(catalog, d, spec, hw)
    total, _ = device_total_bytes(catalog, hw.accel, engine_spec)
    flags = flags_for(catalog, engine_spec.id)  # None: no launch record, every split stands

    def splits(gpus: int) -> list[tuple[int, int]]:
        """(TP, PP) of one instance on ``gpus`` GPUs that the launcher starts, in the order the engine
        prefers: pipeline first for an engine whose own split is by layers, else tensor parallel first."""
        found = [(tp, gpus // tp) for tp in range(1, min(gpus, hw.domain_gpus) + 1)
                 if gpus % tp == 0 and gpus // tp <= layers and tp_shards_heads(spec, engine_spec.id, tp)
                 and (flags is None or flags.launches_split(tp, gpus // tp))]
        return found if engine_spec.multi_gpu_split == "layer" else sorted(found, key=lambda s: s[1])

    def holds(gpus: int) -> ParallelPlan | None:
        if floor / gpus > total:
            return None  # the weights alone overfill every GPU of this count
        for tp, pp in splits(gpus):
            plan = ParallelPlan(tensor_parallel_size=tp, pipeline_parallel_size=pp, data_parallel_size=1,
                                expert_parallel=d.enable_expert_parallel, gpus=gpus)
            trial = d.model_copy(update={"tensor_parallel_size": tp, "pipeline_parallel_size": pp, "gpus": gpus,
                                         "data_parallel_size": 1})
            if _fit(catalog, trial, spec, hw, plan, search_smallest=False).result.fits:
                return plan
        return None

    gpus = 1
    while gpus <= limit:
        found = holds(gpus)
        if found is not None:
            between = (holds(n) for n in range(gpus // 2 + 1, gpus))
            return found, next((p for p in between if p is not None), found)
        gpus *= 2
    return None, None


def _weights_floor_bytes(catalog: Catalog, d: Deployment, spec: ModelSpec, hw: Hardware) -> float:
    """Weight bytes that some GPU of any layout holds at least ``1/gpus`` of: every weight but the
    embedding table (an engine may keep it on the host); 0 when weights may be offloaded to host RAM."""
    engine = catalog.engine(d.engine)
    arch = None if spec.architecture_is_proxy else spec.architecture
    ngl_offloads = d.n_gpu_layers is not None and (arch is None or not all_layers_on_gpu(d.n_gpu_layers, arch.num_layers))
    if ngl_offloads or d.n_cpu_moe or d.cpu_offload_gb or KT_FIELD in engine.offload_settings:
        return 0.0
    quant, _ = weight_quantization(catalog, d, spec, hw.accel, engine.id)
    w = weight_bytes(spec, quant)
    return w.total_bytes - w.embedding_bytes
