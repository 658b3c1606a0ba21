"""How much of a GPU each serving engine gives to the KV cache, computed the way the engine does.

- **vLLM** (V1): ``total × gpu_memory_utilization − weights − peak activation − non-torch
  memory``; the activation peak is profiled with ``max_num_batched_tokens`` tokens and a dummy
  sampler pass over ``max_num_seqs`` rows of logits. KV is then cut into blocks.
- **SGLang**: ``total × mem_fraction_static − weights``; activations live outside that fraction.
- **TensorRT-LLM**: ``(total − weights − activations − runtime) × free_gpu_memory_fraction``; under the
  TensorRT-engine runtime the free memory is read with the CUDA context and the arrays sized for
  ``max_batch_size × vocab`` (logits, decoder workspaces) already on the device, so they are runtime too.
- **llama.cpp**: no fraction; the KV cache for ``n_ctx`` is allocated up front next to the weights
  and a compute buffer, so what is left after those is what KV may use.
- **MLX**: the share of unified memory macOS lets the GPU wire, minus weights and buffers.

Which of these parts count, how the activation peak is profiled and whether CUDA-graph memory is
reserved differ between releases of one engine: each release line's rule is data
(``catalog/data/engine_memory_rules.yaml``, selected by ``catalog.memory_rules.memory_rule``), and
``engine_budget`` applies the rule it is given to the parts ``budget_parts.py`` sizes at the instance's
``budget_settings.EngineSettings``. Constants the engines do not publish (activation
bytes, runtime overhead, CUDA-graph estimate, driver reserve) are named calibration constants in
``catalog/data/calibration.yaml`` with how they were fitted.
"""

from __future__ import annotations

from dataclasses import dataclass

from inferplan.catalog.architecture import Architecture
from inferplan.catalog.loader import Catalog
from inferplan.catalog.memory_rules import MemoryRule, memory_rule
from inferplan.catalog.engine_schema import EngineDefaults
from inferplan.catalog.schema import Accelerator, Software
from inferplan.catalog.startup_rules import MeasuredSizing
from inferplan.memory.budget_parts import (
    ASSUMED_HIDDEN,
    ASSUMED_VOCAB,
    activation_bytes,
    captures_cuda_graphs,
    collective_bytes,
    cuda_graph_bytes,
    overhead_bytes,
    runtime_buffer_bytes,
)
from inferplan.memory.budget_settings import EngineSettings
from inferplan.catalog.metal_schema import metal_working_set_bytes
from inferplan.memory.cuda_graphs import model_runner, runner_counts_graphs
from inferplan.memory.moe_buffers import MoeCaches
from inferplan.memory.runner_buffers import runner_arrays
from inferplan.memory.stages import stage_layer_counts
from inferplan.errors import InvalidScenarioError
from inferplan.units import GiB, MiB


@dataclass(frozen=True)
class EngineBudget:
    engine: str
    total_bytes_per_gpu: float  # what the driver reports
    usable_bytes_per_gpu: float  # what the engine lets itself use (0 when nothing is left to it)
    weights_bytes_per_gpu: float
    activation_bytes_per_gpu: float
    overhead_bytes_per_gpu: float  # non-torch: CUDA context, NCCL buffers, runtime
    kv_bytes_per_gpu: float  # may be negative: the shortfall
    assumptions: tuple[str, ...]
    rule: MemoryRule | None = None  # the engine release's budgeting rule applied
    cuda_graph_bytes_per_gpu: float = 0.0  # reserved before the KV cache is sized (0: not counted)
    model_runner: str | None = None  # vLLM's model runner the plan assumes ("V1"/"V2"; None: the rule names none)
    # a runtime on which the engine cannot size the cache from measured memory, and the KV cache it gets there
    fallback_kv_bytes_per_gpu: float | None = None
    fallback_note: str | None = None
    usable_short_bytes_per_gpu: float = 0.0  # where nothing is usable: how far below nothing the budget falls


def device_total_bytes(catalog: Catalog, accel: Accelerator, engine: EngineDefaults | None = None,
                       wired_limit_mb: int | None = None) -> tuple[float, str | None]:
    """Memory the driver reports; measured when the catalogue has it, else derived. On an Apple GPU an
    engine that reads Metal's working set as the device's memory (``engines.yaml`` ``metal_working_set``:
    llama.cpp, MLX, vllm-metal, SGLang) gets the working set macOS allows a Mac of its size by default
    (``metal_working_set.yaml``); a stated ``iogpu.wired_limit_mb`` is the working set itself."""
    if wired_limit_mb is not None:
        return wired_limit_bytes(accel, wired_limit_mb), (
            f"{accel.name}: the GPU's working set is the stated iogpu.wired_limit_mb, {wired_limit_mb:,} MiB")
    if accel.memory_reported_bytes is not None:
        return accel.memory_reported_bytes.value, None
    marketed_gb = accel.memory_bytes.capacity_gib  # "80 GB" of HBM is 80 GiB; a GiB-stated figure as it is
    if accel.software.value == "metal" and engine is not None and engine.metal_working_set is not None:
        working, band = metal_working_set_bytes(catalog.metal_working_sets, marketed_gb)
        return working * engine.metal_working_set.value, (
            f"{accel.name}: {engine.name} takes Metal's recommended working set as the GPU's memory, "
            f"{band.share.value:.1%} of {marketed_gb:g} GiB on a Mac of this size ({band.id}; no measured "
            "working set in the catalogue)")
    if accel.software.value == "metal":  # an engine whose working set is not read: its fraction caps it
        return marketed_gb * GiB, f"{accel.name}: unified memory; the engine's fraction caps the GPU working set"
    if accel.unified_memory:
        share = catalog.constant("unified-memory-gpu-visible-fraction")
        total = marketed_gb * GiB * share
        return total, (
            f"{accel.name}: unified memory; GPU-visible total assumed {share:.1%} of "
            f"{marketed_gb:g} GiB (OS and CPU keep the rest)"
        )
    reserve = catalog.constant("driver-reserved-fraction")
    total = marketed_gb * GiB * (1 - reserve)
    return total, (
        f"{accel.name}: reported total assumed {marketed_gb:g} GiB less a {reserve:.2%} driver "
        "reserve (no measured figure in the catalogue)"
    )


def wired_limit_bytes(accel: Accelerator, wired_limit_mb: int) -> float:
    """A stated macOS ``iogpu.wired_limit_mb`` in bytes: refused off Apple silicon and at or above the
    Mac's memory (MLX: the wired limit stays strictly below the memory size)."""
    if accel.software.value != "metal":
        raise InvalidScenarioError(f"wired_limit_mb is macOS's GPU memory limit; {accel.name} is not an Apple GPU",
                                   field="wired_limit_mb", allowed="leave it out off Apple silicon")
    memory_mib = int(accel.memory_bytes.capacity_gib * 1024)
    if wired_limit_mb >= memory_mib:
        raise InvalidScenarioError(f"wired_limit_mb {wired_limit_mb:,} is not below {accel.name}'s "
                                   f"{memory_mib:,} MiB of unified memory", field="wired_limit_mb",
                                   allowed=f"1 to {memory_mib - 1:,}")
    return wired_limit_mb * MiB


def engine_budget(
    catalog: Catalog,
    engine: EngineDefaults,
    *,
    total_bytes: float,
    weights_bytes_per_gpu: float,
    arch: Architecture | None,
    settings: EngineSettings,
    tp: int,
    gpus_in_instance: int,
    rule: MemoryRule | None = None,
    accel: Accelerator | None = None,
    weight_bits: float | None = None,
    moe_workspace: tuple[float, str | None] = (0.0, None),
    moe_caches: MoeCaches = MoeCaches(),
) -> EngineBudget:
    """What is left for the KV cache on each GPU of one engine instance, by the release's rule
    (None: the engine's default rule); ``weight_bits`` is the weights' bits per parameter; ``moe_workspace``
    the bytes and note of the workspace the MoE kernel keeps through the start-up profile (moe_layout),
    which adds to the activation peak; ``moe_caches`` one MoE layer's buffers in the profile (moe_buffers)."""
    rule = rule or memory_rule(catalog, engine.id)
    act, act_note = activation_bytes(catalog, rule, arch, settings, tp, accel=accel, weight_bits=weight_bits,
                                     moe_caches=moe_caches)
    if moe_workspace[1]:
        act += moe_workspace[0]
        act_note = f"{act_note}; {moe_workspace[1]}"
    # the workspace manager's buffer stays allocated after the profile: resident, not transient
    kept = (moe_workspace[0] if moe_workspace[1] else 0.0) + (moe_caches.bytes_per_gpu if moe_caches.kept else 0.0)
    nvls, nvls_note = collective_bytes(catalog, rule, accel, tp)
    held, held_note = runtime_buffer_bytes(catalog, rule, arch, settings)
    overhead = overhead_bytes(catalog, rule, gpus_in_instance) + nvls + held
    runner, runner_note = model_runner(rule.model_runners, settings.release, arch, settings.model_runner)
    arrays = runner_arrays(rule, arch.vocab_size if arch else ASSUMED_VOCAB, settings.max_num_seqs, settings.release, runner)
    if arrays is not None and arrays.counted:  # held beside the KV cache like the runtime's memory
        overhead += arrays.bytes_per_gpu
    graphs, graphs_note = cuda_graph_bytes(catalog, rule, arch, settings, accel, runner)
    other = settings.other_gpu_memory_bytes + settings.kept_free_bytes  # neither is free to the engine
    # the CUDA context, where a rule counts it, is inside its non-torch figure (measured with it): nothing more
    # to take; other processes' memory counts where the rule's profile reads the whole device
    counted = {"weights": weights_bytes_per_gpu, "activation_peak": act, "non_torch": overhead, "cuda_graphs": graphs,
               "cuda_context": 0.0, "other_processes": other}
    parts = [counted[part] for part in rule.counted]
    frac = settings.memory_fraction
    notes = [f"memory rule: {rule.label}", act_note] + [n for n in (runner_note, nvls_note, held_note,
                                                                     arrays and arrays.note) if n]
    if arch is None:
        notes.append(f"activations sized for an assumed vocab of {ASSUMED_VOCAB:,} and hidden size {ASSUMED_HIDDEN:,}")
    if rule.cuda_graph_constant and captures_cuda_graphs(accel) and not settings.cuda_graphs:
        notes.append(f"{rule.label}: --enforce-eager captures no CUDA graphs, so none are estimated")
    if rule.cuda_graph_constant and not captures_cuda_graphs(accel):
        notes.append(f"{engine.name} on {accel.name} runs on MLX: no CUDA graphs and no start-up check outside the "
                     "fraction (the Metal back end budgets neither)")
    if runner == "V2" and settings.cuda_graphs and captures_cuda_graphs(accel) and \
            not runner_counts_graphs(rule.model_runners, runner, settings.release):
        notes.append(f"{rule.label}: Model Runner V2 at {settings.release} estimates no CUDA-graph memory "
                     "(its profile_cudagraph_memory returns 0): the graphs are captured after the KV cache is sized, "
                     "out of the memory the fraction leaves")
    if graphs:
        notes.append(f"{rule.label}: {graphs / GiB:.2f} GiB of CUDA-graph memory reserved before the KV cache is "
                     f"sized ({graphs_note})")
    if page_cache_counted(engine, accel):
        notes.append(f"{accel.name} shares its memory with the CPU, and {engine.name} reads the page cache as used "
                     f"memory: files read before or during its start can leave the KV cache far below this plan, "
                     f"which counts none; {engine.reads_page_cache_as_used_note}")
    shown = " − ".join(_PART_NAMES[p] for p in rule.counted if counted[p] or p not in _UNSHOWN)
    # memory other processes hold is not free to the engine whatever its rule counts: a fraction of the free
    # memory shrinks with it, a device-wide reading sees it, and a fraction of the total cannot take it
    uncounted_other = 0.0 if "other_processes" in rule.counted else other
    fallback = None  # a runtime on which the measured sizing falls back (rule.measured_sizing.runtime_fallbacks)
    off_note = None  # what that runtime, or the switch stated on there, does to the KV cache
    if rule.budget == "of_total":
        start = (catalog.constant(rule.start_constant) + other) if rule.start_constant else 0.0
        # stated other processes leave the device with less free than the fraction asks for: beside them the
        # CUDA context, where the rule does not count it inside the fraction
        free = total_bytes - uncounted_other - (0.0 if "cuda_context" in rule.counted else catalog.constant(CUDA_CONTEXT))
        usable, capped_note = _of_total(total_bytes, start, frac, free, other)
        notes += [f"{rule.label}: {capped_note}"] if capped_note else []
        measured = rule.measured_sizing is not None and rule.measured_sizing.used_on(accel.software if accel else None)
        sized = rule.measured_sizing if measured and not settings.measured_sizing_off else None
        if measured and settings.measured_sizing_off:
            notes.append(f"{rule.label}: {settings.measured_sizing_off} switches the extensible KV cache off: the cache "
                         f"is sized from the start-up profile at a fraction of {frac:g}, as before")
        if sized is not None:  # measured after warm-up: the memory free at start-up, less a margin, caps it too
            software = accel.software if accel is not None else None
            margin = sized.margin_bytes(act - kept, software)  # the allocator's peak less what stays allocated
            if free - margin < usable:
                usable = free - margin
            notes.append(f"{rule.label}: the KV cache is sized from the memory measured after warm-up and CUDA-graph "
                         f"capture: total × {frac:g} and the {free / GiB:.2f} GiB free at start-up less a "
                         f"{margin / GiB:.2f} GiB margin (the larger of {sized.margin_floor(software) / GiB:g} GiB and "
                         f"{sized.margin_activation_fraction:g} × the activation peak"
                         f"{f' less the {kept / GiB:.2f} GiB MoE workspace kept after it' if kept else ''}) each cap it")
        kv = _less(usable, parts)
        if sized is not None and sized.granule_bytes and arch is not None:
            kv, granule_note = _granule_rounded(sized, kv, arch, gpus_in_instance // tp, rule.label)
            notes.append(granule_note)
        fallback = sized.fallback_on(accel.software, settings.kv_connector) if sized is not None and accel is not None \
            else None
        if fallback is not None and fallback.by_default:  # stated on, on the runtime the platform comes as
            off_note = f"{fallback.stated_on_said(settings.kv_connector)} ({', '.join(fallback.sources)})"
            notes.append(f"{rule.label}: {off_note}")
            off_kv, fallback = None, None
        if fallback is not None:  # the runtime is no input: what the engine's fallback to the profile estimate leaves
            off_frac = frac if settings.fraction_stated else sized.fraction_where_off
            off_kv = _less(_of_total(total_bytes, start, off_frac, free, other)[0], parts)  # as the plan with it off
            named = f"with {settings.kv_connector} " if fallback.connectors else ""  # a connector's fallback
            off_note = (f"{named}on {fallback.runtime}, vLLM turns the extensible KV cache off and sizes it from the "
                        f"start-up profile at a fraction of {off_frac:g}: {max(off_kv, 0.0) / GiB:.2f} GiB of KV cache per GPU "
                        f"instead of {max(kv, 0.0) / GiB:.2f} GiB ({', '.join(fallback.sources)})")
            notes.append(f"{rule.label}: {off_note}")
        base = f"(total − {start / GiB:.2f} GiB in use at start-up)" if start else "total"
        base = f"min({base} × {frac:g}, free at start-up − margin)" if sized is not None else f"{base} × {frac:g}"
        notes.append(f"{engine.name}: KV = {base} − {shown}")
    elif rule.budget == "of_free_after_weights":
        usable = total_bytes
        kv = _less(total_bytes - uncounted_other, parts) * frac
        notes.append(f"{engine.name}: KV = (total − {shown}) × {frac:g}")
    else:
        usable = total_bytes
        kv = _less(total_bytes - uncounted_other, parts)
        notes.append(f"{engine.name}: no memory fraction; KV may use what weights and buffers leave")
    if settings.kept_free_bytes:
        notes.append(f"{settings.kept_free_by} keeps {settings.kept_free_bytes / GiB:.2f} GiB of each GPU free at "
                     "whatever context and slots it is given: left out of the KV room, as it is out of the placement")
    if settings.other_gpu_memory_bytes:
        notes.append(f"{rule.label}: other processes hold {settings.other_gpu_memory_bytes / GiB:.2f} GiB per GPU, "
                     + ("counted against the fraction" if "other_processes" in rule.counted else
                        "outside the fraction: they only limit the memory free to the engine"))
    if settings.running_note:
        notes.append(settings.running_note)
    return EngineBudget(
        engine=engine.id,
        total_bytes_per_gpu=total_bytes,
        usable_bytes_per_gpu=max(usable, 0.0),
        usable_short_bytes_per_gpu=max(-usable, 0.0),
        weights_bytes_per_gpu=weights_bytes_per_gpu,
        activation_bytes_per_gpu=act,
        overhead_bytes_per_gpu=overhead,
        kv_bytes_per_gpu=kv,
        assumptions=tuple(notes),
        rule=rule,
        cuda_graph_bytes_per_gpu=graphs,
        model_runner=runner,
        fallback_kv_bytes_per_gpu=off_kv if fallback is not None else None,
        fallback_note=off_note,
    )


def _of_total(total_bytes: float, start: float, frac: float, free: float, other: float) -> tuple[float, str | None]:
    """What a fraction of the total leaves the engine (``start``: in use at start-up), and the note where stated
    other processes leave less free than that, which the KV cache then gets."""
    usable = (total_bytes - start) * frac
    if other and not start and usable > free:
        return free, (f"total × {frac:g} = {usable / GiB:.2f} GiB is more than the {free / GiB:.2f} GiB free beside "
                      "the CUDA context and other processes: the KV cache gets what is free")
    return usable, None


def _granule_rounded(sized: MeasuredSizing, kv: float, arch: Architecture, pp: int, label: str) -> tuple[float, str]:
    """The KV bytes left once every layer's segment on the fullest pipeline stage is mapped in whole granules."""
    segments = max(stage_layer_counts(arch.num_layers, max(pp, 1)))
    kept = sized.granule_rounded(kv, segments)
    return kept, (f"{label}: each of the {segments} layers' segments is mapped in {sized.granule_bytes / MiB:g} MiB "
                  f"granules and blocks are dropped until they fit: {(kv - kept) / MiB:.0f} MiB of the budget stays "
                  f"unmapped (at most {segments} × {sized.granule_bytes / MiB:g} MiB)")


def page_cache_counted(engine: EngineDefaults, accel: Accelerator | None) -> bool:
    """Whether the engine's start-up reading of free memory on ``accel`` counts the Linux page cache as
    used (a CUDA device whose memory the CPU shares), so that files read before shrink the KV cache."""
    return bool(accel is not None and accel.unified_memory and accel.software == Software.CUDA
                and engine.reads_page_cache_as_used)


def _less(start: float, parts: list[float]) -> float:
    for part in parts:  # one at a time, in the rule's order
        start -= part
    return start


_PART_NAMES = {"weights": "weights", "activation_peak": "activations", "non_torch": "runtime", "cuda_graphs": "CUDA graphs",
               "cuda_context": "CUDA context", "other_processes": "other processes"}
_UNSHOWN = ("cuda_context", "other_processes")  # named in the formula only when they hold memory of their own
CUDA_CONTEXT = "cuda-context-bytes-per-gpu"  # calibration.yaml: the context an engine makes before reading memory
