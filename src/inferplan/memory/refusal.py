"""A deployment that does not fit, refused with the fit's reason: what perf and the launch command
both say before they plan anything on a memory plan that cannot start.

The refusal names what is short and the field that causes it: host RAM; the running-sequence cap where
an engine allocates a context per sequence at start-up (llama.cpp's slots) and one sequence would fit;
the context where the weights leave room for a shorter one; else the hardware (the GPU count, the system
where it gave the GPUs, the accelerator where no GPU count was given and none of it holds the model),
with the smallest instance that holds the model. Every shortfall it prints is what is missing, above 0.
"""

from __future__ import annotations

import math

from inferplan.catalog.loader import Catalog
from inferplan.errors import InvalidScenarioError
from inferplan.inputs.deployment import Deployment
from inferplan.memory.fit_result import MemoryFit
from inferplan.memory.hardware import ollama_default_context
from inferplan.memory.layout import describe_split
from inferplan.memory.suggest import longest_context
from inferplan.units import GiB

OTHER_CHANGES = ("a shorter context, smaller weights, a larger memory fraction or weights in host RAM, where the memory fit "
                 "of the same deployment finds and lists the ones that hold it")


def refuse_unfit(fit: MemoryFit, d: Deployment, catalog: Catalog) -> None:
    """Raise when ``fit`` (``d``'s memory fit) does not fit, naming what is short and the field to change."""
    if fit.fits:
        return
    budget = fit.host_memory_budget_bytes
    if budget is not None and fit.host_memory_bytes_used > budget and fit.shortfall_bytes <= 0:
        if fit.host_memory_origin == "unified":  # one pool: moving weights to the CPU side frees nothing
            raise InvalidScenarioError(
                f"{fit.model} does not fit: {fit.accelerator}'s unified memory: {fit.host_memory_bytes_used / GiB:.2f} GiB "
                f"used of {budget / GiB:.2f} GiB (the GPU side and what is offloaded share it)", field="gpu",
                allowed="an accelerator with more memory, smaller weights or a shorter context")
        raise InvalidScenarioError(
            f"{fit.model} does not fit: host RAM: {fit.host_memory_bytes_used / GiB:.2f} GiB used of "
            f"{budget / GiB:.2f} GiB{' (from the system card)' if fit.host_memory_origin == 'system' else ''} after what the OS "
            "and the engine process keep (the weights and KV cache offloaded to host RAM)", field="host_memory_gb",
            allowed=f"at least {math.ceil(fit.host_memory_bytes_used / GiB)} GiB of host RAM, or less offloaded to it "
                    "(fewer weights, or a smaller host KV tier: hicache_ratio, hicache_size, kv_offloading_size)")
    room = fit.kv_cache_bytes_per_gpu  # what the weights and the engine's other memory leave for the KV cache
    need = _kv_needed(fit)
    weights = f"{fit.quantization}{', the default' if d.quantization is None else ''}"  # what the shortfall rests on
    where = (f"{fit.model} ({weights}) does not fit on {fit.parallel.gpus}× {fit.accelerator}"
             f"{'' if d.gpus is not None or d.system is not None or fit.parallel.gpus > 1 else ' (no GPU count given: one)'}")
    at = f"at max_model_len {fit.max_model_len:,}" + (
        f", the context Ollama gives {d.model} on these GPUs (max_model_len states another)"
        if ollama_default_context(catalog, d) else "")
    if room > 0 and need > room:
        _refuse_kv(fit, d, catalog, where, at, room, need)
    _refuse_hardware(fit, d, where, at)


def _kv_needed(fit: MemoryFit) -> float:
    """KV-cache bytes per GPU the plan needs: the cache an engine allocates at start-up for its context (all
    its sequences), else one max_model_len sequence."""
    if fit.kv_cache_allocated_bytes_per_gpu is not None:
        return fit.kv_cache_allocated_bytes_per_gpu
    return fit.kv_cache_needed_bytes_per_gpu or fit.sequence_bytes_per_gpu


def _refuse_kv(fit: MemoryFit, d: Deployment, catalog: Catalog, where: str, at: str, room: float, need: float) -> None:
    """The weights fit and leave ``room``; the KV cache the plan asks for does not: too many sequences each
    given a whole context at start-up, else too long a context, with the longest that fits as ``fit`` finds it
    (``memory.suggest.longest_context``: what else shrinks with the context, llama.cpp's compute buffer, counted)."""
    short = f"short by {(need - room) / GiB:.1f} GiB per GPU"
    slots = d.max_num_seqs or 1
    if fit.kv_cache_allocated_bytes_per_gpu is not None and slots > 1 and need / slots <= room:
        held = max(1, int(slots * room // need))
        raise InvalidScenarioError(
            f"{where}: the KV cache it allocates at start-up for max_num_seqs {slots:,} sequences of max_model_len "
            f"{fit.max_model_len:,} tokens ({slots * fit.max_model_len:,} tokens) needs {need / GiB:.1f} GiB per GPU "
            f"and the weights leave {room / GiB:.1f} GiB ({short})", field="max_num_seqs",
            allowed=f"at most {held:,} sequences of {fit.max_model_len:,} tokens, or a shorter context")
    longest = longest_context(d, catalog, fit.max_model_len)
    per = f" for each of {slots:,} sequences" if fit.kv_cache_allocated_bytes_per_gpu is not None and slots > 1 else ""
    raise InvalidScenarioError(
        f"{where} {at}: the KV cache for that context{per} needs "
        f"{need / GiB:.1f} GiB per GPU and the weights leave {room / GiB:.1f} GiB ({short})", field="max_model_len",
        allowed=(f"a context of at most {longest:,} tokens" if longest else "a shorter context")
        + _more_gpus(fit, d, " or "))


def _more_gpus(fit: MemoryFit, d: Deployment, joiner: str) -> str:
    smallest = fit.fewest_gpus_fit
    if smallest is None or smallest.gpus <= fit.parallel.gpus:
        return ""
    system_alone = d.system is not None and d.gpus is None
    return f"{joiner}{'a system of ' if system_alone else ''}at least {smallest.gpus} GPUs"


def _in_systems(fit: MemoryFit, d: Deployment, gpus: int) -> str:
    """``gpus`` in whole systems of ``d``'s, where they are more than one: the instance planned on one
    system (tensor parallel within it, as the engine launches it there) with a pipeline stage per system."""
    node, p = fit.parallel.gpus, fit.parallel
    if gpus <= node or p.tensor_parallel_size * p.pipeline_parallel_size != node:
        return ""
    systems = math.ceil(gpus / node)
    split = describe_split(p.tensor_parallel_size, systems * node // p.tensor_parallel_size)
    return f" ({systems} × {d.system}: {systems * node} GPUs, {split})"


def _refuse_hardware(fit: MemoryFit, d: Deployment, where: str, at: str) -> None:
    """The weights (or start-up's own allocations) leave no room: more or larger GPUs, or smaller weights."""
    smallest = fit.fewest_gpus_fit
    system_alone = d.system is not None and d.gpus is None  # the GPUs are the system's: name what was given
    needs = "" if smallest is None else (
        f"; one instance that holds it needs {smallest.gpus} GPUs, "
        f"{describe_split(smallest.tensor_parallel_size, smallest.pipeline_parallel_size)}"
        f"{_in_systems(fit, d, smallest.gpus) if system_alone else ''}")
    field = "system" if system_alone else "gpus" if d.gpus is not None or smallest is not None else "gpu"
    more = "" if smallest is None else f"{'a system of ' if system_alone else ''}at least {smallest.gpus} GPUs; else "
    short = max(fit.shortfall_bytes, fit.startup_shortfall_bytes_per_gpu)
    what = f"short by {short / GiB:.1f} GiB per GPU" if short > 0 else "its memory plan cannot start"
    if fit.startup_note and fit.startup_shortfall_bytes_per_gpu > 0:
        what += f": {fit.startup_note}"
    raise InvalidScenarioError(f"{where} {at} ({what}{needs})",
                               field=field, allowed=more + OTHER_CHANGES)
