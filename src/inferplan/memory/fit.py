"""What fits: weights, engine budget and KV cache per GPU for one deployment.

``fit(deployment)`` answers: does it fit, how much memory each GPU gives to the KV cache, how
many tokens and concurrent ``max_model_len`` sequences that holds, the largest context at a
given concurrency, the shortfall when it does not fit, and the smallest parallelism that would.
Every result lists the assumptions it rests on.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict

from inferplan.catalog.loader import Catalog, load_catalog
from inferplan.catalog.models import ModelSpec
from inferplan.memory.resolve import resolve_model
from inferplan.catalog.schema import Accelerator, EngineDefaults, KvDtype, Quantization
from inferplan.errors import InvalidScenarioError
from inferplan.inputs.deployment import Deployment
from inferplan.memory.engine_budget import EngineSettings, device_total_bytes, engine_budget, extra_weight_bytes
from inferplan.memory.hardware import Hardware, resolve_hardware
from inferplan.memory.kv_cache import KvLayout, kv_layout, stated_layout
from inferplan.memory.stages import StageWeights, stage_layer_counts, stage_weights
from inferplan.memory.weights import WeightEstimate, weight_bytes


class ParallelPlan(BaseModel):
    model_config = ConfigDict(frozen=True)

    tensor_parallel_size: int
    pipeline_parallel_size: int
    data_parallel_size: int
    expert_parallel: bool
    gpus: int


class MemoryFit(BaseModel):
    """The answer to "does it fit, and what is left for the KV cache"."""

    model_config = ConfigDict(frozen=True)

    fits: bool
    model: str
    accelerator: str
    engine: str
    quantization: str
    kv_cache_dtype: str
    parallel: ParallelPlan
    max_model_len: int
    gpu_memory_bytes: float  # total per GPU as the driver reports it
    usable_bytes_per_gpu: float
    weights_bytes: float  # one full copy of the model
    weights_bytes_per_gpu: float
    activation_bytes_per_gpu: float
    overhead_bytes_per_gpu: float
    kv_cache_bytes_per_gpu: float  # memory each GPU has for the KV cache (0 when none)
    kv_cache_bytes_per_token: float  # one token of context across one instance, all layers
    state_bytes_per_sequence: float  # linear-attention / Mamba state per sequence, per instance
    kv_cache_tokens: int  # tokens of context one instance holds in sequences of max_model_len (windows and states included)
    max_concurrency: float  # max_model_len sequences one instance holds at once
    total_max_concurrency: float  # across all data-parallel replicas
    sequence_bytes_per_gpu: float  # one max_model_len sequence, per GPU
    largest_context_tokens: int | None  # at `concurrency`, per sequence
    concurrency: int | None
    shortfall_bytes: float  # per GPU, 0 when it fits
    smallest_fit: ParallelPlan | None
    assumptions: tuple[str, ...]


def _parallel(d: Deployment, gpus: int) -> ParallelPlan:
    instance = d.tensor_parallel_size * d.pipeline_parallel_size
    if gpus < instance:
        raise InvalidScenarioError(
            f"TP {d.tensor_parallel_size} × PP {d.pipeline_parallel_size} needs {instance} GPUs, "
            f"only {gpus} given",
            field="--gpus",
            allowed=f">= {instance}",
        )
    dp = d.data_parallel_size or gpus // instance
    if instance * dp != gpus:
        raise InvalidScenarioError(
            f"TP × PP × DP = {instance * dp} must equal --gpus {gpus}",
            field="--data-parallel-size",
            allowed=f"{gpus // instance}" if gpus % instance == 0 else "a divisor",
        )
    return ParallelPlan(
        tensor_parallel_size=d.tensor_parallel_size,
        pipeline_parallel_size=d.pipeline_parallel_size,
        data_parallel_size=dp,
        expert_parallel=d.enable_expert_parallel,
        gpus=gpus,
    )


def _quantization(catalog: Catalog, d: Deployment, spec: ModelSpec, accel: Accelerator, engine_id: str) -> tuple[Quantization, list[str]]:
    name = d.quantization or spec.native_quantization or "bf16"
    quant = catalog.quantization(name)
    notes = []
    if quant.native_format and quant.native_format not in accel.native_formats:
        notes.append(
            f"{accel.name} has no native {quant.native_format}: {quant.id} weights run through a "
            f"{quant.fallback_compute} fallback (same memory, slower compute)"
        )
    if quant.engines and engine_id not in quant.engines:
        loadable = ", ".join(q.id for q in catalog.quantizations if not q.engines or engine_id in q.engines)
        chosen = f"{quant.id} weights" if d.quantization else f"{spec.name}'s native {quant.id} checkpoint"
        raise InvalidScenarioError(
            f"{engine_id} does not load {chosen} (loaded by {', '.join(quant.engines)}); choose a format it loads",
            field="--quantization",
            allowed=loadable,
        )
    return quant, notes


def check_kv_dtype(catalog: Catalog, engine_name: str, kv_cache_dtype: str) -> KvDtype:
    """A stated KV-cache element type, if the engine can run it (``engines.yaml`` ``kv_cache_dtypes``)."""
    kv = catalog.kv_cache_dtype(kv_cache_dtype)
    engine = catalog.engine(engine_name)
    if engine.kv_cache_dtypes and kv.id not in engine.kv_cache_dtypes:
        instead = engine.kv_cache_dtypes_instead.get(kv.id)
        others = [e.name for e in catalog.engines if kv.id in e.kv_cache_dtypes]
        hint = (f"; its nearest is {instead}" if instead else f"; {', '.join(others)} can" if others else
                "; no engine in the catalogue runs it (research code): size it with --kv-bytes-per-token")
        raise InvalidScenarioError(f"{engine.name} has no {kv.id} KV cache{hint}", field="--kv-cache-dtype",
                                   allowed="auto | " + " | ".join(engine.kv_cache_dtypes))
    return kv


def _kv_dtype(catalog: Catalog, d: Deployment, spec: ModelSpec) -> KvDtype:
    """The KV cache's element type: the stated one (if the engine runs it), else the checkpoint's
    (a ModelOpt FP8 checkpoint) or the model's dtype."""
    arch = spec.architecture
    v4 = arch is not None and arch.compressed is not None and not spec.architecture_is_proxy
    if d.kv_cache_dtype != "auto":
        kv = check_kv_dtype(catalog, d.engine, d.kv_cache_dtype)
        if v4 and kv.id != "fp8" and catalog.engine(d.engine).id == "vllm":
            raise InvalidScenarioError(f"vLLM runs {spec.name}'s compressed-attention cache in FP8 only (its "
                                       "deepseek_v4_attention asserts it)", field="--kv-cache-dtype", allowed="auto | fp8")
        return kv
    if v4:  # DeepSeek-V4: vLLM runs only an FP8 cache, and its 584-byte entries are what the figures assume
        return catalog.kv_cache_dtype("fp8")
    if arch and arch.quant and arch.quant.kv_cache_dtype and not spec.architecture_is_proxy:
        return catalog.kv_cache_dtype(arch.quant.kv_cache_dtype)
    dtype = arch.torch_dtype if arch else "bfloat16"
    return catalog.kv_cache_dtype("fp16" if dtype == "float16" else "bf16")


def _engine_settings(d: Deployment, engine, accel: Accelerator, total_bytes: float) -> EngineSettings:
    large = (engine.large_gpu_bytes is None or total_bytes >= engine.large_gpu_bytes.value) and (
        accel.id not in engine.small_default_accelerators
    )
    mnbt = d.max_num_batched_tokens or _value(engine.max_num_batched_tokens if large else engine.small_gpu_max_num_batched_tokens, 2048)
    seqs = d.max_num_seqs or min(_value(engine.max_num_seqs if large else engine.small_gpu_max_num_seqs, 256), mnbt)
    measured_working_set = engine.id == "mlx" and accel.memory_reported_bytes is not None
    # a measured Metal working set is already the GPU's cap: MLX's 0.75 rule of thumb does not apply again
    frac = d.gpu_memory_utilization or (1.0 if measured_working_set else _value(engine.memory_fraction, 1.0))
    if d.ubatch_size and engine.prefill_micro_batch_tokens is None:
        raise InvalidScenarioError(f"{engine.name} runs a prompt chunk as one batch: --ubatch-size is llama.cpp's n_ubatch",
                                   field="--ubatch-size", allowed="leave it out, or --max-num-batched-tokens for the chunk")
    micro = min(int(d.ubatch_size or _value(engine.prefill_micro_batch_tokens, mnbt)), int(mnbt))  # n_ubatch <= n_batch
    return EngineSettings(frac, int(mnbt), int(seqs), int(engine.block_tokens.value), micro,
                          limits_per_micro_batch=engine.pp_batch_limits == "per_micro_batch")


def _value(q, default: float) -> float:
    return q.value if q is not None else default


def _stage_weights(w: WeightEstimate, plan: ParallelPlan, spec: ModelSpec, engine: EngineDefaults,
                   embeddings_on_host: bool) -> tuple[tuple[StageWeights, ...], StageWeights, str]:
    """The weights a GPU of each pipeline stage holds, the fullest, and a note on them: under pipeline
    parallelism they differ (the first holds the embeddings, unless the engine keeps them in host
    memory; the last the lm_head)."""
    arch = None if spec.architecture_is_proxy else spec.architecture
    tp, pp, dp = plan.tensor_parallel_size, plan.pipeline_parallel_size, plan.data_parallel_size
    layers = arch.num_layers if arch else 0
    stages = stage_weights(w, tp=tp, pp=pp, expert_shards=tp * (dp if plan.expert_parallel else 1),
                           moe_layers=arch.moe.moe_layers if arch and arch.moe else (), num_layers=layers,
                           embeddings_on_host=embeddings_on_host)
    fullest = max(range(pp), key=lambda i: stages[i].bytes_per_gpu)
    note = ""
    if pp > 1:
        split = "/".join(str(n) for n in stage_layer_counts(layers, pp)) + " layers" if layers else "an even split"
        ends = "the last also holds the lm_head" if embeddings_on_host else \
            "the first also holds the token embeddings, the last the lm_head"
        room = ("each stage's KV cache has the room its own weights leave, all with the same number of blocks"
                if engine.pp_kv_room == "per_stage" else
                f"the fullest (stage {fullest + 1}) sets the KV cache room of every stage")
        gib = 2**30
        note = (f"pipeline stages hold {split}; {ends}: {stages[0].bytes_per_gpu / gib:.2f} GiB per GPU on the first, "
                f"{stages[-1].bytes_per_gpu / gib:.2f} on the last, {min(s.bytes_per_gpu for s in stages) / gib:.2f} on the "
                f"lightest; {room}")
    return stages, stages[fullest], note


@dataclass(frozen=True)
class MemoryPlan:
    """Everything a memory fit worked out, for the layers above it (speed, economics)."""

    result: MemoryFit
    spec: ModelSpec
    accelerator: Accelerator
    quantization: Quantization
    kv_dtype: KvDtype
    weights: WeightEstimate
    layout: KvLayout
    settings: EngineSettings
    hardware: Hardware
    stage_weights: tuple[StageWeights, ...]  # per GPU of each pipeline stage, before what the engine adds


def fit(d: Deployment, catalog: Catalog | None = None) -> MemoryFit:
    """Memory fit of one deployment."""
    return plan_memory(d, catalog).result


def plan_memory(d: Deployment, catalog: Catalog | None = None) -> MemoryPlan:
    """Memory fit of one deployment, with the intermediate objects it used."""
    catalog = catalog or load_catalog()
    spec = resolve_model(catalog, d.model)
    hw = resolve_hardware(catalog, d)
    plan = _parallel(d, hw.gpus)
    return _fit(catalog, d, spec, hw, plan, search_smallest=True)


def _has_experts(spec: ModelSpec) -> bool:
    arch = spec.architecture
    if arch is not None and not spec.architecture_is_proxy:
        return arch.moe is not None
    return bool(spec.active_params and spec.total_params and spec.active_params < spec.total_params) or bool(arch and arch.moe)


def _check_runs_on(catalog: Catalog, engine, accel) -> None:
    """An engine plans only on accelerators whose software stack it runs on (TensorRT-LLM: CUDA)."""
    if engine.runs_on and accel.software not in engine.runs_on:
        usable = [e.id for e in catalog.engines if not e.runs_on or accel.software in e.runs_on]
        raise InvalidScenarioError(
            f"{engine.name} does not run on {accel.name} ({accel.software.value}); it runs on "
            f"{', '.join(s.value for s in engine.runs_on)}", field="--engine", allowed=" | ".join(usable))


def _fit(catalog: Catalog, d: Deployment, spec: ModelSpec, hw: Hardware, plan: ParallelPlan, *, search_smallest: bool) -> MemoryPlan:
    arch = spec.architecture
    if arch is None and d.kv_bytes_per_token is None:
        raise InvalidScenarioError(
            f"{spec.name}: its architecture is not published in the catalogue, so its KV cache "
            "cannot be sized; pass its config.json with --model, or state the KV bytes per token "
            "with --kv-bytes-per-token",
            field="--kv-bytes-per-token",
        )
    engine = catalog.engine(d.engine)
    _check_runs_on(catalog, engine, hw.accel)
    if d.enable_expert_parallel and not _has_experts(spec):
        raise InvalidScenarioError(f"{spec.name} is a dense model: it has no experts to spread over GPUs",
                                   field="--enable-expert-parallel", allowed="leave it off for a dense model")
    if d.enable_expert_parallel and engine.expert_parallel is False:
        takers = ", ".join(e.id for e in catalog.engines if e.expert_parallel)
        raise InvalidScenarioError(f"{engine.name} does not spread experts over GPUs ({engine.expert_parallel_source})",
                                   field="--enable-expert-parallel", allowed=f"leave it off, or an engine that does: {takers}")
    _check_heads(spec, engine.id, plan.tensor_parallel_size)
    layers = spec.architecture.num_layers if spec.architecture and not spec.architecture_is_proxy else 0
    if layers and plan.pipeline_parallel_size > layers:
        raise InvalidScenarioError(f"{spec.id} has {layers} layers: a pipeline stage needs at least one",
                                   field="--pipeline-parallel-size", allowed=f"1 to {layers}")
    reach = hw.domain_gpus if hw.scale_out is not None or not hw.pcie_server_gpus else hw.pcie_server_gpus
    unpriced = hw.scale_out is None and plan.tensor_parallel_size > reach  # a memory answer for a layout perf refuses
    network = [f"tensor parallelism over {plan.tensor_parallel_size} GPUs goes past the {reach} that "
               f"{hw.system.name if hw.system else hw.accel.name} joins, and the catalogue knows no network between "
               "them: this is the memory answer only; `inferplan perf` refuses the layout"] if unpriced else []
    quant, notes = _quantization(catalog, d, spec, hw.accel, engine.id)
    kv_dtype = _kv_dtype(catalog, d, spec)
    assumptions = [*spec.assumptions, *hw.assumptions, *network, *notes]
    total, total_note = device_total_bytes(catalog, hw.accel)
    if total_note:
        assumptions.append(total_note)
    weights = weight_bytes(spec, quant)
    assumptions.extend(weights.assumptions)
    on_host = engine.embeddings_on_host and not hw.accel.unified_memory  # one pool: host memory is the same memory
    stages, fullest, stages_note = _stage_weights(weights, plan, spec, engine, on_host)
    w_gpu, experts_gpu = fullest.bytes_per_gpu, fullest.expert_bytes_per_gpu
    if stages_note:
        assumptions.append(stages_note)
    if on_host and weights.embedding_bytes and not weights.head_is_embedding:
        assumptions.append(f"{engine.id} keeps the token-embedding table ({weights.embedding_bytes / 2**30:.2f} GiB) in host "
                           "memory, not on a GPU")
    extra, extra_note = extra_weight_bytes(catalog, engine.id, quant.id, hw.accel, experts_gpu)
    if extra_note:
        w_gpu += extra
        assumptions.append(extra_note)
    settings = _engine_settings(d, engine, hw.accel, total)
    tp, pp = plan.tensor_parallel_size, plan.pipeline_parallel_size

    def room(weights_gpu: float):
        return engine_budget(catalog, engine, total_bytes=total, weights_bytes_per_gpu=weights_gpu, arch=arch,
                             settings=settings, tp=tp, gpus_in_instance=tp * pp)

    budget = room(w_gpu)
    assumptions.extend(budget.assumptions)
    # under pipeline parallelism, engines that size each stage's cache by its own room (vLLM): the room
    # each stage's weights leave; the smallest is the figure reported
    rooms = [room(st.bytes_per_gpu + extra_weight_bytes(catalog, engine.id, quant.id, hw.accel, st.expert_bytes_per_gpu)[0])
             for st in stages] if pp > 1 and engine.pp_kv_room == "per_stage" else []
    if rooms:  # the weights reported stay the fullest GPU's; its room is the smallest unless extras reorder them
        budget = min(rooms, key=lambda b: b.kv_bytes_per_gpu)
    if d.kv_bytes_per_token is not None:
        layout = stated_layout(d.kv_bytes_per_token, tp=tp, pp=pp)
        assumptions.append(f"KV per token stated by the user: {d.kv_bytes_per_token:,.0f} bytes, split evenly over the instance")
    else:
        assert arch is not None
        if tp > arch.num_kv_heads and arch.mla is None and arch.num_kv_heads:
            assumptions.append(f"TP {tp} exceeds {arch.num_kv_heads} KV heads: each GPU keeps a replicated KV head")
        if arch.mla is not None and tp > 1:
            assumptions.append("MLA latent KV is replicated on every tensor-parallel rank")
        layout = kv_layout(
            arch, kv_bits=kv_dtype.bits_per_element.value, tp=tp, pp=pp,
            residual_tokens=kv_dtype.residual_tokens,
        )
    smallest = budget.kv_bytes_per_gpu
    if rooms and layout.stages and smallest > 0:
        layout = dataclasses.replace(layout, stage_rooms=tuple(r.kv_bytes_per_gpu / smallest for r in rooms))
    context_notes, capped = _check_context(d, spec, engine)
    assumptions.extend(context_notes)
    max_len = capped or d.max_model_len or spec.context_tokens or (arch.max_position_embeddings if arch else 0) or 4096
    block = settings.block_tokens
    kv_gpu = max(budget.kv_bytes_per_gpu, 0.0)
    seq_gpu = layout.sequence_bytes_per_gpu(max_len, block)
    seq_room = layout.room_bytes_per_sequence(max_len, block)  # of the smallest stage's room (seq_gpu on one stage)
    # tokens of context the cache holds in sequences of max_len: a window layer or a recurrent state
    # costs a sequence the same at any length, so a token's share is its sequence's bytes / max_len
    held = math.ceil(max_len / block) * block  # its last block is held whole
    per_tok_gpu = seq_room / held if held else layout.bytes_per_token_per_gpu
    tokens = int(kv_gpu // (block * per_tok_gpu)) * block if per_tok_gpu else 0
    concurrency = kv_gpu / seq_room if seq_room else 0.0
    fits = budget.kv_bytes_per_gpu > 0 and kv_gpu >= seq_room
    largest = None
    if d.concurrency:  # sequences across the deployment, as perf counts them: each instance holds its share
        per_instance = math.ceil(d.concurrency / plan.data_parallel_size)
        largest = layout.max_tokens_per_sequence(kv_gpu, per_instance, block)
        if fits and largest < 1:
            raise InvalidScenarioError(
                f"{d.concurrency:,} sequences leave no room for even one token of context each: the KV cache holds "
                f"{tokens:,} tokens per instance ({plan.data_parallel_size} instance(s))", field="--concurrency",
                allowed=f"fewer sequences, at most {plan.data_parallel_size * (tokens // block):,} (one {block}-token block each)")
    smallest = None
    if not fits and search_smallest:
        smallest = _smallest_fit(catalog, d, spec, hw)
    result = MemoryFit(
        fits=fits,
        model=spec.id,
        accelerator=hw.accel.id,
        engine=engine.id,
        quantization=quant.id,
        kv_cache_dtype=kv_dtype.id,
        parallel=plan,
        max_model_len=max_len,
        gpu_memory_bytes=total,
        usable_bytes_per_gpu=budget.usable_bytes_per_gpu,
        weights_bytes=weights.total_bytes,
        weights_bytes_per_gpu=w_gpu,
        activation_bytes_per_gpu=budget.activation_bytes_per_gpu,
        overhead_bytes_per_gpu=budget.overhead_bytes_per_gpu,
        kv_cache_bytes_per_gpu=kv_gpu,
        kv_cache_bytes_per_token=layout.bytes_per_token,
        state_bytes_per_sequence=layout.state_bytes_per_seq,
        kv_cache_tokens=tokens,
        max_concurrency=concurrency,
        total_max_concurrency=concurrency * plan.data_parallel_size,
        sequence_bytes_per_gpu=seq_gpu,
        largest_context_tokens=largest,
        concurrency=d.concurrency,
        shortfall_bytes=0.0 if fits else _shortfall(layout, rooms, max_len, block, seq_gpu - budget.kv_bytes_per_gpu),
        smallest_fit=smallest,
        assumptions=tuple(dict.fromkeys(assumptions)),
    )
    return MemoryPlan(result, spec, hw.accel, quant, kv_dtype, weights, layout, settings, hw, stages)


def _shortfall(layout: KvLayout, rooms: list, tokens: int, block: int, otherwise: float) -> float:
    """Bytes per GPU the worst-off stage lacks for one sequence of ``tokens`` (each stage against its
    own room where the engine sizes them so; else the fullest GPU's room against the largest need)."""
    if not rooms or len(rooms) != len(layout.stages):
        return otherwise
    return max(st.sequence_bytes_per_gpu(tokens, block) - r.kv_bytes_per_gpu for st, r in zip(layout.stages, rooms))


def _check_context(d: Deployment, spec: ModelSpec, engine: EngineDefaults) -> tuple[list[str], int | None]:
    """A max_model_len past the model's context, as the engine treats it (engines.yaml
    ``context_beyond_model``): an error where it refuses it, the model's context where it caps it
    (returned as the length to plan at), a note where it runs it."""
    if not (d.max_model_len and spec.context_tokens and d.max_model_len > spec.context_tokens):
        return [], None
    limit, why = spec.context_tokens, f" ({engine.context_beyond_model_note})" if engine.context_beyond_model_note else ""
    if engine.context_beyond_model == "refuse":
        raise InvalidScenarioError(
            f"max_model_len {d.max_model_len:,} is longer than {spec.id}'s context of {limit:,} tokens, "
            f"which {engine.id} refuses (a longer context needs RoPE scaling: import a config.json whose rope_scaling "
            "opens it)", field="--max-model-len", allowed=f"at most {limit:,} tokens")
    if engine.context_beyond_model == "cap":
        return [f"max_model_len {d.max_model_len:,} is past {spec.id}'s context of {limit:,} tokens: {engine.id} "
                f"serves at most {limit:,}{why}"], limit
    return [f"max_model_len {d.max_model_len:,} is past {spec.id}'s trained context of {limit:,} tokens: "
            f"{engine.id} runs it, but the model was not trained that long{why}"], None


HEAD_SHARDING_ENGINES = ("vllm", "sglang", "trtllm")  # shard attention heads across tensor-parallel ranks


def _tp_shards_heads(spec: ModelSpec, engine: str, tp: int) -> bool:
    arch = spec.architecture
    if tp == 1 or engine not in HEAD_SHARDING_ENGINES or arch is None or spec.architecture_is_proxy:
        return True
    return arch.num_attention_heads % tp == 0


def _check_heads(spec: ModelSpec, engine: str, tp: int) -> None:
    """vLLM, SGLang and TensorRT-LLM split the attention heads evenly over the tensor-parallel ranks."""
    if not _tp_shards_heads(spec, engine, tp):
        heads = spec.architecture.num_attention_heads
        allowed = ", ".join(str(n) for n in range(1, heads + 1) if heads % n == 0 and n <= 1024)
        raise InvalidScenarioError(
            f"{spec.name} has {heads} attention heads, which {engine} cannot split over {tp} tensor-parallel ranks",
            field="--tensor-parallel-size",
            allowed=allowed,
        )


def _smallest_fit(catalog: Catalog, d: Deployment, spec: ModelSpec, hw: Hardware) -> ParallelPlan | None:
    """Fewest GPUs (TP within the scale-up domain first, then PP) that hold one instance."""
    limit = 1024
    # a pipeline stage holds a layer at least (a borrowed layout's layer count is not the model's)
    layers = spec.architecture.num_layers if spec.architecture and not spec.architecture_is_proxy else limit
    engine = catalog.engine(d.engine).id
    candidates = []
    tp = 1
    while tp <= hw.domain_gpus:
        pp = 1
        shards = _tp_shards_heads(spec, engine, tp)  # a TP size that cannot split the heads: no candidates
        while shards and tp * pp <= limit and pp <= layers:
            candidates.append((tp * pp, pp, tp))
            pp *= 2
        tp *= 2
    for gpus, pp, tp in sorted(candidates):
        plan = ParallelPlan(
            tensor_parallel_size=tp, pipeline_parallel_size=pp, data_parallel_size=1,
            expert_parallel=d.enable_expert_parallel, gpus=gpus,
        )
        trial = d.model_copy(update={"tensor_parallel_size": tp, "pipeline_parallel_size": pp, "gpus": gpus, "data_parallel_size": 1})
        if _fit(catalog, trial, spec, hw, plan, search_smallest=False).result.fits:
            return plan
    return None
