"""What would fit: for a deployment that does not, the changes that make it fit.

Three kinds, each checked by a fit of the changed deployment: the longest context the given hardware
holds, the fewest GPUs of the same accelerator that hold it at its context (a tensor × pipeline
layout, ``fit``'s ``fewest_gpus_fit``, at any GPU count the engine launches), and the next smaller weight format (smaller weights for this
model, not only fewer bits a weight on paper) that holds it at its context —
or, when none does, the largest smaller one that holds it at a shorter context, with that context
(one the model has a checkpoint in, or one the accelerator runs: weight-only formats run anywhere,
the others where it has their number format; and one the engine loads). A fourth, the weight offload
that fits (memory/offload_suggest.py), is checked against the host RAM too; another engine's build that
holds the model on the GPUs is offered (a dense model's in a format the asked engine does not run; a
mixture-of-experts model's beside that engine's expert offload, where the asked one keeps none); where the host RAM is
short by a host KV tier, the first answer is the largest tier it holds (memory/host_suggest.py). Where the KV cache fits
but start-up fails after it is sized (memory/startup.py), the first answers are the largest
``gpu_memory_utilization`` and the most ``max_num_seqs`` with which start-up fits; where the KV
cache is short, the engine's memory fraction raised to the most a deployment guide runs it at
(``engines.yaml`` ``memory_fraction_max``), when that holds it; on a Mac, macOS's GPU memory limit raised
(memory/wired_suggest.py).
"""

from __future__ import annotations

from inferplan.catalog.loader import Catalog, load_catalog
from inferplan.inputs.deployment import Deployment
from inferplan.memory.context_steps import CONTEXT_STEP_TOKENS, longest_steps
from inferplan.memory.hardware import with_default_engine
from inferplan.memory.host_span import host_split, spans_hosts_note
from inferplan.memory.host_suggest import held_tier, host_note, smaller_kv_tier, tier_words
from inferplan.memory.fit import MemoryPlan, fits_changed, plan_memory
from inferplan.memory.fit_result import FitSuggestion, MemoryFit
from inferplan.memory.kt_suggest import smaller_kt_methods
from inferplan.memory.layout import describe_split, host_gpus
from inferplan.memory.mtp import with_speculative
from inferplan.memory.offload_suggest import OffloadAnswer, context_floor, offload_answer
from inferplan.memory.precision import has_routed_experts, how_it_runs, model_formats
from inferplan.memory.slots import with_slots
from inferplan.memory.startup import startup_check, startup_fix
from inferplan.memory.step_budget import check_step_budget
from inferplan.memory.attention_workspace import fraction_fix, latent_attention, workspace_check
from inferplan.memory.engine_suggest import build_elsewhere, expert_offload_elsewhere, layer_split_here
from inferplan.memory.smaller_builds import weights_bytes
from inferplan.memory.wired_suggest import raised_wired_limit


def fit_or_suggest(d: Deployment, catalog: Catalog | None = None, *, speculative_tokens: int = 0,
                   speculative_method: str | None = None, draft_model: str | None = None) -> MemoryFit:
    """``fit``'s answer, with ``suggestions`` filled when the deployment does not fit; with speculative decoding
    (``speculative_tokens`` per step by ``speculative_method``) as ``memory.mtp.with_speculative`` plans it; with
    ``hosts_note`` where one instance spans more than one host."""
    catalog = catalog or load_catalog()
    planned = with_speculative(catalog, with_default_engine(d, catalog), speculative_tokens, speculative_method,
                               draft_model)
    result = _fit_or_suggest(planned, d, catalog)
    split = host_split(planned, catalog)
    return result if split is None else result.model_copy(update={"hosts_note": spans_hosts_note(split, planned)})


def _fit_or_suggest(d: Deployment, asked: Deployment, catalog: Catalog) -> MemoryFit:
    check_step_budget(d, catalog)  # a longest prompt the engine refuses is refused as the launch command refuses it
    mp = plan_memory(d, catalog)
    if mp.result.fits:
        return with_slots(d, mp.result, catalog)
    tier = smaller_kv_tier(d, mp, catalog)
    held = None if tier else held_tier(d, mp, catalog)
    if held is not None:  # GPU and host RAM both short: the GPU's answers at the tier the host RAM holds
        changes, there = held
        found = tuple(_with_tier(d, changes, s, catalog) for s in _answers(d.model_copy(update=changes), there,
                                                                         catalog)[0])
        note = None  # an offload's note at the smaller tier would describe another deployment than the one asked
    else:
        found, note = _answers(d, mp, catalog)
        found = (tier, *found) if tier else found
    note = note or (None if found else host_note(mp.result))
    if asked.max_model_len is None and d.max_model_len is not None:  # an Ollama tag's context, which more GPUs raise
        found = tuple(s if "max_model_len" in s.changes else
                      s.model_copy(update={"changes": {**s.changes, "max_model_len": d.max_model_len}}) for s in found)
    # llama.cpp: the whole slots that fit, and their tokens, beside the shortfall
    return with_slots(d, mp.result.model_copy(update={"suggestions": found, "offload_note": note}), catalog)


def _with_tier(d: Deployment, tier: dict, s: FitSuggestion, catalog: Catalog) -> FitSuggestion:
    """A GPU answer found at a smaller host KV tier, with that tier (the answer was fitted with it); an answer
    that sets the tier's setting itself (another engine's, which leaves the asked engine's tier out) as it is."""
    if tier.keys() & s.changes.keys():
        return s
    changes = {**tier, **s.changes}
    words = tier_words(d, tier, catalog, plan_memory(d.model_copy(update=changes), catalog).result)
    return FitSuggestion(kind=s.kind, changes=changes, summary=f"{words}; and {s.summary}")


def _answers(d: Deployment, mp: MemoryPlan, catalog: Catalog) -> tuple[tuple[FitSuggestion, ...], str | None]:
    """The changes that make ``d`` fit, with the note of the weight offload, when none fits."""
    # an offload frees GPU weights, not the headroom outside the fraction that start-up lacks
    offload = offload_answer(d, mp, catalog) if not mp.result.startup_note else OffloadAnswer()
    return tuple(s for s in (*suggest(d, mp, catalog), offload.suggestion) if s), offload.note


def smaller_weights(d: Deployment, catalog: Catalog) -> FitSuggestion | None:
    """The smaller weight format ``fit`` would suggest for ``d`` (None when ``d`` fits or none does)."""
    mp = plan_memory(d, catalog)
    return None if mp.result.fits else _smaller_weights(d, mp, catalog)


def suggest(d: Deployment, mp: MemoryPlan, catalog: Catalog) -> tuple[FitSuggestion, ...]:
    smaller = _smaller_weights(d, mp, catalog)
    found = (*_startup_settings(d, mp, catalog), _larger_fraction(d, mp, catalog), raised_wired_limit(d, mp, catalog),
             _longest_context(d, mp, catalog),
             _fewest_gpus(d, mp, catalog), smaller, *layer_split_here(d, mp, catalog, smaller),
             *smaller_kt_methods(d, mp, catalog, _offered_context),
             *expert_offload_elsewhere(d, mp, catalog), *build_elsewhere(d, mp, catalog))
    return tuple(s for s in found if s is not None)


def _startup_settings(d: Deployment, mp: MemoryPlan, catalog: Catalog) -> tuple[FitSuggestion | None, ...]:
    """Where start-up fails after the KV cache is sized: the largest fraction and the most sequences
    with which it fits, each checked by a fit."""
    r = mp.result
    if not r.startup_shortfall_bytes_per_gpu:
        return ()
    rule = catalog.memory_rules.records[r.memory_rule_id]  # the rule the fit planned with
    check = startup_check(catalog, rule, mp.settings, mp.spec.architecture, r.gpu_memory_bytes, r.parallel.gpus
                          // r.parallel.data_parallel_size)
    fix = startup_fix(check, r.gpu_memory_bytes) if check else None
    if fix is None:
        return _workspace_fraction(d, mp, catalog, rule)
    found = []
    if fix.memory_fraction and _fits(d, {"gpu_memory_utilization": fix.memory_fraction}, catalog):
        found.append(FitSuggestion(kind="startup", changes={"gpu_memory_utilization": fix.memory_fraction},
                                   summary=f"a smaller memory fraction: {fix.memory_fraction:g} leaves the CUDA graphs "
                                           "and the sampler warm-up room at start-up"))
    if fix.max_num_seqs and _fits(d, {"max_num_seqs": fix.max_num_seqs}, catalog):
        found.append(FitSuggestion(kind="startup", changes={"max_num_seqs": fix.max_num_seqs},
                                   summary=f"fewer sequences: the sampler warm-up over {fix.max_num_seqs:,} rows fits "
                                           "at start-up"))
    return tuple(found)


def _workspace_fraction(d: Deployment, mp: MemoryPlan, catalog: Catalog, rule) -> tuple[FitSuggestion, ...]:
    """Where the attention workspace allocated after the pool does not fit: the largest fraction with
    which it does, checked by a fit."""
    r = mp.result
    check = workspace_check(catalog, rule, mp.accelerator.software.value, mp.spec.architecture, latent_attention(mp.spec),
                            mp.settings.memory_fraction, r.gpu_memory_bytes, r.kv_cache_tokens, r.max_model_len,
                            r.parallel.tensor_parallel_size)
    fraction = fraction_fix(check, mp.fraction_scale) if check and not check.starts else None
    if not fraction or not _fits(d, {"gpu_memory_utilization": fraction}, catalog):
        return ()
    return (FitSuggestion(kind="startup", changes={"gpu_memory_utilization": fraction},
                          summary=f"a smaller memory fraction: {fraction:g} leaves the request table and the "
                                  f"{check.backend} attention workspace room at start-up"),)


def _larger_fraction(d: Deployment, mp: MemoryPlan, catalog: Catalog) -> FitSuggestion | None:
    """Where the KV cache is short (start-up is not), the largest memory fraction a deployment guide runs
    the engine at (engines.yaml ``memory_fraction_max``), when the fit at it holds the model; else with
    the longest context it holds at that fraction."""
    engine = catalog.engine(d.engine)
    top = engine.memory_fraction_max.value if engine.memory_fraction_max else None
    if top is None or mp.result.startup_shortfall_bytes_per_gpu or mp.settings.memory_fraction >= top:
        return None
    raised = {"gpu_memory_utilization": top}
    why = f"{top:g}, the most a deployment guide runs {engine.name} at"
    if _fits(d, raised, catalog):
        return FitSuggestion(kind="fraction", changes=raised, summary=f"a larger memory fraction: {why}")
    tokens = _longest(d, raised, mp.result.max_model_len, catalog, context_floor(catalog))
    if not tokens:
        return None
    return FitSuggestion(kind="fraction", changes={**raised, "max_model_len": tokens},
                         summary=f"a larger memory fraction and a shorter context: {why}, holds {tokens:,} tokens")


_fits = fits_changed


def _longest_context(d: Deployment, mp: MemoryPlan, catalog: Catalog) -> FitSuggestion | None:
    """The longest context, in whole steps, that fits on the same hardware and layout."""
    if mp.result.kv_cache_bytes_per_gpu <= 0:  # the weights leave no room: no context fits
        return None
    tokens = _longest(d, {}, mp.result.max_model_len, catalog, context_floor(catalog))
    if not tokens:
        return None
    return FitSuggestion(kind="context", changes={"max_model_len": tokens},
                         summary=f"a shorter context: {tokens:,} tokens is the longest this hardware holds")


def longest_context(d: Deployment, catalog: Catalog, below: int) -> int:
    """The longest context under ``below`` tokens, in whole steps, at which ``d`` fits (0: not even one step)."""
    return _longest(d, {}, below, catalog)


def _offered_context(d: Deployment, catalog: Catalog, below: int) -> int:
    """``longest_context`` for an offer: 0 below the shortest context one is made at (``context_floor``)."""
    return _longest(d, {}, below, catalog, context_floor(catalog))


def _longest(d: Deployment, changes: dict, below: int, catalog: Catalog, floor: int = CONTEXT_STEP_TOKENS) -> int:
    """The longest context under ``below`` tokens, in whole steps of at least ``floor`` tokens, at which ``d``
    with ``changes`` fits (0: none); the offers pass ``context_floor``, the other callers of ``longest_context``
    (a refusal's or a speed estimate's longest context) take any whole step."""
    found = longest_steps(lambda tokens: _fits(d, {**changes, "max_model_len": tokens}, catalog), below, floor)
    return found[0] if found else 0


def _fewest_gpus(d: Deployment, mp: MemoryPlan, catalog: Catalog) -> FitSuggestion | None:
    """The fewest GPUs that hold the model; beyond one host, the smallest instance laid out as the vLLM
    guide lays one out over nodes (``smallest_fit``: tensor parallel within a host, pipeline stages
    across them: DeepSeek-R1 in FP8 on H100s is 16 GPUs, TP8 × PP2, not 11 single-GPU stages)."""
    s = mp.result.fewest_gpus_fit
    if s is None:
        return None
    host = host_gpus(mp.hardware)
    if s.gpus > host and mp.result.smallest_fit is not None:
        s = mp.result.smallest_fit
    changes = {"gpus": s.gpus, "tensor_parallel_size": s.tensor_parallel_size,
               "pipeline_parallel_size": s.pipeline_parallel_size, "data_parallel_size": None}
    if not _fits(d, changes, catalog):
        return None
    split = describe_split(s.tensor_parallel_size, s.pipeline_parallel_size)
    if s.gpus == mp.result.parallel.gpus:  # the same GPUs, split another way
        return FitSuggestion(kind="gpus", changes=changes, summary=f"another layout of the same {s.gpus} GPUs: {split}")
    hosts = f" in {-(-s.gpus // host)} hosts of {host}" if s.gpus > host else ""
    return FitSuggestion(kind="gpus", changes=changes, summary=f"more GPUs: {s.gpus} × {mp.accelerator.id}{hosts}, {split}")


def _smaller_weights(d: Deployment, mp: MemoryPlan, catalog: Catalog) -> FitSuggestion | None:
    """The largest weight format smaller than the planned one that fits at the planned context; when
    none does, the largest that fits at a shorter one, with the longest context it holds. Only formats the
    model exists in for the engine (``model_formats``: its builds, the engine's conversions of one, what its
    launcher quantizes one to at load), so a format tied to another model (DeepSeek-V4's mixed FP4/FP8, a
    serving option of gpt-oss) is never offered. A format the engine emulates there (``how_it_runs``: its weights
    dequantized every forward, slower than 16-bit weights) is offered only where no other format holds it, and
    says it is emulated."""
    bits = mp.quantization.bits_per_weight.value
    engine = catalog.engine(d.engine)
    has = set(mp.spec.builds)
    formats = model_formats(catalog, mp.spec, engine.id)
    candidates = sorted(
        (q for q in (catalog.quantization(f) for f in formats if f in catalog.quantizations)
         if q.bits_per_weight.value < bits and engine.loads(q, accel=mp.accelerator, release=d.engine_version)
         and (q.id in has or q.native_format is None or q.native_format in mp.accelerator.native_formats)),
        key=lambda q: -q.bits_per_weight.value)
    # fewer bits per weight on paper, not always fewer bytes for this model (a format's bits on its experts only)
    candidates = [q for q in candidates if weights_bytes(d, q.id, catalog) < mp.result.weights_bytes]

    runs = {q.id: how_it_runs(q, mp.accelerator, engine.id, d.engine_version, has_routed_experts(mp.spec))
            for q in candidates}

    def named(q) -> str:
        how = "" if formats[q.id] == "a published build" else f", {formats[q.id]}"
        emulated = f", {runs[q.id]}: slower than 16-bit weights" if "emulated" in runs[q.id] else ""
        return f"{q.name} ({q.bits_per_weight.value:.3g} bits per weight{how}{emulated})"
    for emulated in (False, True):
        group = [q for q in candidates if ("emulated" in runs[q.id]) == emulated]
        for q in group:
            if _fits(d, {"quantization": q.id}, catalog):
                return FitSuggestion(kind="quantization", changes={"quantization": q.id}, summary=f"smaller weights: {named(q)}")
        for q in group:
            tokens = _longest(d, {"quantization": q.id}, mp.result.max_model_len, catalog, context_floor(catalog))
            if tokens:
                return FitSuggestion(kind="quantization", changes={"quantization": q.id, "max_model_len": tokens},
                                     summary=f"smaller weights and a shorter context: {named(q)} at {tokens:,} tokens")
    return None
