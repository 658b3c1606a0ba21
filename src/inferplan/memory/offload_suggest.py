"""The weight offload that makes a deployment fit its GPUs, with the host RAM it then needs.

For a deployment that does not fit, each weight-offload setting the engine takes (``engines.yaml``
``offload_settings``) is searched on the GPU alone, with a host assumed large enough for anything:
llama.cpp's smallest ``--n-cpu-moe`` for a mixture-of-experts model, else its largest
``--n-gpu-layers`` (with every expert in host RAM for a MoE model); vLLM's smallest whole-GiB
``--cpu-offload-gb``; none, when the GPU holds every weight (only the host RAM is short); at the
longest shorter context, where none fits at the deployment's own. Each of these is the setting that
fits the GPU with the least in host RAM, so when the host RAM it needs is more than the deployment states (``host_memory_gb``), no offload fits
and the answer says so. Unstated host RAM: the suggestion states what it needs. A unified-memory
accelerator has no separate host RAM to offload to. Another engine's build or expert offload, and an
engine's layer split of a smaller published file, are offered by ``memory/engine_suggest.py``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

from inferplan.catalog.loader import Catalog
from inferplan.errors import InferplanError
from inferplan.inputs.deployment import Deployment
from inferplan.memory.fit import MemoryPlan, memory_fits, plan_memory
from inferplan.memory.fit_result import FitSuggestion, MemoryFit
from inferplan.memory.context_steps import longest_steps, whole_steps
from inferplan.memory.host_budget import known_host_bytes
from inferplan.memory.monotone import monotone_search
from inferplan.memory.offload import gpu_layers, output_layer_first
from inferplan.units import GiB

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
class Found:
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

    def searches(there: Deployment) -> list[Callable[[], Found | None]]:
        found: list[Callable[[], Found | None]] = []
        if arch is not None and "n_cpu_moe" in takes and moe:
            found.append(lambda: fewest_expert_layers(there, catalog, arch.num_layers))
        if arch is not None and "n_gpu_layers" in takes:
            found.append(lambda: _most_gpu_layers(there, catalog, arch.num_layers, moe and "n_cpu_moe" in takes))
        if "cpu_offload_gb" in takes:
            found.append(lambda: _least_offload_gb(there, catalog, mp.weights.total_bytes))
        return found

    def least(there: Deployment) -> Found | None:
        return next((f for f in (search() for search in searches(there)) if f is not None), None)

    if not searches(d):
        return OffloadAnswer()
    stated = {f: None for f in WEIGHT_OFFLOAD if getattr(d, f) is not None}
    if (bare := fit_with(d, stated, catalog)) is not None:  # the GPU holds every weight: only the host RAM is short
        return with_host(d, Found(stated, bare, "no weight offload", "(the GPU holds every weight)"), catalog,
                          lead="weights on the GPU") if stated else OffloadAnswer()
    found = least(d) or at_shorter_context(d, mp, catalog, least)
    if found is None:
        return OffloadAnswer(note="no weight offload fits: with every offloadable weight in host RAM the GPU is still "
                                  "short, at any context")
    return with_host(d, found, catalog)


def at_shorter_context(d: Deployment, mp: MemoryPlan, catalog: Catalog,
                        least: Callable[[Deployment], Found | None]) -> Found | None:
    """Where no offload fits the GPU at the deployment's context (one sequence's KV cache alone overfills
    it): ``least``'s setting at the longest shorter context at which it fits the GPU and the host RAM
    known; else at the shortest context, the least host RAM any context needs, for ``with_host`` to say so."""
    known = known_host_bytes(catalog, d)

    def at(tokens: int, host: bool = True) -> Found | None:
        f = least(d.model_copy(update={"max_model_len": tokens}))
        if f is None or host and known is not None and _host_needed(f, catalog) > known[0]:
            return None
        why = "the longest an offload fits" if host else "the shortest, needing the least host RAM"
        return Found({**f.changes, "max_model_len": tokens}, f.fit, f"{f.flag} at {tokens:,} tokens of context ({why})",
                      f.what)

    floor = context_floor(catalog)
    hit = longest_steps(at, mp.result.max_model_len, floor)
    return hit[1] if hit else at(whole_steps(floor), host=False) if known is not None else None


def context_floor(catalog: Catalog) -> int:
    """The shortest context a shorter-context offer is made at (``offload.yaml`` ``offered-context-floor-tokens``)."""
    return int(catalog.constant("offered-context-floor-tokens"))


def _host_needed(found: Found, catalog: Catalog) -> float:
    """Host RAM a found setting needs, with what the OS and the engine keep."""
    return found.fit.host_memory_bytes_used + catalog.constant("host-memory-reserve-bytes")


def with_host(d: Deployment, found: Found, catalog: Catalog,
               lead: str = "weights in host RAM (slower decode)") -> OffloadAnswer:
    """The suggestion at the deployment's host RAM, or at the host RAM it needs when none is stated."""
    needed = _host_needed(found, catalog)
    changes: dict[str, int | float | str | None] = dict(found.changes)
    known = known_host_bytes(catalog, d)
    if known is None:
        changes["host_memory_gb"] = max(1, math.ceil(needed / GiB))
        host = f"it needs {changes['host_memory_gb']} GiB of host RAM with what the OS and the engine keep: check the machine has it"
    elif needed > known[0]:
        return OffloadAnswer(flag=found.flag, host_bytes_needed=needed, note=f"no weight offload fits the host RAM: the least that fits the GPU, {found.flag}, needs "
                                  f"{needed / GiB:.1f} GiB of host RAM with what the OS and the engine keep, more than the "
                                  f"{known[0] / GiB:g} GiB {known[1]}")
    else:
        host = f"{needed / GiB:.1f} of the {known[0] / GiB:g} GiB of host RAM {known[1]}, with what the OS and the engine keep"
    if fit_with(d, changes, catalog, host_gb=None) is None:  # the command as suggested: never one that does not fit
        return OffloadAnswer()
    return OffloadAnswer(FitSuggestion(kind="offload", changes=changes, summary=f"{lead}: {found.flag} {found.what}; {host}"),
                         flag=found.flag, host_bytes_needed=needed)


def fit_with(d: Deployment, changes: dict, catalog: Catalog, *, host_gb: float | None = UNBOUNDED_HOST_GB) -> MemoryFit | None:
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


def fewest_expert_layers(d: Deployment, catalog: Catalog, layers: int) -> Found | None:
    hit = monotone_search(1, layers, lambda n: fit_with(d, {"n_cpu_moe": n, "n_gpu_layers": None}, catalog), smallest=True)
    if hit is None:
        return None
    n, fit = hit
    return Found({"n_cpu_moe": n, "n_gpu_layers": None}, fit, f"llama.cpp --n-cpu-moe {n}",
                  f"keeps the experts of the first {n} of {layers} layers in host RAM")


def _most_gpu_layers(d: Deployment, catalog: Catalog, layers: int, experts_off: bool) -> Found | None:
    fixed = {"n_cpu_moe": layers} if experts_off else {"n_cpu_moe": None}
    hit = monotone_search(0, layers, lambda n: fit_with(d, {**fixed, "n_gpu_layers": n}, catalog), smallest=False)
    if hit is None:
        return None
    n, fit = hit
    experts = " and every expert" if experts_off else ""
    flag = f"llama.cpp --n-gpu-layers {n}" + (f" --n-cpu-moe {layers}" if experts_off else "")
    on_gpu, output_on_host, _ = gpu_layers(n, layers, output_layer_first(catalog, catalog.engine(d.engine).id, d.engine_version))
    where = (f"keeps all {layers} repeating layers on the GPU, the output layer{experts} in host RAM" if on_gpu == layers else
             f"keeps {on_gpu} of {layers} layers{'' if output_on_host else ' and the output layer'} on the GPU, "
             f"the others{experts} in host RAM, run by the CPU")
    return Found({**fixed, "n_gpu_layers": n}, fit, flag, where)


def _least_offload_gb(d: Deployment, catalog: Catalog, weights_bytes: float) -> Found | None:
    hit = monotone_search(1, max(1, math.ceil(weights_bytes / GiB)),
                  lambda g: fit_with(d, {"cpu_offload_gb": float(g)}, catalog), smallest=True)
    if hit is None:
        return None
    g, fit = hit
    return Found({"cpu_offload_gb": float(g)}, fit, f"{catalog.engine(d.engine).name} --cpu-offload-gb {g}",
                  f"keeps {g} GiB of each GPU's weights in host RAM, copied to the GPU in every forward pass")
