"""What another engine, or a smaller published file on the asked one, offers a model that does not fit.

A mixture-of-experts model on an engine that keeps no experts in host RAM: each engine that does, with its
expert offload (or its build that holds the model on the GPUs alone). A dense model: another engine's build in
a format the asked engine does not run, with fewer weight bytes, that holds it on the GPUs alone; where none
does, that engine's layer split between the GPUs and host RAM; and the asked engine's own layer split of its
smallest published file. The offload searches are ``memory/offload_suggest.py``'s; the smaller builds an
engine makes, ``memory/smaller_builds.py``'s.
"""

from __future__ import annotations

from functools import cache
from typing import Callable

from inferplan.catalog.loader import Catalog
from inferplan.catalog.quantization_schema import Quantization
from inferplan.errors import InferplanError
from inferplan.inputs.deployment import Deployment
from inferplan.memory.fit import MemoryPlan, plan_memory
from inferplan.memory.fit_result import FitSuggestion
from inferplan.memory.hardware import with_default_engine
from inferplan.memory.offload_suggest import (UNBOUNDED_HOST_GB, Found, at_shorter_context, fewest_expert_layers,
                                              fit_with, offload_answer, with_host)
from inferplan.memory.precision import model_formats, planned_weight_format
from inferplan.memory.smaller_builds import (emulated_words, fewer_bits_shorter, fewer_bits_whole, has_file, origin,
                                             smaller_formats, weights_bytes)


# fields one engine's launch takes that another's does not: left out when a suggestion changes engine
ENGINE_FIELDS = ("engine_version", "gpu_memory_utilization", "moe_runner_backend", "moe_kernel", "topk_topp_sampler",
                 "max_num_batched_tokens", "ubatch_size", "flash_attention", "mtp_draft", "n_gpu_layers", "n_cpu_moe",
                 "cpu_offload_gb", "kt_num_gpu_experts", "kt_method", "kt_release", "kv_offloading_size",
                 "kv_offloading_backend", "hicache_ratio", "hicache_size", "max_mamba_cache_size", "mamba_full_memory_ratio")
EXPERT_OFFLOAD = ("n_cpu_moe", "kt_num_gpu_experts")  # offload_settings that keep routed experts in host RAM


def expert_offload_elsewhere(d: Deployment, mp: MemoryPlan, catalog: Catalog) -> tuple[FitSuggestion, ...]:
    """For a mixture-of-experts model that does not fit, on an engine that cannot keep experts in host
    RAM: each engine that can (``offload_settings`` naming ``n_cpu_moe`` or ``kt_num_gpu_experts``), with
    the setting that fits the GPU and the host RAM it needs, checked against the host RAM known — the
    routed experts run where they sit, so decode reads only the active experts from host RAM rather than
    copying offloaded weights to the GPU every step. An engine whose build holds the whole model on the GPUs
    (llama.cpp's GGUF Q4_K_M of DeepSeek-R1 on 8 H100s) is offered as that engine and build, with no offload."""
    takes = set(catalog.engine(d.engine).offload_settings)
    arch = None if mp.spec.architecture_is_proxy else mp.spec.architecture
    if (mp.accelerator.unified_memory or mp.weights.expert_bytes <= 0 or arch is None or takes & set(EXPERT_OFFLOAD)
            or not mp.result.shortfall_bytes):  # the GPU holds the model: moving experts frees nothing that is short
        return ()
    found = []
    for engine in catalog.engines:
        offloads = set(engine.offload_settings) & set(EXPERT_OFFLOAD)
        moved = on_engine(d, engine.id, catalog) if offloads and engine.id != d.engine else None
        if moved is None:
            continue
        there, switch = moved
        held, as_planned = _held_there(there, switch, engine.name, mp, catalog)
        found += [held] if held else []
        if as_planned:  # its build holds the model as asked: no expert offload is needed there
            continue

        def least(at: Deployment, offloads=offloads, name=engine.name) -> Found | None:
            return (fewest_expert_layers(at, catalog, arch.num_layers) if "n_cpu_moe" in offloads else
                    _all_experts_on_host(at, catalog, name))

        whole = held.changes["quantization"] if held and "max_model_len" not in held.changes else None
        offer = _build_expert_offload(there, mp, catalog, least, whole)
        found += [offer[0].model_copy(update={"changes": {**switch, **offer[0].changes}})] if offer else []
    return tuple(found)


def _expert_offload(at: Deployment, mp: MemoryPlan, catalog: Catalog, least: Callable[[Deployment], Found | None],
                    built: Quantization | None = None) -> tuple[FitSuggestion, int, float] | None:
    """``least``'s expert offload of ``at`` (in ``built``, a published file, when given), at its context or the
    longest shorter one, with that context and the host RAM it needs (None: none fits the GPU and the host RAM)."""
    hit = least(at) or at_shorter_context(at, mp, catalog, least)
    how = f", in the published {built.name} build" if built else ""
    answer = with_host(at, hit, catalog, lead=f"experts in host RAM, run by the CPU{how}") if hit else None
    if answer is None or answer.suggestion is None or answer.host_bytes_needed is None:
        return None
    s = answer.suggestion
    s = s.model_copy(update={"changes": {"quantization": built.id, **s.changes}}) if built else s
    return s, hit.fit.max_model_len, answer.host_bytes_needed


def _build_expert_offload(there: Deployment, mp: MemoryPlan, catalog: Catalog, least: Callable[[Deployment], Found | None],
                          whole: str | None) -> tuple[FitSuggestion, int, float] | None:
    """Of ``there``'s planned build and those with fewer bits, the ones the catalogue names a file of (less ``whole``,
    a build already offered holding the model on the GPUs alone), the expert offload that holds the longest context
    with the least host RAM: GLM-4.5-Air's published Q4_K_M on llama.cpp with about 66 GiB, not a BF16 GGUF no one
    publishes with 191 GiB; where no such build's offload fits, the planned build's (searched once; None: none fits)."""
    planned = planned_weight_format(catalog, there, mp.spec)
    as_planned = cache(lambda: _expert_offload(there, mp, catalog, least))
    builds = [q for q in (planned, *smaller_formats(there, mp, catalog)) if q.id != whole and has_file(mp.spec, q.id)]
    offers = [_expert_offload(there.model_copy(update={"quantization": q.id}), mp, catalog, least, q) if q != planned
              else as_planned() for q in builds]
    return max((o for o in offers if o), key=lambda o: (o[1], -o[2]), default=None) or as_planned()


def _held_there(there: Deployment, switch: dict, name: str, mp: MemoryPlan, catalog: Catalog,
                keep: Callable[[str], bool] = lambda q: True) -> tuple[FitSuggestion | None, bool]:
    """``there`` (the deployment on engine ``name``, by the changes ``switch``) in the build of that engine's that
    holds the model on the GPUs alone: its own build as planned (then True), else its largest smaller one, else
    the one that holds it at the longest shorter context; only formats ``keep`` lets through."""
    whole = fit_with(there, {}, catalog, host_gb=None)
    if whole is not None and not whole.host_memory_bytes_used and keep(whole.quantization):
        built = catalog.quantization(whole.quantization)
        return FitSuggestion(kind="quantization", changes={**switch, "quantization": whole.quantization},
                             summary=f"another engine: {name} holds it on these GPUs in {built.name}, "
                                     "with no weights in host RAM"), True
    fewer = fewer_bits_whole(there, mp, catalog, keep)
    if fewer is not None:  # a smaller build of that engine's holds it all (Qwen3-30B-A3B's Q4_K_M on one RTX 4090)
        return FitSuggestion(kind="quantization", changes={**switch, "quantization": fewer.id},
                             summary=f"another engine, fewer bits: {name} holds it on these GPUs in "
                                     f"{fewer.name} ({origin(there, mp, catalog, fewer.id)}{emulated_words(fewer, there, mp)}), "
                                     "with no weights in host RAM"), False
    shorter = fewer_bits_shorter(there, mp, catalog, keep)
    if shorter is None:  # else one at a shorter context (Qwen3-32B's Q4_K_M on one RTX 4090 below 40,960 tokens)
        return None, False
    q, tokens = shorter
    return FitSuggestion(kind="quantization", changes={**switch, "quantization": q.id, "max_model_len": tokens},
                         summary=f"another engine, fewer bits, shorter context: {name} holds it on these GPUs in "
                                 f"{q.name} ({origin(there, mp, catalog, q.id)}{emulated_words(q, there, mp)}) at "
                                 f"{tokens:,} tokens of context "
                                 "(the longest it holds), with no weights in host RAM"), False


def build_elsewhere(d: Deployment, mp: MemoryPlan, catalog: Catalog) -> tuple[FitSuggestion, ...]:
    """For a dense model that does not fit: each other engine's build in a format ``d``'s engine does not run,
    with fewer weight bytes than ``d``'s, that holds the model on the GPUs alone, at its context or at the longest shorter one (llama.cpp's GGUF
    Q4_K_M of Qwen3-32B on one RTX 4090, which vLLM does not load); of the engines with a measured point on the
    accelerator's software stack; beside a build that holds it only at a shorter context, and where none holds it,
    the engine's layer split (``_layer_split``; beside a shorter build, only at the asked context). A
    mixture-of-experts model is answered by ``expert_offload_elsewhere``."""
    if mp.weights.expert_bytes > 0 or not mp.result.shortfall_bytes:
        return ()
    here = catalog.engine(d.engine)
    formats = model_formats(catalog, mp.spec, d.engine)

    def not_here(q: str) -> bool:  # a format the asked engine does not run (its formats are suggested as its own)
        return q not in formats or q not in catalog.quantizations or not here.loads(
            catalog.quantization(q), accel=mp.accelerator, release=d.engine_version)

    found = []
    for engine in catalog.engines:  # the engines a question naming none compares there (``runs_measured_on``)
        other = engine.id != d.engine and engine.runs_measured_on(mp.accelerator.software)
        moved = on_engine(d, engine.id, catalog) if other else None
        if moved is None:
            continue
        there, switch = moved
        keep = lambda q, at=there: not_here(q) and weights_bytes(at, q, catalog) < mp.result.weights_bytes  # noqa: E731
        held, _ = _held_there(there, switch, engine.name, mp, catalog, keep)
        found += _split_beside(held, lambda: _layer_split(there, switch, f"another engine, fewer bits: {engine.name} in",
                                                          mp, catalog, keep))
    return tuple(found)


def layer_split_here(d: Deployment, mp: MemoryPlan, catalog: Catalog, smaller: FitSuggestion | None) -> tuple[FitSuggestion, ...]:
    """For a dense model that does not fit an engine that splits it by layers: beside ``smaller``, the engine's own
    smaller weights (None: none holds the model on the GPUs), the layer split of its smallest published file with
    fewer weight bytes than the planned format, as ``build_elsewhere`` pairs another engine's (Qwen3-32B in BF16 on
    llama.cpp on one RTX 4090: Q4_K_M with --n-gpu-layers 54 in 10 GiB of host RAM, beside Q5_K_M at 9,216 tokens)."""
    if mp.weights.expert_bytes > 0 or not mp.result.shortfall_bytes:
        return ()
    keep = lambda q: q != mp.quantization.id and weights_bytes(d, q, catalog) < mp.result.weights_bytes  # noqa: E731
    return tuple(s for s in _split_beside(smaller, lambda: _layer_split(d, {}, "fewer bits:", mp, catalog, keep))
                 if s is not smaller)


def _split_beside(held: FitSuggestion | None, split: Callable[[], FitSuggestion | None]) -> tuple[FitSuggestion, ...]:
    """``held`` (a build holding the model on the GPUs alone), then the layer split ``split`` finds where none holds
    it or ``held`` holds only a shorter context; beside a shorter ``held``, the split at the asked context only."""
    shorter = held is not None and "max_model_len" in held.changes
    found = split() if held is None or shorter else None
    if shorter and found is not None and "max_model_len" in found.changes:
        found = None
    return tuple(s for s in (held, found) if s)


def _layer_split(there: Deployment, switch: dict, lead: str, mp: MemoryPlan, catalog: Catalog,
                 keep: Callable[[str], bool]) -> FitSuggestion | None:
    """``there``'s smallest build the catalogue names a file of (of the formats ``keep`` lets through), split by layers
    between the GPUs and host RAM (an engine taking ``n_gpu_layers``, llama.cpp's -ngl, whose layers in host RAM run
    on the CPU rather than being copied to the GPU every step), with the offload ``offload_answer`` finds for it and
    the host RAM that needs (Qwen3-32B's Q4_K_M on a 12 GB card); ``lead`` opens its summary."""
    if "n_gpu_layers" not in catalog.engine(there.engine).offload_settings:
        return None
    files = [catalog.quantization(q) for q in model_formats(catalog, mp.spec, there.engine, at_load=False)
             if q in catalog.quantizations and keep(q) and has_file(mp.spec, q)]
    if not files:
        return None
    q = min(files, key=lambda q: q.bits_per_weight.value)
    at = there.model_copy(update={"quantization": q.id})
    try:
        answer = offload_answer(at, plan_memory(at, catalog), catalog)
    except InferplanError:
        return None
    if answer.suggestion is None:
        return None
    s = answer.suggestion
    return s.model_copy(update={"changes": {**switch, "quantization": q.id, **s.changes},
                                "summary": f"{lead} {q.name} (a published file), {s.summary}"})


def on_engine(d: Deployment, engine: str, catalog: Catalog) -> tuple[Deployment, dict] | None:
    """``d`` on ``engine``: its other engine's settings left out, its weight format kept where ``engine``
    loads it, else the model's default build for ``engine`` (None: ``engine`` plans it in neither)."""
    base = {"engine": engine, **{f: None for f in ENGINE_FIELDS if f in d.model_fields_set}}
    for switch in (base, {**base, "quantization": None}):
        moved = with_default_engine(d.model_copy(update=switch), catalog)
        try:
            plan_memory(moved.model_copy(update={"host_memory_gb": UNBOUNDED_HOST_GB}), catalog)
        except InferplanError:
            continue
        return moved, switch
    return None


def _all_experts_on_host(d: Deployment, catalog: Catalog, name: str) -> Found | None:
    fit = fit_with(d, {}, catalog)
    return Found({}, fit, name, "keeps every routed expert in host RAM (no --kt-num-gpu-experts)") if fit else None
