"""What fits: weights, engine budget and KV cache per GPU for one deployment.

``fit(deployment)`` answers: does it fit, how much memory each GPU gives to the KV cache, how
many tokens and concurrent ``max_model_len`` sequences that holds, the largest context at a
given concurrency, the shortfall when it does not fit, and the smallest parallelism that would.
Every result lists the assumptions it rests on.
"""

from __future__ import annotations

import dataclasses
import threading
from collections import OrderedDict

from inferplan.catalog.flags_schema import flags_for
from inferplan.catalog.loader import Catalog, load_catalog
from inferplan.catalog.engine_support import check_engine_loads, check_engine_runs_model_on, check_engine_starts_on
from inferplan.catalog.memory_rules import checked_engine_version, memory_rule
from inferplan.catalog.models import ModelSpec
from inferplan.memory.resolve import resolve_model
from inferplan.errors import InferplanError
from inferplan.inputs.deployment import Deployment
from inferplan.memory.admission import planned_release, rule_label, with_admission
from inferplan.memory.context_cache import context_kv, context_sequences, context_settings, unified_slots
from inferplan.memory.checks import check_context, checked_engine
from inferplan.memory.extensible import check_extensible_kv_cache
from inferplan.memory.budget_parts import captures_cuda_graphs
from inferplan.memory.engine_budget import device_total_bytes
from inferplan.memory.fit_held import kv_held, planned_length, stage_shortfall
from inferplan.memory.running_cap import (concurrency_answer, launched_cap, max_num_seqs_at_most, running_cap,
                                          running_sequences)
from inferplan.memory.state_pool import engine_state_architecture, release_split, with_state_pool
from inferplan.memory.fit_weights import instance_kv_layout, kv_copies, kv_room, weights_on_gpu
from inferplan.memory.hardware import Hardware, build_note, configuration_note, resolve_hardware, with_default_engine
from inferplan.memory.settings import engine_settings, fraction_scale, pool_running_note, pool_running_requests
from inferplan.memory.layout import ParallelPlan, as_launched, host_gpus, layout_stated, parallel_plan
from inferplan.memory.precision import (has_routed_experts, kv_cache_dtype_of, model_formats, planned_weight_format,
                                       weight_quantization)
from inferplan.memory.host_budget import host_memory_use
from inferplan.memory.page_cache import page_cache_range
from inferplan.memory.prefill_graphs import prefill_capture, prefill_notes
from inferplan.memory.offload import (check_offload_flags, host_kv_layout, host_kv_tier_bytes, offload_split,
                                      output_layer_first)
from inferplan.memory.kt_offload import kt_gpu_quantization, kt_split
from inferplan.memory.draft_headroom import draft_reserve_bytes
from inferplan.memory.mtp import check_mtp_headroom, draft_notes, draft_rule, kv_architecture, with_default_draft_tokens
from inferplan.memory.eagle3 import check_draft_headroom, eagle3_kv_architecture, eagle3_memory
from inferplan.memory.draft_model import draft_model_kv_architecture, draft_model_memory
from inferplan.memory.vision_projector import vision_projector_bytes, vision_projector_notes
from inferplan.memory.precision import check_metal_instance
from inferplan.memory.startup import startup_check
from inferplan.memory.step_headroom import step_check
from inferplan.memory.step_budget import with_step_budget
from inferplan.memory.attention_workspace import latent_attention, latent_kv_heads_per_gpu, workspace_check
from inferplan.memory.fit_result import MemoryFit
from inferplan.memory.fit_plan import MemoryPlan
from inferplan.memory.fit_copies import host_copies, smallest_fit, system_copies
from inferplan.memory.fit_parts import network_note, scale_note, with_draft_weights
from inferplan.memory.fit_placement import fit_placement, kept_free_bytes, with_placement
from inferplan.memory.ollama_batch import check_sched_spread, on_ollama_gpu, with_ollama_batch



def fit(d: Deployment, catalog: Catalog | None = None) -> MemoryFit:
    """Memory fit of one deployment."""
    return plan_memory(d, catalog).result


# plans already made, by (catalogue, deployment and the fields it states): a speed sweep or a search plans the same deployment
# at every batch size it prices; the plan is a pure function of the two, so it is made once. The
# catalogue is held beside its plan so its id is not reused while the entry lives.
_PLANS: OrderedDict[tuple[int, Deployment, frozenset[str]], tuple[Catalog, MemoryPlan]] = OrderedDict()
PLANS_KEPT = 4096
_PLANS_LOCK = threading.Lock()


def plan_memory(d: Deployment, catalog: Catalog | None = None) -> MemoryPlan:
    """Memory fit of one deployment, with the intermediate objects it used."""
    catalog = catalog or load_catalog()
    d = _engine_stated(d, catalog)
    key = (id(catalog), d, frozenset(d.model_fields_set))  # a stated default (TP 1) lays out otherwise
    with _PLANS_LOCK:  # the API plans on a thread pool: another request may evict between the lookup and the move
        if (kept := _PLANS.get(key)) is not None and kept[0] is catalog:
            _PLANS.move_to_end(key)
            return kept[1]
    mp = _plan_memory(d, catalog)
    with _PLANS_LOCK:
        _PLANS[key] = (catalog, mp)
        while len(_PLANS) > PLANS_KEPT:
            _PLANS.popitem(last=False)
    return mp


def memory_fits(d: Deployment, catalog: Catalog) -> bool:
    """Whether ``d`` fits: ``plan_memory``'s verdict (``verdict_plan``), for a caller after the verdict alone,
    probing many plans that may not fit."""
    return verdict_plan(d, catalog).result.fits


def verdict_plan(d: Deployment, catalog: Catalog) -> MemoryPlan:
    """``plan_memory``'s plan of ``d`` without the search for the smallest instance that holds the model when
    it does not (its ``smallest_fit`` and ``fewest_gpus_fit`` left None unless the plan was made already), for a
    caller after the verdict and what the plan was made with. A layout chosen from that search (a system named
    alone, a GPU count beyond one host) is planned whole."""
    d = _engine_stated(d, catalog)
    if (kept := _PLANS.get((id(catalog), d, frozenset(d.model_fields_set)))) is not None and kept[0] is catalog:
        return kept[1]
    hw = resolve_hardware(catalog, d)
    if not layout_stated(d) and (d.system is not None and d.gpus is None or d.gpus is not None and hw.gpus > host_gpus(hw)):
        return plan_memory(d, catalog)
    spec = resolve_model(catalog, d.model)
    plan, _ = parallel_plan(d, spec, catalog.engine(d.engine), hw, flags_for(catalog, d.engine),
                            planned_weight_format(catalog, d, spec))
    mp = _fit(catalog, d, spec, hw, plan, search_smallest=False)
    return dataclasses.replace(mp, result=with_placement(mp.result, d, mp.offload, catalog))


def _engine_stated(d: Deployment, catalog: Catalog) -> Deployment:
    """``d`` with its engine (``with_default_engine``), its engine_version checked to name a release before
    anything reads it (a stated "latest" or "nightly" is refused naming the field), an Ollama tag's build on the
    one GPU Ollama loads it on (``on_ollama_gpu``) at the batch Ollama chooses where none is stated
    (``with_ollama_batch``), its weights placed where the engine places
    them and none is stated (``fit_placement``)."""
    d = with_default_engine(d, catalog)
    if d.engine_version is not None:
        checked_engine_version(catalog, d.engine, d.engine_version)
    check_sched_spread(d, catalog)
    d = with_ollama_batch(on_ollama_gpu(d, catalog), catalog)  # an Ollama tag's: at the -b / -ub Ollama chooses, then as --fit places it
    return fit_placement(d, catalog, lambda probe: memory_fits(probe, catalog))


def placed_deployment(d: Deployment, catalog: Catalog) -> Deployment:
    """``d`` as its plan runs it: its engine, and its weights where the engine places them and none is stated."""
    return _engine_stated(d, catalog)


def fits_changed(d: Deployment, changes: dict, catalog: Catalog) -> MemoryFit | None:
    """The fit of ``d`` with ``changes``, when it fits (None: it does not, or the change is refused)."""
    try:
        r = plan_memory(d.model_copy(update=changes), catalog).result
    except InferplanError:
        return None
    return r if r.fits else None


def _plan_memory(d: Deployment, catalog: Catalog) -> MemoryPlan:
    spec = resolve_model(catalog, d.model)
    hw = resolve_hardware(catalog, d)
    mp, note = _laid_out(catalog, d, spec, hw)
    # and the runner's own choice of GPUs, and the memory of a part named without its size
    note = "; ".join(n for n in (note, d.gpus_chosen_by, configuration_note(hw)) if n) or None
    result = with_placement(mp.result, d, mp.offload, catalog)
    return dataclasses.replace(mp, result=result if note is None else result.model_copy(update={"layout_note": note}))


def _laid_out(catalog: Catalog, d: Deployment, spec: ModelSpec, hw: Hardware) -> tuple[MemoryPlan, str | None]:
    """The plan of ``d`` in the layout it runs, and where it states no parallel sizes a note on how that layout
    was chosen (None otherwise): the stated one; with a GPU count alone, the engine's own split of one instance
    over them within one host (``layout.parallel_plan``), copies beyond it (``host_copies``, ``memory/fit_copies.py``); a system named
    alone, copies filling it (``system_copies``)."""
    copies = host_copies(catalog, d, spec, hw, _fit_layout)
    if copies is not None:
        return copies
    plan, note = parallel_plan(d, spec, catalog.engine(d.engine), hw, flags_for(catalog, d.engine),
                               planned_weight_format(catalog, d, spec))
    mp = _fit(catalog, d, spec, hw, plan, search_smallest=True)
    return system_copies(catalog, d, spec, hw, mp, _fit_layout) or (mp, note)



def as_planned(d: Deployment, catalog: Catalog) -> Deployment:
    """``d`` with the parallel sizes its plan runs written in, for a reader of the sizes themselves (a
    launch command): the engine's layout over ``--gpus`` alone, or the tensor × pipeline split of the
    instance a system named alone runs copies of; unchanged when it states its layout. A system's copies
    are launched one instance each, as its one-GPU copies are (the data-parallel size is left to fill the
    system): one launch of all of them would need the engine to run data-parallel ranks of a split
    instance, which TensorRT-LLM does not, and one pod to hold a rack's GPUs."""
    if (chosen := on_ollama_gpu(d, catalog)) is not d:  # an Ollama tag's build on the GPUs Ollama loads it on
        return chosen if chosen.gpus == 1 else as_launched(chosen, catalog)
    hw = None if layout_stated(d) or (d.gpus is None and d.system is None) else resolve_hardware(catalog, d)
    if hw is None or d.gpus is not None and hw.gpus <= host_gpus(hw):
        return as_launched(d, catalog)
    p = plan_memory(d, catalog).result.parallel
    if d.gpus is not None and p.data_parallel_size == 1:
        return as_launched(d, catalog)  # one instance over the hosts: the engine's own split
    if p.tensor_parallel_size * p.pipeline_parallel_size == 1:  # one-GPU copies: launched as a system without sizes is
        return d if p.gpus == hw.gpus else d.model_copy(update={"gpus": p.gpus})
    idle = p.gpus < hw.gpus  # copies that leave part of the hardware idle run on the rest
    return d.model_copy(update={"tensor_parallel_size": p.tensor_parallel_size,
                                "pipeline_parallel_size": p.pipeline_parallel_size, **({"gpus": p.gpus} if idle else {})})


def _fit(catalog: Catalog, d: Deployment, spec: ModelSpec, hw: Hardware, plan: ParallelPlan, *, search_smallest: bool) -> MemoryPlan:
    d, release_notes = planned_release(catalog, d, spec.architecture)
    engine = checked_engine(catalog, d, spec, hw, plan.tensor_parallel_size, plan.pipeline_parallel_size)
    check_extensible_kv_cache(catalog, d, hw.accel)
    check_engine_runs_model_on(catalog, engine.id, d.engine_version, spec.architecture and spec.architecture.hf_architecture,
                               spec.name, planned_weight_format(catalog, d, spec), hw.accel, has_routed_experts(spec),
                               formats=model_formats(catalog, spec, engine.id))
    check_engine_starts_on(catalog, engine.id, d.engine_version, hw.accel)
    d, step_note = with_step_budget(d, catalog, spec)  # a step as long as the longest prompt the engine cannot chunk
    network = network_note(hw, plan)
    quant, quant_notes = weight_quantization(catalog, d, spec, hw.accel, engine.id)
    kv_dtype = kv_cache_dtype_of(catalog, d, spec)
    check_metal_instance(engine, hw.accel, kv_dtype, plan.tensor_parallel_size, plan.pipeline_parallel_size)
    total, total_note = device_total_bytes(catalog, hw.accel, engine, d.wired_limit_mb)
    check_offload_flags(d, list(catalog.engines), engine)
    mtp = draft_rule(catalog, d, spec, engine.id, plan.pipeline_parallel_size)
    d, draft_token_notes = with_default_draft_tokens(d, mtp, spec.architecture)  # the decode query it captures graphs for
    gpu_quant, kt_note = kt_gpu_quantization(catalog, d, spec, engine, quant)  # kt LLAMAFILE: the original checkpoint
    eagle = eagle3_memory(catalog, d, spec, engine.id, plan.pipeline_parallel_size)  # a draft head: held where the engine holds MTP layers
    small = draft_model_memory(catalog, d, spec, engine.id)  # a separate draft model: its weights and KV layers
    w = with_draft_weights(weights_on_gpu(catalog, d, spec, gpu_quant, plan, engine, hw.accel, bool(mtp and mtp.weights_in_pool),
                                          bool(mtp and not mtp.weights_in_pool)), eagle, small, plan.tensor_parallel_size)  # MTP layers outside the pool: loaded by the draft worker, outside the fraction
    w = dataclasses.replace(w, notes=[kt_note, *w.notes]) if kt_note else w
    gpus = plan.tensor_parallel_size * plan.pipeline_parallel_size
    split = kt_split(d, spec, w.estimate, engine, gpus, catalog, quant) or offload_split(
        d, spec, w.estimate, gpus, w.per_gpu, w.stages, output_layer_first(catalog, engine.id, d.engine_version))
    if split is not None:
        w = dataclasses.replace(w, per_gpu=w.per_gpu - split.gpu_bytes_freed, notes=[*w.notes, split.note])
    projector = vision_projector_bytes(catalog, d)  # an Ollama tag's vision projector: on the GPU, beside the weights
    w = dataclasses.replace(w, per_gpu=w.per_gpu + projector, notes=[*w.notes, *vision_projector_notes(catalog, d, projector)])
    rule = memory_rule(catalog, engine.id, d.engine_version)
    check_engine_loads(catalog, engine.id, d.engine_version, spec.architecture and spec.architecture.hf_architecture,
                       quant.id)
    whole_prompts = rule.gpu_memory_defaults and not rule.gpu_memory_defaults.chunks_prompts(
        rule.planned_release(d.engine_version))  # the step budget then holds the longest prompt
    profile_len = planned_length(d, spec, None) if rule.activation.profile_tokens == "max_model_len" or whole_prompts \
        else None
    scale = fraction_scale(engine, hw.accel, d.max_model_len or spec.context_tokens,
                           latent_kv_heads_per_gpu(spec, plan.tensor_parallel_size))
    prefill, prefill_off = prefill_capture(rule, engine.name, d, spec.architecture, hw.accel.software.value,
                                           plan.pipeline_parallel_size)  # the prefill graphs its own fraction keeps out
    settings = engine_settings(d, engine, hw.accel, total, rule, profile_len,
                               tp=plan.tensor_parallel_size, pp=plan.pipeline_parallel_size, scale=scale,
                               draft_reserve_bytes=draft_reserve_bytes(mtp or (eagle.rule if eagle else None)), prefill=prefill,
                               arch=spec.architecture)
    if kept := kept_free_bytes(catalog, d):  # --fit's margin, kept free at any -np / -c: no room for the KV cache
        settings = dataclasses.replace(settings, kept_free_bytes=kept, kept_free_by=d.placement_chosen_by)
    slots = context_sequences(rule.context_cache, d.max_num_seqs)
    unified = unified_slots(rule.context_cache, slots, bool(d.draft_checkpoint))  # llama-server's 4 for --parallel 1
    started = (unified or slots) if rule.context_cache is not None and rule.context_cache.per_sequence else None
    engine_cap = running_sequences(settings, plan.pipeline_parallel_size, started)
    if rule.context_cache:  # llama.cpp, MLX: the KV cache is what the context needs, not what memory is left
        settings = dataclasses.replace(settings, **context_settings(rule.context_cache, d.flash_attention,
                                                                    planned_length(d, spec, None) * slots))
    budget, rooms, budget_notes = kv_room(catalog, d, engine, gpu_quant, hw.accel, spec, settings, plan, total, w, rule)
    kv_arch = engine_state_architecture(rule, d, draft_model_kv_architecture(eagle3_kv_architecture(
        kv_architecture(spec.architecture, mtp), eagle), small))  # with the draft's layers where the pool holds them; the engine's state dtype
    layout, layout_notes = instance_kv_layout(d, kv_arch, kv_dtype, plan, rooms, budget.kv_bytes_per_gpu)
    full_layout, copies = layout, kv_copies(d, kv_arch, kv_dtype, plan, layout)
    if split is not None and split.host_kv_fraction:
        layout = host_kv_layout(layout, split.host_kv_fraction, len(kv_arch.layer_kinds) if kv_arch else 0,
                                split.stage_gpu_layers)
    context_notes, capped = check_context(d, spec, engine)
    layout, admission_notes = with_admission(catalog, engine.id, d.engine_version, kv_arch, layout,
                                             kv_dtype.bits_per_element.value, settings.max_num_batched_tokens,
                                             planned_length(d, spec, capped))
    micro = plan.pipeline_parallel_size if settings.limits_per_micro_batch else 1  # the cap holds each micro-batch
    divided = plan.pipeline_parallel_size if settings.seqs_divided_over_micro_batches and not started else 1  # or shares

    def held_at(running: int):  # the cache at the planned length, each of ``running`` sequences' share at a concurrency
        return with_state_pool(kv_held(d, spec, plan, layout, budget.kv_bytes_per_gpu, settings.block_tokens, capped, running,
                                       lambda n: max_num_seqs_at_most(catalog, d, engine.id, n // micro)),
                               release_split(rule, d, kv_arch, layout), d, layout, settings.block_tokens, kv_arch,
                               plan.data_parallel_size, running)
    held, states, state_notes = held_at(engine_cap)
    if (pooled := pool_running_requests(settings, held.tokens, held.max_len)) is not None:  # SGLang's, from its pool,
        pooled = min(pooled, states.running_cap) if states is not None else pooled  # at most its state slots' requests
        settings = dataclasses.replace(settings, max_num_seqs=pooled)
        engine_cap = running_sequences(settings, plan.pipeline_parallel_size, started)
        held, states, state_notes = held_at(engine_cap)
        state_notes = [*state_notes, pool_running_note(engine.name, settings, held.tokens, held.max_len, divided)]
    cap = running_cap(catalog, d, engine.id, engine_cap, started or settings.max_num_seqs, states and states.running_cap,
                      states and states.slots, divided)
    check_draft_headroom(eagle, spec.architecture, kv_dtype.bits_per_element.value, plan.tensor_parallel_size, total,
                         settings.memory_fraction, held.tokens)
    check_mtp_headroom(mtp, spec, gpu_quant, kv_dtype.bits_per_element.value, plan.tensor_parallel_size, total,
                       settings.memory_fraction, held.tokens)
    ctx = rule.context_cache and context_kv(rule.context_cache, layout, held.max_len * slots, settings.flash_attention,
                                            budget.kv_bytes_per_gpu, unified or slots, unified=bool(unified),
                                            ubatch_tokens=settings.prefill_micro_batch_tokens,
                                            batch_tokens=settings.max_num_batched_tokens)
    if ctx:  # the engine holds a cache for max_model_len; what is left stays room for a longer -c
        held, budget_notes = dataclasses.replace(held, fits=ctx.fits), [*budget_notes, ctx.note]
    largest = ctx.tokens // min(-(-d.concurrency // plan.data_parallel_size), cap.sequences) \
        if unified and ctx and d.concurrency else held.largest
    launched = dataclasses.replace(launched_cap(catalog, d, engine.id, cap), value=slots) if unified else \
        launched_cap(catalog, d, engine.id, cap)  # llama-server b6925-b7432: launched with --parallel 1, opens 4
    answer = concurrency_answer(cap, launched, d.concurrency, plan.data_parallel_size,
                                largest, settings.block_tokens, ctx.slot_tokens if ctx and started and not unified else None,
                                held.max_len, unified)  # one unified cache: each running sequence's share of its cells
    named = build_note(catalog, d)  # an Ollama tag's build: the first thing the answer rests on
    assumptions = [*([named] if named else []), *([d.batch_chosen_by] if d.batch_chosen_by else []), *spec.assumptions, *hw.assumptions, *network, *quant_notes, *([total_note] if total_note else []),
                   *w.notes, *draft_notes(mtp, spec.architecture), *draft_token_notes, *([scale_note(engine, scale, settings)] if scale else []),
                   *prefill_notes(prefill, prefill_off, d, engine.name, settings.max_num_batched_tokens), *budget_notes, *layout_notes, *release_notes, *admission_notes, *state_notes, *context_notes,
                   *([step_note] if step_note else [])]
    tier = host_kv_tier_bytes(d, held.kv_gpu, plan.tensor_parallel_size * plan.pipeline_parallel_size)
    host_used, host_budget, host_notes, host_pool = host_memory_use(catalog, d, hw, split, full_layout, held.max_len, w.estimate, engine, tier, gpus=gpus, gpu_kv_bytes_per_gpu=held.kv_gpu, gpu_bytes_per_gpu=w.per_gpu + budget.activation_bytes_per_gpu
        + budget.overhead_bytes_per_gpu + budget.cuda_graph_bytes_per_gpu + (ctx.bytes_per_gpu if ctx else held.kv_gpu))
    assumptions += host_notes
    gpu_fits = held.fits  # the KV cache alone; start-up and host RAM are checked next
    graphs_too = captures_cuda_graphs(hw.accel)  # the start-up check's graphs and sampler warm-up
    checks = [c for c in (startup_check(catalog, rule, settings, spec.architecture, total, gpus) if graphs_too else None, workspace_check(
        catalog, rule, hw.accel.software.value, spec.architecture, latent_attention(spec), settings.memory_fraction,
        total, held.tokens, held.max_len, plan.tensor_parallel_size), step_check(catalog, rule, settings, budget, total))
        if c is not None]  # the step's activations outside the fraction too (step_headroom.py)
    start = next((c for c in checks if not c.starts), checks[0] if checks else None)  # a failing one first
    if start is not None and not start.starts:
        held, assumptions = dataclasses.replace(held, fits=False), [*assumptions, start.note(rule, settings)]
    if host_budget is not None and host_used > host_budget:
        held = dataclasses.replace(held, fits=False)
    fewer_gpus, fewest = _smallest_fit(catalog, d, spec, hw) if not held.fits and search_smallest else (None, None)
    cold = page_cache_range(hw.accel, engine.name, rule, d.engine_version, kv_bytes_per_gpu=held.kv_gpu, total_bytes=total,
                            in_use_bytes_per_gpu=w.per_gpu + budget.activation_bytes_per_gpu + budget.overhead_bytes_per_gpu
                            + budget.cuda_graph_bytes_per_gpu, checkpoint_bytes=w.estimate.total_bytes,
                            memory_fraction=settings.memory_fraction)
    assumptions += [cold.note] if cold else []
    needed = layout.needed_bytes_per_sequence(held.max_len, settings.block_tokens)
    result = MemoryFit(
        fits=held.fits, model=spec.id, accelerator=hw.accel.id, engine=engine.id, quantization=quant.id,
        kv_cache_dtype=kv_dtype.id, parallel=plan, max_model_len=held.max_len, gpu_memory_bytes=total,
        usable_bytes_per_gpu=budget.usable_bytes_per_gpu, usable_short_bytes_per_gpu=budget.usable_short_bytes_per_gpu,
        weights_bytes=w.estimate.total_bytes,
        weights_bytes_per_gpu=w.per_gpu - projector, vision_projector_bytes_per_gpu=projector, activation_bytes_per_gpu=budget.activation_bytes_per_gpu,
        overhead_bytes_per_gpu=budget.overhead_bytes_per_gpu, kv_cache_bytes_per_gpu=held.kv_gpu,
        kv_cache_bytes_per_token=layout.bytes_per_token, kv_cache_copies=copies,
        kv_cache_bytes_per_token_one_copy=layout.bytes_per_token / copies, state_bytes_per_sequence=layout.state_bytes_per_seq,
        kv_window_tokens=layout.window_tokens if layout.window_bytes_per_token else None,
        kv_cache_bytes_per_token_beyond_window=layout.growing_bytes_per_token if layout.window_bytes_per_token else None,
        kv_cache_tokens=held.tokens, max_concurrency=held.concurrency,
        total_max_concurrency=held.concurrency * plan.data_parallel_size, sequence_bytes_per_gpu=held.seq_gpu,
        kv_cache_needed_bytes_per_gpu=needed,
        largest_context_tokens=answer.largest_tokens, concurrency=d.concurrency,
        state_slots=states and states.slots, state_running_cap=states and states.running_cap,
        running_cap=cap.sequences, running_cap_setting=cap.setting, running_cap_flag=cap.flag,
        queued_sequences=answer.queued,
        unified_cache_cells=ctx.tokens if unified and ctx else None,
        concurrency_note=answer.note,
        shortfall_bytes=0.0 if gpu_fits else ctx.shortfall_bytes_per_gpu if ctx else stage_shortfall(
            layout, rooms, held.max_len, settings.block_tokens, needed - budget.kv_bytes_per_gpu),
        smallest_fit=fewer_gpus, fewest_gpus_fit=fewest, assumptions=tuple(dict.fromkeys(assumptions)),
        host_memory_bytes_used=host_used, host_memory_budget_bytes=host_budget,
        host_shortfall_bytes=max(host_used - host_budget, 0.0) if host_budget is not None else 0.0, host_memory_origin=host_pool and host_pool.origin,
        host_memory_reserved_bytes=host_pool.reserved_bytes if host_pool else 0.0, host_memory_total_bytes=host_pool.total_bytes if host_pool and host_pool.origin != "unstated" else None,
        host_kv_cache_tokens=int(tier // full_layout.bytes_per_token) if full_layout.bytes_per_token else 0,
        memory_rule_id=rule.id, memory_rule=rule_label(rule, release_notes, d.engine_version, budget.model_runner),
        model_runner=budget.model_runner, build_note=named,
        engine_release=d.engine_version, cuda_graph_bytes_per_gpu=budget.cuda_graph_bytes_per_gpu,
        kv_cache_allocated_bytes_per_gpu=ctx and ctx.bytes_per_gpu,
        startup_shortfall_bytes_per_gpu=start.shortfall_bytes_per_gpu if start else 0.0,
        startup_headroom_bytes_per_gpu=start.headroom_bytes_per_gpu if start else 0.0,
        startup_note=start.note(rule, settings) if start and not start.starts else None,
        kv_cache_range_low_bytes_per_gpu=cold and cold.low_bytes_per_gpu,
        kv_cache_range_high_bytes_per_gpu=cold and cold.high_bytes_per_gpu,
        page_cache_bytes_per_gpu=cold and cold.page_cache_bytes, page_cache_note=cold and cold.note,
        kv_cache_fallback_bytes_per_gpu=budget.fallback_kv_bytes_per_gpu, kv_cache_fallback_note=budget.fallback_note,
    )
    return MemoryPlan(result, spec, hw.accel, quant, kv_dtype, w.estimate, layout, settings, hw, w.stages, split,
                      scale.scale.value if scale else 1.0, None if gpu_quant is quant else gpu_quant, w.expert_data_parallel)


def _fit_layout(catalog: Catalog, d: Deployment, spec: ModelSpec, hw: Hardware, plan: ParallelPlan) -> MemoryPlan:
    """The plan of one stated layout, without the search for a smaller instance (``fit_copies.FitAt``)."""
    return _fit(catalog, d, spec, hw, plan, search_smallest=False)


def _smallest_fit(catalog: Catalog, d: Deployment, spec: ModelSpec,
                  hw: Hardware) -> tuple[ParallelPlan | None, ParallelPlan | None]:
    """The fewest GPUs that hold one instance, and the fewest at any count (``fit_copies.smallest_fit``)."""
    return smallest_fit(catalog, d, spec, hw, _fit_layout)
