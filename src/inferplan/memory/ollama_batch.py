"""The generation batch Ollama starts an Ollama tag's llama-server with (ollama.yaml ``generation_batch``).

With no ``num_batch`` set, Ollama's scheduler picks the batch itself from the context llama-server gets (num_ctx x
parallel) and how much of the GPUs' memory its rough VRAM prediction leaves, and passes it as both ``-b`` and
``-ub``: llama-server's compute buffer and activations are those of that batch, not of its own default n_ubatch.
A deployment of a tag's build, run as the tag selects it with no ``--ubatch-size`` stated, is planned at it, marked
as chosen (``Deployment.batch_chosen_by``); a stated ``--ubatch-size`` is Ollama's ``num_batch`` and wins.
"""

from __future__ import annotations

from inferplan.catalog.loader import Catalog
from inferplan.catalog.ollama import OLLAMA
from inferplan.catalog.ollama_schema import GenerationBatch
from inferplan.inputs.deployment import Deployment
from inferplan.memory.context_cache import context_slots
from inferplan.memory.engine_budget import device_total_bytes
from inferplan.memory.hardware import resolve_hardware, runs_named_build
from inferplan.memory.resolve import resolve_model
from inferplan.memory.vision_projector import vision_projector_bytes
from inferplan.memory.weights import weight_bytes
from inferplan.units import GiB


def with_ollama_batch(d: Deployment, catalog: Catalog) -> Deployment:
    """``d`` (after ``with_default_engine``) at the -b / -ub Ollama chooses for it, where it runs an Ollama tag's
    build as the tag selects it and states no ``ubatch_size``; else ``d`` as it is."""
    rule = catalog.ollama_runners.records[OLLAMA].generation_batch if OLLAMA in catalog.ollama_runners.records else None
    if rule is None or d.ubatch_size is not None or d.batch_chosen_by or runs_named_build(catalog, d) is None:
        return d
    spec = resolve_model(catalog, d.model)
    arch = None if spec.architecture_is_proxy else spec.architecture
    if arch is None or d.max_model_len is None:
        return d
    hw = resolve_hardware(catalog, d)
    context = d.max_model_len * (context_slots(catalog, d, d.engine) or 1)
    per_gpu, _ = device_total_bytes(catalog, hw.accel, catalog.engine(d.engine))
    kv_heads = min(arch.layer_kv_heads(kind) for kind in arch.layer_kinds)
    kv = 2 * arch.num_layers * kv_heads * (arch.hidden_size // arch.num_attention_heads) * context \
        * rule.predicted_kv_bytes_per_element
    file = weight_bytes(spec, catalog.quantizations.records[d.quantization]).total_bytes + vision_projector_bytes(catalog, d)
    predicted = file + kv
    free = per_gpu - (d.other_gpu_memory_gb or 0.0) * GiB
    # of several GPUs Ollama loads on one where it holds the prediction (its memory alone available), else on all
    available = free if predicted <= free * rule.single_gpu_fraction else free * hw.gpus
    tokens, why = _chosen(rule, context, predicted, available, flash_off_on_cuda=d.flash_attention is False
                          and hw.accel.software.value in ("cuda",), small_gpu=per_gpu <= rule.small_gpu_bytes.value)
    return d.batched(f"-b / -ub {tokens}: the generation batch Ollama chooses with no num_batch set, at a context of "
                     f"{context:,} tokens (num_ctx × parallel) and a predicted {predicted / GiB:.1f} GiB of the "
                     f"{available / GiB:.1f} GiB available ({why}); a stated --ubatch-size (PARAMETER num_batch) wins",
                     tokens)


def _chosen(rule: GenerationBatch, context: int, predicted: float, available: float, *, flash_off_on_cuda: bool,
            small_gpu: bool) -> tuple[int, str]:
    """The batch ``rule`` picks and why."""
    if flash_off_on_cuda:
        if small_gpu and context > rule.small_gpu_above_context_tokens:
            return rule.small_gpu_tokens, "flash attention off on a small CUDA GPU"
        return rule.default_tokens, "flash attention off on CUDA"
    room = available * rule.fits_fraction
    for tier in rule.tiers:
        if context <= tier.above_context_tokens:
            continue
        if predicted <= room and predicted <= available * tier.headroom_fraction \
                and tier.surcharge_bytes.value <= room - predicted:
            return tier.tokens, f"at most {tier.headroom_fraction:.0%} of it, leaving its surcharge"
    longer = any(context > t.above_context_tokens for t in rule.tiers)
    return rule.default_tokens, "too little headroom for a larger batch" if longer else "a short context"
