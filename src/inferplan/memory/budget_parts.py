"""The parts of a GPU's memory an engine sizes outside its KV cache, each by the engine release's memory rule
(``catalog.memory_rules``): the activation peak of its start-up profile, the non-torch runtime, the
collective library's fabric buffers, the runtime's per-slot buffers and the CUDA-graph memory.
``memory/engine_budget.py`` takes them from what the engine gives itself."""

from __future__ import annotations

from inferplan.catalog.architecture import Architecture
from inferplan.catalog.loader import Catalog
from inferplan.catalog.memory_rules import MemoryRule
from inferplan.catalog.schema import Accelerator, Software
from inferplan.memory.budget_settings import EngineSettings
from inferplan.memory.context_cache import compute_buffer_bytes
from inferplan.memory.cuda_graphs import estimated_graph_bytes, runner_counts_graphs
from inferplan.memory.mlx_prefill import prefill_working_set_bytes
from inferplan.memory.moe_buffers import MoeCaches
from inferplan.units import GiB, MiB


# Used only for models whose config.json is not published; every such result says so.
ASSUMED_VOCAB = 151_936
ASSUMED_HIDDEN = 8_192
ASSUMED_MLP_WIDTH = 28_672  # a Llama-70B-class MLP (3.5 × the assumed hidden size)


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
