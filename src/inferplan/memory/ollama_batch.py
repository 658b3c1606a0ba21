"""The generation batch Ollama starts an Ollama tag's llama-server with (ollama.yaml ``generation_batch``).

With no ``num_batch`` set, Ollama's scheduler picks the batch itself from the context llama-server gets (num_ctx x
parallel) and how much of the GPUs' memory its rough VRAM prediction leaves, and passes it as both ``-b`` and
``-ub``: llama-server's compute buffer and activations are those of that batch, not of its own default n_ubatch.
A deployment of a tag's build, run as the tag selects it with no ``--ubatch-size`` stated, is planned at it, marked
as chosen (``Deployment.batch_chosen_by``); a stated ``--ubatch-size`` is Ollama's ``num_batch`` and wins.

The same prediction chooses the GPUs (``single_gpu``): of several GPUs, Ollama loads a tag on one alone where the
prediction is at most a share of that GPU's memory, starting llama-server on it only; a deployment of a tag's build
on a GPU count (or a system named alone) with no parallel sizes is then planned on that one GPU (``on_ollama_gpu``),
the others idle for it. ``OLLAMA_SCHED_SPREAD`` (``Deployment.sched_spread``) turns that choice off, and Ollama
spreads every model over all the GPUs; a system named alone is one Ollama server, so a model it spreads is planned
as one instance over all the system's GPUs, never as copies.
"""

from __future__ import annotations

from inferplan.catalog.loader import Catalog
from inferplan.catalog.ollama import OLLAMA
from inferplan.catalog.ollama_schema import GenerationBatch, OllamaRunner
from inferplan.errors import InvalidScenarioError
from inferplan.inputs.deployment import Deployment
from inferplan.memory.context_cache import context_slots
from inferplan.memory.engine_budget import device_total_bytes
from inferplan.memory.hardware import Hardware, resolve_hardware, runs_named_build
from inferplan.memory.layout import host_gpus, layout_stated
from inferplan.memory.resolve import resolve_model
from inferplan.memory.vision_projector import vision_projector_bytes
from inferplan.memory.weights import weight_bytes
from inferplan.units import GiB


def with_ollama_batch(d: Deployment, catalog: Catalog) -> Deployment:
    """``d`` (after ``with_default_engine``) at the -b / -ub Ollama chooses for it, where it runs an Ollama tag's
    build as the tag selects it and states no ``ubatch_size``; else ``d`` as it is."""
    runner = catalog.ollama_runners.records.get(OLLAMA)
    rule = runner.generation_batch if runner is not None else None
    if rule is None or d.ubatch_size is not None or d.batch_chosen_by or (seen := _prediction(d, catalog)) is None:
        return d
    hw, per_gpu, context, predicted, free = seen
    # of several GPUs Ollama loads on one where it holds the prediction (its memory alone available), else on all
    available = free if hw.gpus == 1 or _one_gpu(runner, d, predicted, free) else free * hw.gpus
    tokens, why = _chosen(rule, context, predicted, available, flash_off_on_cuda=d.flash_attention is False
                          and hw.accel.software.value in ("cuda",), small_gpu=per_gpu <= rule.small_gpu_bytes.value)
    return d.batched(f"-b / -ub {tokens}: the generation batch Ollama chooses with no num_batch set, at a context of "
                     f"{context:,} tokens (num_ctx × parallel) and a predicted {predicted / GiB:.1f} GiB of the "
                     f"{available / GiB:.1f} GiB available ({why}); a stated --ubatch-size (PARAMETER num_batch) wins",
                     tokens)


def on_ollama_gpu(d: Deployment, catalog: Catalog) -> Deployment:
    """``d`` (after ``with_default_engine``) on the GPUs Ollama loads its tag's build on, where it gives several GPUs
    of one host (``--gpus``, or a system named alone) and no parallel sizes: on one GPU where the predicted VRAM is at
    most ``single_gpu``'s fraction of one GPU's memory and ``sched_spread`` is not set (the others idle for it), else
    over all of them as the one server Ollama runs spreads it (for a system named alone, not copies of smaller
    instances); said in ``Deployment.gpus_chosen_by``. The prediction is at ``d``'s slots (``max_num_seqs``, Ollama's
    OLLAMA_NUM_PARALLEL; one unstated), as Ollama makes it at the num_parallel it loads with. Else ``d`` as it is."""
    runner = catalog.ollama_runners.records.get(OLLAMA)
    if runner is None or runner.single_gpu is None or runner.generation_batch is None or layout_stated(d) \
            or d.gpus_chosen_by or (seen := _prediction(d, catalog)) is None:
        return d
    hw, context, predicted, free = seen[0], seen[2], seen[3], seen[4]
    given = d.gpus or (hw.gpus if hw.system is not None else 1)
    if given < 2 or hw.gpus > host_gpus(hw):
        return d
    where = f"{given} GPUs given" if d.gpus else f"{hw.system.id if hw.system else ''}'s {given} GPUs"
    share = (f"its predicted {predicted / GiB:.1f} GiB at a context of {context:,} tokens is at most {runner.single_gpu.fraction:.0%} of one GPU's "
             f"{free / GiB:.1f} GiB")
    if _one_gpu(runner, d, predicted, free):
        return d.on_gpus(f"{where}: Ollama loads {d.model} on one of them alone ({share}), so the plan "
                         f"runs one GPU and leaves {given - 1} idle for it; a model past that share is spread over "
                         "all of them", 1, given)
    if d.sched_spread and predicted <= free * runner.single_gpu.fraction:
        return d.on_gpus(f"{where}: OLLAMA_SCHED_SPREAD set, so Ollama spreads {d.model} over all of "
                         f"them, though {share} and it would load on one alone", given, given)
    alone = "" if d.gpus else " (the system named alone)"
    return d.on_gpus(f"{where}{alone}: Ollama runs one server on them and spreads {d.model} over all of them (its "
                     f"predicted {predicted / GiB:.1f} GiB at a context of {context:,} tokens is past {runner.single_gpu.fraction:.0%} of one GPU's "
                     f"{free / GiB:.1f} GiB)", given, given)


def check_sched_spread(d: Deployment, catalog: Catalog) -> None:
    """Refuse ``sched_spread`` (Ollama's OLLAMA_SCHED_SPREAD) on ``d`` (after ``with_default_engine``) where it
    does not run an Ollama tag's build, which alone Ollama's scheduler places."""
    if d.sched_spread and runs_named_build(catalog, d) is None:
        raise InvalidScenarioError(
            f"sched_spread is Ollama's OLLAMA_SCHED_SPREAD, and {d.model} on {d.engine} is not an Ollama tag's build",
            field="sched_spread", allowed="an Ollama tag (e.g. qwen3:32b) on the engine and weight format it selects, "
                                          "or leave it out")


def _one_gpu(runner: OllamaRunner, d: Deployment, predicted: float, free: float) -> bool:
    """Whether Ollama loads ``d``'s model of ``predicted`` VRAM on one GPU of ``free`` memory alone: never with
    OLLAMA_SCHED_SPREAD set (``sched_spread``)."""
    return runner.single_gpu is not None and not d.sched_spread and predicted <= free * runner.single_gpu.fraction


def _prediction(d: Deployment, catalog: Catalog) -> tuple[Hardware, float, int, float, float] | None:
    """(hardware, per-GPU memory, context, predicted VRAM, one GPU's free memory) of ``d`` as Ollama predicts
    them (``GenerationBatch``), where it runs an Ollama tag's build at a known context; None otherwise."""
    rule = catalog.ollama_runners.records[OLLAMA].generation_batch
    if runs_named_build(catalog, d) is None:
        return None
    spec = resolve_model(catalog, d.model)
    arch = None if spec.architecture_is_proxy else spec.architecture
    if arch is None or d.max_model_len is None:
        return None
    hw = resolve_hardware(catalog, d)
    context = d.max_model_len * (context_slots(catalog, d, d.engine) or 1)
    per_gpu, _ = device_total_bytes(catalog, hw.accel, catalog.engine(d.engine), d.wired_limit_mb)
    kv_heads = min(arch.layer_kv_heads(kind) for kind in arch.layer_kinds)
    kv = 2 * arch.num_layers * kv_heads * (arch.hidden_size // arch.num_attention_heads) * context \
        * rule.predicted_kv_bytes_per_element
    file = weight_bytes(spec, catalog.quantizations.records[d.quantization]).total_bytes + vision_projector_bytes(catalog, d)
    return hw, per_gpu, context, file + kv, per_gpu - (d.other_gpu_memory_gb or 0.0) * GiB


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
