"""How much of a GPU each serving engine gives to the KV cache, computed the way the engine does.

- **vLLM** (V1): ``total × gpu_memory_utilization − weights − peak activation − non-torch
  memory``; the activation peak is profiled with ``max_num_batched_tokens`` tokens and a dummy
  sampler pass over ``max_num_seqs`` rows of logits. KV is then cut into blocks.
- **SGLang**: ``total × mem_fraction_static − weights``; activations live outside that fraction.
- **TensorRT-LLM**: ``(total − weights − activations − runtime) × free_gpu_memory_fraction``.
- **llama.cpp**: no fraction; the KV cache for ``n_ctx`` is allocated up front next to the weights
  and a compute buffer, so what is left after those is what KV may use.
- **MLX**: the share of unified memory macOS lets the GPU wire, minus weights and buffers.

Constants the engines do not publish (activation bytes, runtime overhead, driver reserve) are
named calibration constants in ``catalog/data/calibration.yaml`` with how they were fitted.
"""

from __future__ import annotations

from dataclasses import dataclass

from inferplan.catalog.architecture import Architecture
from inferplan.catalog.loader import Catalog
from inferplan.catalog.schema import Accelerator, EngineDefaults
from inferplan.units import GiB


# Used only for models whose config.json is not published; every such result says so.
ASSUMED_VOCAB = 151_936
ASSUMED_HIDDEN = 8_192


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


@dataclass(frozen=True)
class EngineBudget:
    engine: str
    total_bytes_per_gpu: float  # what the driver reports
    usable_bytes_per_gpu: float  # what the engine lets itself use
    weights_bytes_per_gpu: float
    activation_bytes_per_gpu: float
    overhead_bytes_per_gpu: float  # non-torch: CUDA context, NCCL buffers, runtime
    kv_bytes_per_gpu: float  # may be negative: the shortfall
    assumptions: tuple[str, ...]


def device_total_bytes(catalog: Catalog, accel: Accelerator) -> tuple[float, str | None]:
    """Memory the driver reports; measured when the catalogue has it, else derived."""
    if accel.memory_reported_bytes is not None:
        return accel.memory_reported_bytes.value, None
    marketed_gb = accel.memory_bytes.value / 1e9
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


def activation_bytes(catalog: Catalog, engine: str, arch: Architecture | None, settings: EngineSettings, tp: int) -> tuple[float, str]:
    """Peak activation memory the engine reserves outside the KV cache, per GPU."""
    vocab = arch.vocab_size if arch else ASSUMED_VOCAB
    hidden = arch.hidden_size if arch else ASSUMED_HIDDEN
    if engine == "vllm":
        per_cell = catalog.constant("vllm-sampler-bytes-per-seq-vocab")
        per_tok = catalog.constant("vllm-forward-bytes-per-token-hidden")
        sampler = per_cell * settings.max_num_seqs * vocab
        forward = per_tok * settings.max_num_batched_tokens * hidden / tp
        return sampler + forward, (
            f"vLLM activation peak = sampler profile ({per_cell:g} B × {settings.max_num_seqs} seqs × "
            f"{vocab} vocab) + forward ({per_tok:g} B × {settings.max_num_batched_tokens} tokens × "
            f"{hidden} hidden / TP {tp})"
        )
    if engine == "llamacpp":
        per_cell = catalog.constant("llamacpp-compute-bytes-per-ubatch-vocab")
        ubatch = settings.prefill_micro_batch_tokens
        return per_cell * ubatch * vocab, (
            f"llama.cpp compute buffer ≈ {per_cell:g} B × n_ubatch {ubatch:g} × {vocab} vocab"
        )
    per_tok = catalog.constant("generic-activation-bytes-per-token-hidden")
    return per_tok * settings.max_num_batched_tokens * hidden / tp, (
        f"{engine} activation workspace assumed {per_tok:g} B × {settings.max_num_batched_tokens} "
        f"tokens × {hidden} hidden / TP {tp}"
    )


def extra_weight_bytes(catalog: Catalog, engine: str, quant_id: str, accel: Accelerator, expert_bytes_per_gpu: float) -> tuple[float, str | None]:
    """Weight memory an engine adds on top of the checkpoint for a format it emulates.

    vLLM's Triton MXFP4 MoE path on GPUs without native MXFP4 (Hopper) keeps the original
    expert block scales registered next to the swizzled copies, so the scales (one byte per 32
    weights) are held twice.
    """
    if engine != "vllm" or quant_id != "mxfp4" or "mxfp4" in accel.native_formats or not expert_bytes_per_gpu:
        return 0.0, None
    copies = catalog.constant("vllm-mxfp4-extra-scale-copies")
    bits = catalog.quantization("mxfp4").bits_per_weight.value
    scale_share = (bits - 4) / bits  # the E8M0 scale's share of each MXFP4 block
    extra = copies * expert_bytes_per_gpu * scale_share
    return extra, (
        f"vLLM MXFP4 MoE on {accel.name} (no native MXFP4) keeps {copies:g} extra copy of the expert "
        f"block scales: +{extra / GiB:.2f} GiB per GPU"
    )


def overhead_bytes(catalog: Catalog, engine: str, gpus_in_instance: int) -> float:
    """Non-torch memory per GPU: CUDA context and, with more than one GPU, NCCL buffers."""
    key = "runtime-overhead-bytes-single-gpu" if gpus_in_instance == 1 else "runtime-overhead-bytes-multi-gpu"
    return catalog.constant(key)


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
) -> EngineBudget:
    """What is left for the KV cache on each GPU of one engine instance."""
    act, act_note = activation_bytes(catalog, engine.id, arch, settings, tp)
    overhead = overhead_bytes(catalog, engine.id, gpus_in_instance)
    frac = settings.memory_fraction
    notes = [act_note]
    if arch is None:
        notes.append(f"activations sized for an assumed vocab of {ASSUMED_VOCAB:,} and hidden size {ASSUMED_HIDDEN:,}")
    if engine.memory_fraction_meaning == "of_total":
        usable = total_bytes * frac
        if engine.id in ("sglang", "ktransformers"):  # activations and runtime sit outside mem_fraction_static (KTransformers runs in SGLang)
            kv = usable - weights_bytes_per_gpu
            notes.append(f"SGLang: KV pool = total × mem_fraction_static {frac:g} − weights")
        else:
            kv = usable - weights_bytes_per_gpu - act - overhead
            notes.append(f"{engine.name}: KV = total × {frac:g} − weights − activations − runtime")
    elif engine.memory_fraction_meaning == "of_free_after_weights":
        usable = total_bytes
        kv = (total_bytes - weights_bytes_per_gpu - act - overhead) * frac
        notes.append(f"{engine.name}: KV = free memory after weights and activations × {frac:g}")
    else:
        usable = total_bytes
        kv = total_bytes - weights_bytes_per_gpu - act - overhead
        notes.append(f"{engine.name}: no memory fraction; KV may use what weights and buffers leave")
    return EngineBudget(
        engine=engine.id,
        total_bytes_per_gpu=total_bytes,
        usable_bytes_per_gpu=usable,
        weights_bytes_per_gpu=weights_bytes_per_gpu,
        activation_bytes_per_gpu=act,
        overhead_bytes_per_gpu=overhead,
        kv_bytes_per_gpu=kv,
        assumptions=tuple(notes),
    )
