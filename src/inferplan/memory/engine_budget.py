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
``engine_budget`` applies the rule it is given. Constants the engines do not publish (activation
bytes, runtime overhead, CUDA-graph estimate, driver reserve) are named calibration constants in
``catalog/data/calibration.yaml`` with how they were fitted.
"""

from __future__ import annotations

from dataclasses import dataclass

from inferplan.catalog.architecture import Architecture
from inferplan.catalog.loader import Catalog
from inferplan.catalog.memory_rules import MemoryRule, memory_rule
from inferplan.catalog.schema import Accelerator, EngineDefaults, Software
from inferplan.catalog.running_defaults import RunningDefault
from inferplan.catalog.startup_rules import MeasuredSizing
from inferplan.memory.context_cache import compute_buffer_bytes
from inferplan.memory.cuda_graphs import estimated_graph_bytes, model_runner, runner_counts_graphs
from inferplan.memory.mlx_prefill import prefill_working_set_bytes
from inferplan.memory.moe_buffers import MoeCaches
from inferplan.memory.runner_buffers import runner_arrays
from inferplan.memory.stages import stage_layer_counts
from inferplan.units import GiB, MiB


# Used only for models whose config.json is not published; every such result says so.
ASSUMED_VOCAB = 151_936
ASSUMED_HIDDEN = 8_192
ASSUMED_MLP_WIDTH = 28_672  # a Llama-70B-class MLP (3.5 × the assumed hidden size)


@dataclass(frozen=True)
class EngineSettings:
    memory_fraction: float  # gpu_memory_utilization / mem_fraction_static / free fraction
    max_num_batched_tokens: int
    max_num_seqs: int
    block_tokens: int
    prefill_micro_batch_tokens: int  # the physical batch of a prompt's matrix products (llama.cpp n_ubatch)
    # max_num_seqs and max_num_batched_tokens bound each pipeline micro-batch, not the instance
    # (engines.yaml pp_batch_limits: TensorRT-LLM)
    limits_per_micro_batch: bool = False
    # max_num_seqs is the instance's, each pipeline micro-batch admitting max_num_seqs // pp of it, at least one
    # (engines.yaml pp_batch_limits: divided; SGLang)
    seqs_divided_over_micro_batches: bool = False
    # an engine that sizes its KV cache by the context (llama.cpp, MLX): the context after its padding
    context_tokens: int | None = None
    flash_attention: bool = True  # llama.cpp -fa: whether its compute graph builds a K·Q score matrix
    topk_topp_sampler: str | None = None  # vLLM V1: the install's top-k/top-p sampler (None: the release's own)
    cuda_graphs: bool = True  # False: --enforce-eager, no graphs captured
    graph_batch: int | None = None  # the largest decode batch captured as a CUDA graph, where its rule states it
    decode_query_len: int = 1  # tokens per sequence in a decode step: 1 + speculative draft tokens
    other_gpu_memory_bytes: float = 0.0  # held on each GPU by other processes when the engine starts (a display)
    # kept free on each GPU by the setting that placed the weights (llama-server --fit's margin), and that setting
    kept_free_bytes: float = 0.0
    kept_free_by: str | None = None
    release: str | None = None  # the engine release planned at (None: the rule's own releases, not one of them)
    model_runner: str | None = None  # vLLM: "V1" or "V2" as stated (VLLM_USE_V2_MODEL_RUNNER); None: the release's default
    # the stated input that switches a rule's measured KV sizing off (MeasuredSizing.off_with), None: none does
    measured_sizing_off: str | None = None
    fraction_stated: bool = False  # the memory fraction is the deployment's own, not the release's default
    kv_connector: str | None = None  # the KV connector a disaggregated pool's instance launches with (None: none)
    running_note: str | None = None  # where the release sets the running requests itself (SGLang with a draft), why
    # the release's running requests as it derives them from the KV pool, applied once the pool is sized (SGLang)
    running_from_pool: RunningDefault | None = None
    # a release that runs a prompt whole (no chunked prefill, none stated: SGLang before 0.2.13): the prompt tokens
    # a step of several prompts stops at; max_num_batched_tokens is then the step of the longest prompt, the memory peak
    whole_prompt_step_tokens: int | None = None

    def step_budget_tokens(self, longest_prompt_tokens: float) -> int:
        """The tokens a step takes for a workload whose longest prompt is ``longest_prompt_tokens``: the chunk; where
        prompts run whole, the step of several prompts, or the longest prompt alone where it is longer."""
        if self.whole_prompt_step_tokens is None:
            return self.max_num_batched_tokens
        return max(self.whole_prompt_step_tokens, int(-(-longest_prompt_tokens // 1)))


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


def device_total_bytes(catalog: Catalog, accel: Accelerator,
                       engine: EngineDefaults | None = None) -> tuple[float, str | None]:
    """Memory the driver reports; measured when the catalogue has it, else derived. On an Apple GPU an
    engine that reads Metal's working set as the device's memory (``engines.yaml`` ``metal_working_set``,
    llama.cpp) gets that share of it."""
    if accel.memory_reported_bytes is not None:
        return accel.memory_reported_bytes.value, None
    marketed_gb = accel.memory_bytes.capacity_gib  # "80 GB" of HBM is 80 GiB; a GiB-stated figure as it is
    if accel.software.value == "metal" and engine is not None and engine.metal_working_set is not None:
        share = engine.metal_working_set.value
        return marketed_gb * GiB * share, (
            f"{accel.name}: {engine.name} takes Metal's recommended working set as the GPU's memory, assumed "
            f"{share:.0%} of {marketed_gb:g} GiB (no measured working set in the catalogue)")
    if accel.software.value == "metal":  # Metal's working-set cap is the engine fraction (MLX 0.75)
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


def activation_bytes(catalog: Catalog, rule: MemoryRule, arch: Architecture | None, settings: EngineSettings,
                     tp: int, *, accel: Accelerator | None = None, weight_bits: float | None = None,
                     moe_caches: MoeCaches = MoeCaches()) -> tuple[float, str]:
    """Peak activation memory the engine sizes outside the KV cache, per GPU, by the release's rule
    (``accel`` and ``weight_bits``, the weights' bits per parameter, size MLX's prefill working set;
    ``moe_caches``, one MoE layer's buffers in the dummy forward, memory/moe_buffers.py: freed ones meet the
    sampler pass in the larger of the two, kept ones add to it)."""
    vocab = arch.vocab_size if arch else ASSUMED_VOCAB
    hidden = arch.hidden_size if arch else ASSUMED_HIDDEN
    profile = rule.activation
    per_tok = catalog.constant(profile.forward_constant) if profile.forward_constant else 0.0
    if profile.model == "mlx_in_flight":
        return _mlx_prefill(rule, arch, settings, accel, weight_bits)
    if profile.model == "forward_or_sampler":
        return _forward_or_sampler(catalog, rule, arch, settings, tp, vocab, hidden)
    if profile.model == "sampler_and_forward":
        per_cell = catalog.constant(profile.sampler_constant_for(settings.topk_topp_sampler))
        sampler = per_cell * settings.max_num_seqs * vocab
        forward = per_tok * settings.max_num_batched_tokens * hidden / tp
        note = (f"{rule.label}: activation peak = {_sampler_name(settings)}sampler profile ({per_cell:g} B × "
                f"{settings.max_num_seqs} seqs × {vocab} vocab) + forward ({per_tok:g} B × "
                f"{settings.max_num_batched_tokens} tokens × {hidden} hidden / TP {tp})")
        moe, moe_note, kept = moe_caches
        if moe_note is not None and kept:
            return sampler + forward + moe, f"{note}; {moe_note}, held through the sampler pass"
        if moe_note is None or moe <= sampler:
            return sampler + forward, note + (f"; {moe_note}, freed before the sampler pass, which is larger"
                                              if moe_note else "")
        return forward + moe, (f"{note}, with one MoE layer's caches in place of the smaller sampler pass "
                               f"({sampler / GiB:.2f} GiB): {moe_note}")
    if rule.compute_graph is not None and arch is not None and settings.context_tokens:
        return compute_buffer_bytes(rule.compute_graph, catalog, arch, context_tokens=settings.context_tokens,
                                    ubatch_tokens=settings.prefill_micro_batch_tokens,
                                    flash_attention=settings.flash_attention, tp=tp)
    if profile.model == "llamacpp_logits":
        ubatch = settings.prefill_micro_batch_tokens
        return per_tok * ubatch * vocab, (
            f"llama.cpp compute buffer ≈ {per_tok:g} B × n_ubatch {ubatch:g} × {vocab} vocab"
        )
    split = tp if profile.hidden_split_by_tp else 1  # the hidden states are whole on every rank otherwise
    return per_tok * settings.max_num_batched_tokens * hidden / split, (
        f"{rule.engine} activation workspace assumed {per_tok:g} B × {settings.max_num_batched_tokens} "
        f"tokens × {hidden} hidden" + (f" / TP {tp}" if profile.hidden_split_by_tp else
                                       f" on each of the {tp} tensor-parallel rank(s): the step's hidden states are not split")
    )


def _mlx_prefill(rule: MemoryRule, arch: Architecture | None, settings: EngineSettings, accel: Accelerator | None,
                 weight_bits: float | None) -> tuple[float, str]:
    """MLX's prefill working set for one prompt chunk over the context (the chunk is at most the context);
    without the model's layer shapes, the most the in-flight command buffers can hold."""
    working = rule.prefill_working_set
    limits = working.limits_for(accel.record_id if accel else None)
    if arch is None or weight_bits is None:
        most = (working.max_active_tasks + 1) * (limits.max_mib * MiB)
        return most, (f"{rule.label}: prefill working set about {working.max_active_tasks + 1} command buffers × "
                      f"{limits.max_mib:g} MiB (no layer shapes to walk)")
    context = settings.context_tokens or settings.max_num_batched_tokens
    return prefill_working_set_bytes(working, arch, chunk_tokens=min(settings.max_num_batched_tokens, context),
                                     context_tokens=context, weight_bits=weight_bits,
                                     accelerator=accel.record_id if accel else None)


def _sampler_name(settings: EngineSettings) -> str:
    return f"{settings.topk_topp_sampler} " if settings.topk_topp_sampler else ""


def mlp_width(arch: Architecture | None) -> int:
    """What one token's MLP step widens the hidden state to, before the down projection: the dense MLP's
    intermediate size, or a mixture of experts' routed experts per token × their width plus the shared
    experts' (the fused-MoE kernels hold every selected expert's intermediate at once)."""
    if arch is None:
        return ASSUMED_MLP_WIDTH
    moe = arch.moe
    routed = moe.experts_per_token * moe.expert_intermediate_size + moe.shared_intermediate_size if moe else 0
    return max(arch.intermediate_size, routed)


def _forward_or_sampler(catalog: Catalog, rule: MemoryRule, arch: Architecture | None, settings: EngineSettings,
                        tp: int, vocab: int, hidden: int) -> tuple[float, str]:
    """The larger of the profile's two passes: the dummy forward peaks in an MLP, where the layer's input,
    its residual, the gate/up output, the activated half and the down projection's output are live at
    once (c × tokens × (hidden + MLP width / TP)); the sampler pass over max_num_seqs rows of full-vocab
    logits runs after the forward has freed them (a × rows × vocab)."""
    profile = rule.activation
    per_cell = catalog.constant(profile.sampler_constant)
    per_width = catalog.constant(profile.forward_constant)
    width = mlp_width(arch)
    sampler = per_cell * settings.max_num_seqs * vocab
    forward = per_width * settings.max_num_batched_tokens * (hidden + width / tp)
    return max(sampler, forward), (
        f"{rule.label}: activation peak = the larger of the sampler pass ({per_cell:g} B × {settings.max_num_seqs} "
        f"seqs × {vocab} vocab = {sampler / GiB:.2f} GiB) and the forward's MLP peak ({per_width:g} B × "
        f"{settings.max_num_batched_tokens} tokens × ({hidden} hidden + {width} MLP width / TP {tp}) = "
        f"{forward / GiB:.2f} GiB)"
    )


def overhead_bytes(catalog: Catalog, rule: MemoryRule, gpus_in_instance: int) -> float:
    """Non-torch memory per GPU (with more than one GPU, NCCL buffers too); the rule says whether it counts."""
    if rule.non_torch_constants is None:
        return 0.0
    single, multi = rule.non_torch_constants
    return catalog.constant(single if gpus_in_instance == 1 else multi)


def collective_bytes(catalog: Catalog, rule: MemoryRule, accel: Accelerator | None, tp: int) -> tuple[float, str | None]:
    """The collective library's fabric buffers per GPU (NCCL NVLS on an NVSwitch domain), by the rule."""
    buffers = rule.collective_buffers
    if buffers is None or accel is None or accel.scale_up is None:
        return 0.0, None
    link = accel.scale_up
    nvls = buffers.bytes_per_gpu(catalog, link.link, link.max_domain_gpus, tp)
    if not nvls:
        return 0.0, None
    return nvls, (f"{rule.label}: NCCL NVLink SHARP buffers on {accel.name}'s {link.link} switch, "
                  f"{buffers.communicators} communicators over TP {tp}: +{nvls / GiB:.2f} GiB of non-torch memory per GPU")


def runtime_buffer_bytes(catalog: Catalog, rule: MemoryRule, arch: Architecture | None,
                         settings: EngineSettings) -> tuple[float, str | None]:
    """The CUDA context and the per-slot vocabulary arrays the rule's runtime holds when it reads the free
    memory, per GPU (every tensor-parallel rank decodes the whole vocabulary for every slot)."""
    buffers = rule.runtime_buffers
    if buffers is None:
        return 0.0, None
    vocab = arch.vocab_size if arch else ASSUMED_VOCAB
    context = catalog.constant(buffers.context_constant)
    arrays = buffers.slot_vocab_bytes(settings.max_num_seqs, vocab)
    return context + arrays, (
        f"{rule.label}: the free memory is read with the CUDA context ({context / GiB:.2f} GiB) and "
        f"{len(buffers.slot_vocab_arrays)} arrays of max_batch_size {settings.max_num_seqs} × vocab {vocab} "
        f"({buffers.bytes_per_slot_vocab_entry:g} B per entry: {arrays / GiB:.2f} GiB) on the device")


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


def cuda_graph_bytes(catalog: Catalog, rule: MemoryRule, arch: Architecture | None, settings: EngineSettings,
                     accel: Accelerator | None, runner: str | None = None) -> tuple[float, str]:
    """The CUDA-graph memory the rule counts per GPU, and what sized it: the engine's estimate by capture
    count where the model's bytes per graph are sourced (memory/cuda_graphs.py), else the flat constant;
    none under a model runner that estimates none at the release (``runner``: "V1"/"V2", None: the rule's)."""
    if not rule.cuda_graph_constant or not captures_cuda_graphs(accel) or not settings.cuda_graphs or \
            not runner_counts_graphs(rule.model_runners, runner, settings.release):
        return 0.0, ""
    modelled = estimated_graph_bytes(rule.cuda_graph_estimate, arch, settings.max_num_seqs,
                                     settings.max_num_batched_tokens, settings.decode_query_len)
    if modelled is not None:
        return modelled
    return catalog.constant(rule.cuda_graph_constant), f"the flat estimate {rule.cuda_graph_constant}: no bytes per graph sourced for this model"


def captures_cuda_graphs(accel: Accelerator | None) -> bool:
    """Whether an engine on ``accel`` captures CUDA graphs and checks what start-up allocates outside its
    fraction. Not on an Apple GPU: vLLM and SGLang run on MLX there, vllm-metal's budget has no graph or
    start-up term (eng-vllm-metal-cache-policy), and SGLang starts with --disable-cuda-graph
    (eng-sglang-apple-metal)."""
    return accel is None or accel.software != Software.METAL


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
