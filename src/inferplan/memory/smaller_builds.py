"""The smaller builds an engine makes of a model, and whether one holds it on the GPUs alone.

Formats with fewer bits than the one planned (the engine's builds and its conversions of one, ``model_formats``),
the ones the accelerator emulates after the others; a build the catalogue names a published file of before a
conversion; the largest that holds the whole model at the deployment's context, else the one that holds it at
the longest shorter context.
"""

from __future__ import annotations

from typing import Callable

from inferplan.catalog.loader import Catalog
from inferplan.catalog.models import ModelSpec
from inferplan.catalog.quantization_schema import Quantization
from inferplan.errors import InferplanError
from inferplan.inputs.deployment import Deployment
from inferplan.memory.context_steps import longest_steps
from inferplan.memory.fit import MemoryPlan, plan_memory
from inferplan.memory.fit_result import MemoryFit
from inferplan.memory.offload_suggest import context_floor, fit_with
from inferplan.memory.precision import has_routed_experts, how_it_runs, model_formats, planned_weight_format


def has_file(spec: ModelSpec, quantization: str) -> bool:
    """The catalogue names a published file of the model in ``quantization`` (its card's build with a repo)."""
    return spec.card is not None and any(c.quantization == quantization and c.repo for c in spec.card.checkpoints)


def origin(there: Deployment, mp: MemoryPlan, catalog: Catalog, quantization: str) -> str:
    """Where ``there``'s engine gets the model in ``quantization``: a file the catalogue names, else how it is made."""
    if has_file(mp.spec, quantization):
        return "a published file"
    made = model_formats(catalog, mp.spec, there.engine, at_load=False).get(quantization, "a build")
    return f"{made}; the catalogue names no file of it"


def weights_bytes(d: Deployment, quantization: str, catalog: Catalog) -> float:
    """The weights ``d`` holds in ``quantization`` (infinite: the format is refused)."""
    try:
        return plan_memory(d.model_copy(update={"quantization": quantization}), catalog).result.weights_bytes
    except InferplanError:
        return float("inf")


def smaller_formats(there: Deployment, mp: MemoryPlan, catalog: Catalog) -> list[Quantization]:
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


def emulated_words(q: Quantization, there: Deployment, mp: MemoryPlan) -> str:
    """", emulated in bf16: slower than 16-bit weights" where ``there``'s engine emulates ``q`` (else "")."""
    runs = how_it_runs(q, mp.accelerator, there.engine, there.engine_version, has_routed_experts(mp.spec))
    return f", {runs}: slower than 16-bit weights" if "emulated" in runs else ""


def fewer_bits_whole(there: Deployment, mp: MemoryPlan, catalog: Catalog,
                      keep: Callable[[str], bool] = lambda q: True) -> Quantization | None:
    """The largest weight format ``there``'s engine makes of the model (``model_formats``: its builds and its
    conversions of one) that has fewer bits than the one it plans and holds the whole model on the GPUs; a build
    the catalogue names a file of before any conversion (Qwen3-32B's published Q4_K_M on an RTX 5090 rather than
    a Q5_K_M made from the 65 GB BF16 checkpoint)."""
    formats = [q for q in smaller_formats(there, mp, catalog) if keep(q.id)]
    for q in sorted(formats, key=lambda q: not has_file(mp.spec, q.id)):  # stable: the most bits first within each
        whole = fit_with(there, {"quantization": q.id}, catalog, host_gb=None)
        if whole is not None and not whole.host_memory_bytes_used:
            return q
    return None


def fewer_bits_shorter(there: Deployment, mp: MemoryPlan, catalog: Catalog,
                        keep: Callable[[str], bool] = lambda q: True) -> tuple[Quantization, int] | None:
    """Where no smaller format holds the whole model at ``there``'s context: of ``fewer_bits_whole``'s formats,
    the one that holds it on the GPUs alone at the longest shorter context (in whole steps; the most bits among
    equals), with that context; as the other offers rank them, a build the catalogue names a file of before any
    conversion (a download rather than a conversion from the 16-bit checkpoint). The longest rather than the most
    bits: Q6_K may hold a 30B MoE on 24 GB at a few thousand tokens, where Q4_K_M holds tens of thousands."""
    formats = [q for q in smaller_formats(there, mp, catalog) if keep(q.id)]
    for group in ([q for q in formats if has_file(mp.spec, q.id)], [q for q in formats if not has_file(mp.spec, q.id)]):
        found = [(q, hit[0]) for q in group if (hit := longest_steps(_whole_at(there, q, catalog), mp.result.max_model_len,
                                                                     context_floor(catalog)))]
        if found:
            return max(found, key=lambda f: (f[1], f[0].bits_per_weight.value))
    return None


def _whole_at(there: Deployment, q: Quantization, catalog: Catalog) -> Callable[[int], MemoryFit | None]:
    """The fit of ``there`` in ``q`` at a context, when it holds the model on the GPUs alone (None: it does not)."""
    def at(tokens: int) -> MemoryFit | None:
        r = fit_with(there, {"quantization": q.id, "max_model_len": tokens}, catalog, host_gb=None)
        return r if r is not None and not r.host_memory_bytes_used else None
    return at
