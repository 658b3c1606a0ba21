"""The weight offload that makes a deployment fit its GPUs, with the host RAM it then needs.

For a deployment that does not fit, each weight-offload setting the engine takes (``engines.yaml``
``offload_settings``) is searched on the GPU alone, with a host assumed large enough for anything:
llama.cpp's smallest ``--n-cpu-moe`` for a mixture-of-experts model, else its largest
``--n-gpu-layers`` (with every expert in host RAM for a MoE model); vLLM's smallest whole-GiB
``--cpu-offload-gb``; none, when the GPU holds every weight (only the host RAM is short); at the
longest shorter context, where none fits at the deployment's own. Each of these is the setting that
fits the GPU with the least in host RAM, so when the host RAM it needs is more than the deployment states (``host_memory_gb``), no offload fits
and the answer says so. Unstated host RAM: the suggestion states what it needs. A unified-memory
accelerator has no separate host RAM to offload to.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache
from typing import Callable

from inferplan.catalog.loader import Catalog
from inferplan.catalog.models import ModelSpec
from inferplan.catalog.schema import Quantization
from inferplan.errors import InferplanError
from inferplan.inputs.deployment import Deployment
from inferplan.memory.fit import MemoryPlan, memory_fits, plan_memory
from inferplan.memory.fit_result import FitSuggestion, MemoryFit
from inferplan.memory.precision import has_routed_experts, how_it_runs, model_formats, planned_weight_format
from inferplan.memory.context_steps import longest_steps, whole_steps
from inferplan.memory.hardware import with_default_engine
from inferplan.memory.host_budget import known_host_bytes
from inferplan.memory.monotone import monotone_search
from inferplan.memory.offload import GIB, gpu_layers, output_layer_first

WEIGHT_OFFLOAD = ("n_gpu_layers", "n_cpu_moe", "cpu_offload_gb")  # the settings the searches below find

# host RAM the search assumes (GiB, Deployment's upper bound): enough for any offload, so a probe
# fits or not on its GPUs alone; the host RAM the found setting needs is checked afterwards
UNBOUNDED_HOST_GB = 1e6


@dataclass(frozen=True)
class OffloadAnswer:
    """The offload that fits (None: none does), or why none is suggested (None: nothing to say); with
    the least setting that fits the GPU as the engine's flag and the host RAM it needs, with what the
    OS and the engine keep (None: no setting fits the GPU)."""

    suggestion: FitSuggestion | None = None
    note: str | None = None
    flag: str | None = None
    host_bytes_needed: float | None = None


@dataclass(frozen=True)
class _Found:
    changes: dict[str, int | float | None]
    fit: MemoryFit  # on the GPUs, with unbounded host RAM
    flag: str  # the setting as the engine's flag (llama.cpp --n-cpu-moe 17)
    what: str  # what that keeps in host RAM


def offload_answer(d: Deployment, mp: MemoryPlan, catalog: Catalog) -> OffloadAnswer:
    """For a deployment that does not fit: the weight offload that fits, checked against the host RAM;
    where none fits the GPU at the deployment's context, the one that does at the longest shorter context."""
    takes = catalog.engine(d.engine).offload_settings
    arch = None if mp.spec.architecture_is_proxy else mp.spec.architecture
    if mp.accelerator.unified_memory or not takes:
        return OffloadAnswer()
    moe = mp.weights.expert_bytes > 0

    def searches(there: Deployment) -> list[Callable[[], _Found | None]]:
        found: list[Callable[[], _Found | None]] = []
        if arch is not None and "n_cpu_moe" in takes and moe:
            found.append(lambda: _fewest_expert_layers(there, catalog, arch.num_layers))
        if arch is not None and "n_gpu_layers" in takes:
            found.append(lambda: _most_gpu_layers(there, catalog, arch.num_layers, moe and "n_cpu_moe" in takes))
        if "cpu_offload_gb" in takes:
            found.append(lambda: _least_offload_gb(there, catalog, mp.weights.total_bytes))
        return found

    def least(there: Deployment) -> _Found | None:
        return next((f for f in (search() for search in searches(there)) if f is not None), None)

    if not searches(d):
        return OffloadAnswer()
    stated = {f: None for f in WEIGHT_OFFLOAD if getattr(d, f) is not None}
    if (bare := _fits(d, stated, catalog)) is not None:  # the GPU holds every weight: only the host RAM is short
        return _with_host(d, _Found(stated, bare, "no weight offload", "(the GPU holds every weight)"), catalog,
                          lead="weights on the GPU") if stated else OffloadAnswer()
    found = least(d) or _at_shorter_context(d, mp, catalog, least)
    if found is None:
        return OffloadAnswer(note="no weight offload fits: with every offloadable weight in host RAM the GPU is still "
                                  "short, at any context")
    return _with_host(d, found, catalog)


def _at_shorter_context(d: Deployment, mp: MemoryPlan, catalog: Catalog,
                        least: Callable[[Deployment], _Found | None]) -> _Found | None:
    """Where no offload fits the GPU at the deployment's context (one sequence's KV cache alone overfills
    it): ``least``'s setting at the longest shorter context at which it fits the GPU and the host RAM
    known; else at the shortest context, the least host RAM any context needs, for ``_with_host`` to say so."""
    known = known_host_bytes(catalog, d)

    def at(tokens: int, host: bool = True) -> _Found | None:
        f = least(d.model_copy(update={"max_model_len": tokens}))
        if f is None or host and known is not None and _host_needed(f, catalog) > known[0]:
            return None
        why = "the longest an offload fits" if host else "the shortest, needing the least host RAM"
        return _Found({**f.changes, "max_model_len": tokens}, f.fit, f"{f.flag} at {tokens:,} tokens of context ({why})",
                      f.what)

    floor = context_floor(catalog)
    hit = longest_steps(at, mp.result.max_model_len, floor)
    return hit[1] if hit else at(whole_steps(floor), host=False) if known is not None else None


def context_floor(catalog: Catalog) -> int:
    """The shortest context a shorter-context offer is made at (``offload.yaml`` ``offered-context-floor-tokens``)."""
    return int(catalog.constant("offered-context-floor-tokens"))


def _host_needed(found: _Found, catalog: Catalog) -> float:
    """Host RAM a found setting needs, with what the OS and the engine keep."""
    return found.fit.host_memory_bytes_used + catalog.constant("host-memory-reserve-bytes")


def _with_host(d: Deployment, found: _Found, catalog: Catalog,
               lead: str = "weights in host RAM (slower decode)") -> OffloadAnswer:
    """The suggestion at the deployment's host RAM, or at the host RAM it needs when none is stated."""
    needed = _host_needed(found, catalog)
    changes: dict[str, int | float | str | None] = dict(found.changes)
    known = known_host_bytes(catalog, d)
    if known is None:
        changes["host_memory_gb"] = max(1, math.ceil(needed / GIB))
        host = f"it needs {changes['host_memory_gb']} GiB of host RAM with what the OS and the engine keep: check the machine has it"
    elif needed > known[0]:
        return OffloadAnswer(flag=found.flag, host_bytes_needed=needed, note=f"no weight offload fits the host RAM: the least that fits the GPU, {found.flag}, needs "
                                  f"{needed / GIB:.1f} GiB of host RAM with what the OS and the engine keep, more than the "
                                  f"{known[0] / GIB:g} GiB {known[1]}")
    else:
        host = f"{needed / GIB:.1f} of the {known[0] / GIB:g} GiB of host RAM {known[1]}, with what the OS and the engine keep"
    if _fits(d, changes, catalog, host_gb=None) is None:  # the command as suggested: never one that does not fit
        return OffloadAnswer()
    return OffloadAnswer(FitSuggestion(kind="offload", changes=changes, summary=f"{lead}: {found.flag} {found.what}; {host}"),
                         flag=found.flag, host_bytes_needed=needed)


def _fits(d: Deployment, changes: dict, catalog: Catalog, *, host_gb: float | None = UNBOUNDED_HOST_GB) -> MemoryFit | None:
    """The fit of ``d`` with ``changes`` when it fits (``host_gb`` None: the host RAM ``d`` or the changes state);
    a probe that does not fit is told by ``memory_fits``, without the search for the smallest instance that holds it."""
    update = dict(changes) if host_gb is None else {**changes, "host_memory_gb": host_gb}
    try:
        probe = d.model_copy(update=update)
        if not memory_fits(probe, catalog):
            return None
        r = plan_memory(probe, catalog).result
    except InferplanError:
        return None
    return r if r.fits else None


def _fewest_expert_layers(d: Deployment, catalog: Catalog, layers: int) -> _Found | None:
    hit = monotone_search(1, layers, lambda n: _fits(d, {"n_cpu_moe": n, "n_gpu_layers": None}, catalog), smallest=True)
    if hit is None:
        return None
    n, fit = hit
    return _Found({"n_cpu_moe": n, "n_gpu_layers": None}, fit, f"llama.cpp --n-cpu-moe {n}",
                  f"keeps the experts of the first {n} of {layers} layers in host RAM")


def _most_gpu_layers(d: Deployment, catalog: Catalog, layers: int, experts_off: bool) -> _Found | None:
    fixed = {"n_cpu_moe": layers} if experts_off else {"n_cpu_moe": None}
    hit = monotone_search(0, layers, lambda n: _fits(d, {**fixed, "n_gpu_layers": n}, catalog), smallest=False)
    if hit is None:
        return None
    n, fit = hit
    experts = " and every expert" if experts_off else ""
    flag = f"llama.cpp --n-gpu-layers {n}" + (f" --n-cpu-moe {layers}" if experts_off else "")
    on_gpu, output_on_host, _ = gpu_layers(n, layers, output_layer_first(catalog, catalog.engine(d.engine).id, d.engine_version))
    where = (f"keeps all {layers} repeating layers on the GPU, the output layer{experts} in host RAM" if on_gpu == layers else
             f"keeps {on_gpu} of {layers} layers{'' if output_on_host else ' and the output layer'} on the GPU, "
             f"the others{experts} in host RAM, run by the CPU")
    return _Found({**fixed, "n_gpu_layers": n}, fit, flag, where)


def _least_offload_gb(d: Deployment, catalog: Catalog, weights_bytes: float) -> _Found | None:
    hit = monotone_search(1, max(1, math.ceil(weights_bytes / GIB)),
                  lambda g: _fits(d, {"cpu_offload_gb": float(g)}, catalog), smallest=True)
    if hit is None:
        return None
    g, fit = hit
    return _Found({"cpu_offload_gb": float(g)}, fit, f"{catalog.engine(d.engine).name} --cpu-offload-gb {g}",
                  f"keeps {g} GiB of each GPU's weights in host RAM, copied to the GPU in every forward pass")


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
        moved = _on_engine(d, engine.id, catalog) if offloads and engine.id != d.engine else None
        if moved is None:
            continue
        there, switch = moved
        held, as_planned = _held_there(there, switch, engine.name, mp, catalog)
        found += [held] if held else []
        if as_planned:  # its build holds the model as asked: no expert offload is needed there
            continue

        def least(at: Deployment, offloads=offloads, name=engine.name) -> _Found | None:
            return (_fewest_expert_layers(at, catalog, arch.num_layers) if "n_cpu_moe" in offloads else
                    _all_experts_on_host(at, catalog, name))

        whole = held.changes["quantization"] if held and "max_model_len" not in held.changes else None
        offer = _build_expert_offload(there, mp, catalog, least, whole)
        found += [offer[0].model_copy(update={"changes": {**switch, **offer[0].changes}})] if offer else []
    return tuple(found)


def _expert_offload(at: Deployment, mp: MemoryPlan, catalog: Catalog, least: Callable[[Deployment], _Found | None],
                    built: Quantization | None = None) -> tuple[FitSuggestion, int, float] | None:
    """``least``'s expert offload of ``at`` (in ``built``, a published file, when given), at its context or the
    longest shorter one, with that context and the host RAM it needs (None: none fits the GPU and the host RAM)."""
    hit = least(at) or _at_shorter_context(at, mp, catalog, least)
    how = f", in the published {built.name} build" if built else ""
    answer = _with_host(at, hit, catalog, lead=f"experts in host RAM, run by the CPU{how}") if hit else None
    if answer is None or answer.suggestion is None or answer.host_bytes_needed is None:
        return None
    s = answer.suggestion
    s = s.model_copy(update={"changes": {"quantization": built.id, **s.changes}}) if built else s
    return s, hit.fit.max_model_len, answer.host_bytes_needed


def _build_expert_offload(there: Deployment, mp: MemoryPlan, catalog: Catalog, least: Callable[[Deployment], _Found | None],
                          whole: str | None) -> tuple[FitSuggestion, int, float] | None:
    """Of ``there``'s planned build and those with fewer bits, the ones the catalogue names a file of (less ``whole``,
    a build already offered holding the model on the GPUs alone), the expert offload that holds the longest context
    with the least host RAM: GLM-4.5-Air's published Q4_K_M on llama.cpp with about 66 GiB, not a BF16 GGUF no one
    publishes with 191 GiB; where no such build's offload fits, the planned build's (searched once; None: none fits)."""
    planned = planned_weight_format(catalog, there, mp.spec)
    as_planned = cache(lambda: _expert_offload(there, mp, catalog, least))
    builds = [q for q in (planned, *_smaller_formats(there, mp, catalog)) if q.id != whole and _has_file(mp.spec, q.id)]
    offers = [_expert_offload(there.model_copy(update={"quantization": q.id}), mp, catalog, least, q) if q != planned
              else as_planned() for q in builds]
    return max((o for o in offers if o), key=lambda o: (o[1], -o[2]), default=None) or as_planned()


def _held_there(there: Deployment, switch: dict, name: str, mp: MemoryPlan, catalog: Catalog,
                keep: Callable[[str], bool] = lambda q: True) -> tuple[FitSuggestion | None, bool]:
    """``there`` (the deployment on engine ``name``, by the changes ``switch``) in the build of that engine's that
    holds the model on the GPUs alone: its own build as planned (then True), else its largest smaller one, else
    the one that holds it at the longest shorter context; only formats ``keep`` lets through."""
    whole = _fits(there, {}, catalog, host_gb=None)
    if whole is not None and not whole.host_memory_bytes_used and keep(whole.quantization):
        built = catalog.quantization(whole.quantization)
        return FitSuggestion(kind="quantization", changes={**switch, "quantization": whole.quantization},
                             summary=f"another engine: {name} holds it on these GPUs in {built.name}, "
                                     "with no weights in host RAM"), True
    fewer = _fewer_bits_whole(there, mp, catalog, keep)
    if fewer is not None:  # a smaller build of that engine's holds it all (Qwen3-30B-A3B's Q4_K_M on one RTX 4090)
        return FitSuggestion(kind="quantization", changes={**switch, "quantization": fewer.id},
                             summary=f"another engine, fewer bits: {name} holds it on these GPUs in "
                                     f"{fewer.name} ({_origin(there, mp, catalog, fewer.id)}{_emulated_words(fewer, there, mp)}), "
                                     "with no weights in host RAM"), False
    shorter = _fewer_bits_shorter(there, mp, catalog, keep)
    if shorter is None:  # else one at a shorter context (Qwen3-32B's Q4_K_M on one RTX 4090 below 40,960 tokens)
        return None, False
    q, tokens = shorter
    return FitSuggestion(kind="quantization", changes={**switch, "quantization": q.id, "max_model_len": tokens},
                         summary=f"another engine, fewer bits, shorter context: {name} holds it on these GPUs in "
                                 f"{q.name} ({_origin(there, mp, catalog, q.id)}{_emulated_words(q, there, mp)}) at "
                                 f"{tokens:,} tokens of context "
                                 "(the longest it holds), with no weights in host RAM"), False


def _has_file(spec: ModelSpec, quantization: str) -> bool:
    """The catalogue names a published file of the model in ``quantization`` (its card's build with a repo)."""
    return spec.card is not None and any(c.quantization == quantization and c.repo for c in spec.card.checkpoints)


def _origin(there: Deployment, mp: MemoryPlan, catalog: Catalog, quantization: str) -> str:
    """Where ``there``'s engine gets the model in ``quantization``: a file the catalogue names, else how it is made."""
    if _has_file(mp.spec, quantization):
        return "a published file"
    made = model_formats(catalog, mp.spec, there.engine, at_load=False).get(quantization, "a build")
    return f"{made}; the catalogue names no file of it"


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
        moved = _on_engine(d, engine.id, catalog) if other else None
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


def weights_bytes(d: Deployment, quantization: str, catalog: Catalog) -> float:
    """The weights ``d`` holds in ``quantization`` (infinite: the format is refused)."""
    try:
        return plan_memory(d.model_copy(update={"quantization": quantization}), catalog).result.weights_bytes
    except InferplanError:
        return float("inf")


def _layer_split(there: Deployment, switch: dict, lead: str, mp: MemoryPlan, catalog: Catalog,
                 keep: Callable[[str], bool]) -> FitSuggestion | None:
    """``there``'s smallest build the catalogue names a file of (of the formats ``keep`` lets through), split by layers
    between the GPUs and host RAM (an engine taking ``n_gpu_layers``, llama.cpp's -ngl, whose layers in host RAM run
    on the CPU rather than being copied to the GPU every step), with the offload ``offload_answer`` finds for it and
    the host RAM that needs (Qwen3-32B's Q4_K_M on a 12 GB card); ``lead`` opens its summary."""
    if "n_gpu_layers" not in catalog.engine(there.engine).offload_settings:
        return None
    files = [catalog.quantization(q) for q in model_formats(catalog, mp.spec, there.engine, at_load=False)
             if q in catalog.quantizations and keep(q) and _has_file(mp.spec, q)]
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


def _smaller_formats(there: Deployment, mp: MemoryPlan, catalog: Catalog) -> list[Quantization]:
    """The weight formats ``there``'s engine makes of the model (``model_formats``: its builds and its
    conversions of one) with fewer bits than the one it plans, the most bits first; the ones it emulates on the
    accelerator (``how_it_runs``: dequantized every forward, slower than 16-bit weights) after all the others."""
    planned = planned_weight_format(catalog, there, mp.spec)
    formats = [catalog.quantization(f) for f in model_formats(catalog, mp.spec, there.engine, at_load=False)
               if f in catalog.quantizations]
    return sorted((q for q in formats if q.bits_per_weight.value < planned.bits_per_weight.value),
                  key=lambda q: (_emulated(q, there, mp), -q.bits_per_weight.value))


def _emulated(q: Quantization, there: Deployment, mp: MemoryPlan) -> bool:
    return "emulated" in how_it_runs(q, mp.accelerator, there.engine, there.engine_version, has_routed_experts(mp.spec))


def _emulated_words(q: Quantization, there: Deployment, mp: MemoryPlan) -> str:
    """", emulated in bf16: slower than 16-bit weights" where ``there``'s engine emulates ``q`` (else "")."""
    runs = how_it_runs(q, mp.accelerator, there.engine, there.engine_version, has_routed_experts(mp.spec))
    return f", {runs}: slower than 16-bit weights" if "emulated" in runs else ""


def _fewer_bits_whole(there: Deployment, mp: MemoryPlan, catalog: Catalog,
                      keep: Callable[[str], bool] = lambda q: True) -> Quantization | None:
    """The largest weight format ``there``'s engine makes of the model (``model_formats``: its builds and its
    conversions of one) that has fewer bits than the one it plans and holds the whole model on the GPUs; a build
    the catalogue names a file of before any conversion (Qwen3-32B's published Q4_K_M on an RTX 5090 rather than
    a Q5_K_M made from the 65 GB BF16 checkpoint)."""
    formats = [q for q in _smaller_formats(there, mp, catalog) if keep(q.id)]
    for q in sorted(formats, key=lambda q: not _has_file(mp.spec, q.id)):  # stable: the most bits first within each
        whole = _fits(there, {"quantization": q.id}, catalog, host_gb=None)
        if whole is not None and not whole.host_memory_bytes_used:
            return q
    return None


def _fewer_bits_shorter(there: Deployment, mp: MemoryPlan, catalog: Catalog,
                        keep: Callable[[str], bool] = lambda q: True) -> tuple[Quantization, int] | None:
    """Where no smaller format holds the whole model at ``there``'s context: of ``_fewer_bits_whole``'s formats,
    the one that holds it on the GPUs alone at the longest shorter context (in whole steps; the most bits among
    equals), with that context; as the other offers rank them, a build the catalogue names a file of before any
    conversion (a download rather than a conversion from the 16-bit checkpoint). The longest rather than the most
    bits: Q6_K may hold a 30B MoE on 24 GB at a few thousand tokens, where Q4_K_M holds tens of thousands."""
    formats = [q for q in _smaller_formats(there, mp, catalog) if keep(q.id)]
    for group in ([q for q in formats if _has_file(mp.spec, q.id)], [q for q in formats if not _has_file(mp.spec, q.id)]):
        found = [(q, hit[0]) for q in group if (hit := longest_steps(_whole_at(there, q, catalog), mp.result.max_model_len,
                                                                     context_floor(catalog)))]
        if found:
            return max(found, key=lambda f: (f[1], f[0].bits_per_weight.value))
    return None


def _whole_at(there: Deployment, q: Quantization, catalog: Catalog) -> Callable[[int], MemoryFit | None]:
    """The fit of ``there`` in ``q`` at a context, when it holds the model on the GPUs alone (None: it does not)."""
    def at(tokens: int) -> MemoryFit | None:
        r = _fits(there, {"quantization": q.id, "max_model_len": tokens}, catalog, host_gb=None)
        return r if r is not None and not r.host_memory_bytes_used else None
    return at


def _on_engine(d: Deployment, engine: str, catalog: Catalog) -> tuple[Deployment, dict] | None:
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


def _all_experts_on_host(d: Deployment, catalog: Catalog, name: str) -> _Found | None:
    fit = _fits(d, {}, catalog)
    return _Found({}, fit, name, "keeps every routed expert in host RAM (no --kt-num-gpu-experts)") if fit else None
