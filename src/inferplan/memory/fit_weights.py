"""The weights a memory fit places on each GPU (per pipeline stage, with what the engine's MoE kernel and
expert scales add), the KV cache room they leave under the engine's budget, and how a token's KV cache
spreads over the instance's GPUs."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from inferplan.catalog.architecture import Architecture
from inferplan.catalog.loader import Catalog
from inferplan.catalog.memory_rules import MemoryRule, parse_engine_version
from inferplan.catalog.provenance import release_key
from inferplan.catalog.models import ModelSpec
from inferplan.catalog.engine_schema import EngineDefaults
from inferplan.catalog.quantization_schema import Quantization
from inferplan.catalog.schema import Accelerator, KvDtype
from inferplan.inputs.deployment import Deployment
from inferplan.memory.budget_settings import EngineSettings
from inferplan.memory.engine_budget import EngineBudget, engine_budget
from inferplan.memory.expert_scales import expert_scale_bytes
from inferplan.memory.fit_held import planned_length
from inferplan.memory.expert_split import expert_data_parallel, expert_slot_share, redundant_experts, redundant_note
from inferplan.memory.kv_cache import KvLayout, kv_layout, stated_layout
from inferplan.memory.layout import ParallelPlan
from inferplan.memory.moe_buffers import moe_profile_bytes
from inferplan.memory.moe_layout import extra_weight_bytes, workspace_bytes
from inferplan.memory.stages import StageWeights, stage_layer_counts, stage_weights
from inferplan.memory.weights import WeightEstimate, weight_bytes
from inferplan.units import GiB, fmt_gib


def _stage_weights(w: WeightEstimate, plan: ParallelPlan, spec: ModelSpec, engine: EngineDefaults,
                   embeddings_on_host: bool, expert_dp: int) -> tuple[tuple[StageWeights, ...], StageWeights, str]:
    """The weights a GPU of each pipeline stage holds, the fullest, and a note on them: under pipeline
    parallelism they differ (the first holds the embeddings, unless the engine keeps them in host
    memory; the last the lm_head)."""
    arch = None if spec.architecture_is_proxy else spec.architecture
    tp, pp = plan.tensor_parallel_size, plan.pipeline_parallel_size
    layers = arch.num_layers if arch else 0
    ranks = tp * expert_dp  # the routed experts' GPUs: TP x the data-parallel ranks that share them (expert_split.py)
    redundant = redundant_experts(spec, engine, ranks=ranks) if plan.expert_parallel else 0
    stages = stage_weights(w, tp=tp, pp=pp, expert_shards=ranks,
                           moe_layers=arch.moe.moe_layers if arch and arch.moe else (), num_layers=layers,
                           embeddings_on_host=embeddings_on_host, expert_slot_share=expert_slot_share(spec, redundant))
    fullest = max(range(pp), key=lambda i: stages[i].bytes_per_gpu)
    note = ""
    if redundant:
        note = redundant_note(engine.id, arch.moe.num_experts, ranks=ranks, redundant=redundant)
    if pp > 1:
        note = f"{note}; " if note else ""
        split = "/".join(str(n) for n in stage_layer_counts(layers, pp)) + " layers" if layers else "an even split"
        ends = "the last also holds the lm_head" if embeddings_on_host else \
            "the first also holds the token embeddings, the last the lm_head"
        room = ("each stage's KV cache has the room its own weights leave, all with the same number of blocks"
                if engine.pp_kv_room == "per_stage" else
                f"the fullest (stage {fullest + 1}) sets the KV cache room of every stage")
        note += (f"pipeline stages hold {split}; {ends}: {stages[0].bytes_per_gpu / GiB:.2f} GiB per GPU on the first, "
                f"{stages[-1].bytes_per_gpu / GiB:.2f} on the last, {min(s.bytes_per_gpu for s in stages) / GiB:.2f} on the "
                f"lightest; {room}")
    return stages, stages[fullest], note


@dataclass(frozen=True)
class GpuWeights:
    """The weights on the fullest GPU (with what the engine adds) and on each pipeline stage."""

    estimate: WeightEstimate
    stages: tuple[StageWeights, ...]
    per_gpu: float
    notes: list[str]
    moe_runner_backend: str | None = None  # as stated (None: the engine's default kernel path)
    expert_data_parallel: int = 1  # data-parallel ranks that split the routed experts beside TP (expert_split.py)


def _moe_extra(catalog: Catalog, d: Deployment, engine: EngineDefaults, quant: Quantization, accel: Accelerator,
               spec: ModelSpec, plan: ParallelPlan, expert_bytes_per_gpu: float, expert_dp: int) -> tuple[float, str | None]:
    """What the release's MoE kernel allocates beyond the checkpoint's experts on one GPU (moe_layout), each
    expert's width split over the TP x ``expert_dp`` GPUs of the MoE layers' group."""
    return extra_weight_bytes(catalog, engine.id, quant.id, accel, expert_bytes_per_gpu, arch=spec.architecture,
                              tp=plan.tensor_parallel_size * expert_dp, expert_parallel=plan.expert_parallel,
                              release=d.engine_version, kernel=d.moe_kernel)


def mixed_release_notes(catalog: Catalog, spec: ModelSpec, quant: Quantization, engine: str,
                        release: str | None) -> list[str]:
    """Where the release builds no module of a format a ModelOpt mixed-precision build lists (the format's
    ``mixed_modules_since``): those modules run unquantized there; their weights are counted as stored."""
    formats = spec.formats(quant.id)
    if formats is None or release is None:
        return []
    planned = parse_engine_version(release)[0]
    notes = []
    for qid in dict.fromkeys(q for _, q, _, _ in formats.formats):
        rule = next((r for r in catalog.quantization(qid).mixed_modules_since if r.engine == engine), None)
        if rule is not None and release_key(planned) < release_key(rule.since):
            groups = ", ".join(dict.fromkeys(g for g, q, _, _ in formats.formats if q == qid))
            notes.append(f"{engine} {planned} builds no {qid} module of a ModelOpt mixed-precision config ({rule.since} "
                         f"or later does): the {groups} modules listed in {qid} run unquantized there, their weights "
                         f"counted as the checkpoint stores them ({rule.source})")
    return notes


def weights_on_gpu(catalog: Catalog, d: Deployment, spec: ModelSpec, quant: Quantization, plan: ParallelPlan,
                   engine: EngineDefaults, accel: Accelerator, mtp_loaded: bool = False,
                   mtp_outside: bool = False) -> GpuWeights:
    weights = weight_bytes(spec, quant, mtp_loaded=mtp_loaded, mtp_outside=mtp_outside)
    notes = list(weights.assumptions) + mixed_release_notes(catalog, spec, quant, engine.id, d.engine_version)
    on_host = engine.embeddings_on_host and not accel.unified_memory  # one pool: host memory is the same memory
    # expert parallelism, or an engine whose MoE tensor-parallel group spans the data-parallel ranks one launch
    # states, shards the routed experts over TP x DP GPUs; else each copy holds a TP split
    expert_dp = expert_data_parallel(engine, data_parallel=plan.data_parallel_size, expert_parallel=plan.expert_parallel,
                                     launched=d.data_parallel_size is not None)
    stages, fullest, stages_note = _stage_weights(weights, plan, spec, engine, on_host, expert_dp)
    per_gpu = fullest.bytes_per_gpu
    if stages_note:
        notes.append(stages_note)
    if on_host and weights.embedding_bytes and not weights.head_is_embedding:
        notes.append(f"{engine.id} keeps the token-embedding table ({fmt_gib(weights.embedding_bytes)}) in host "
                     "memory, not on a GPU")
    extra, extra_note = _moe_extra(catalog, d, engine, quant, accel, spec, plan, fullest.expert_bytes_per_gpu, expert_dp)
    if extra_note:
        per_gpu += extra
        notes.append(extra_note)
    scales, scales_note = expert_scale_bytes(catalog, engine.id, spec, quant, accel, fullest.expert_bytes_per_gpu,
                                             d.moe_runner_backend)
    if scales_note:
        per_gpu += scales
        notes.append(scales_note)
    return GpuWeights(weights, stages, per_gpu, notes, d.moe_runner_backend, expert_dp)


def kv_room(catalog: Catalog, d: Deployment, engine: EngineDefaults, quant: Quantization, accel: Accelerator, spec: ModelSpec,
            settings: EngineSettings, plan: ParallelPlan, total: float, w: GpuWeights,
            rule: MemoryRule) -> tuple[EngineBudget, list, list[str]]:
    """The engine's budget on the GPU with the least room for the KV cache, each pipeline stage's
    budget where the engine sizes every stage's cache by its own room (vLLM), and the notes."""
    tp, pp = plan.tensor_parallel_size, plan.pipeline_parallel_size
    workspace = workspace_bytes(catalog, engine.id, quant.id, accel, settings.max_num_batched_tokens,
                                arch=spec.architecture, tp=tp, expert_parallel=plan.expert_parallel,
                                release=d.engine_version, kernel=d.moe_kernel, data_parallel=w.expert_data_parallel,
                                context_tokens=planned_length(d, spec, None))

    caches = moe_profile_bytes(rule, spec.architecture, accel=accel, tokens=settings.max_num_batched_tokens, tp=tp,
                               release=settings.release, quant_id=quant.id, expert_parallel=plan.expert_parallel,
                               data_parallel=w.expert_data_parallel)

    def room(weights_gpu: float) -> EngineBudget:
        return engine_budget(catalog, engine, total_bytes=total, weights_bytes_per_gpu=weights_gpu,
                             arch=spec.architecture, settings=settings, tp=tp, gpus_in_instance=tp * pp, rule=rule,
                             accel=accel, weight_bits=quant.bits_per_weight.value, moe_workspace=workspace,
                             moe_caches=caches)

    budget = room(w.per_gpu)
    rooms = [room(st.bytes_per_gpu + _moe_extra(catalog, d, engine, quant, accel, spec, plan, st.expert_bytes_per_gpu,
                                                w.expert_data_parallel)[0]
                  + expert_scale_bytes(catalog, engine.id, spec, quant, accel, st.expert_bytes_per_gpu,
                                       d.moe_runner_backend)[0])
             for st in w.stages] if pp > 1 and engine.pp_kv_room == "per_stage" else []
    # the weights reported stay the fullest GPU's; its room is the smallest unless extras reorder them
    least = min(rooms, key=lambda b: b.kv_bytes_per_gpu) if rooms else budget
    return least, rooms, list(budget.assumptions)


def instance_kv_layout(d: Deployment, arch: Architecture | None, kv_dtype: KvDtype, plan: ParallelPlan, rooms: list,
                       least_room: float) -> tuple[KvLayout, list[str]]:
    """How a token's KV cache spreads over the instance's GPUs (stated, or from the architecture whose
    layers the pool holds), with each stage's room relative to the least where stages are sized apart."""
    tp, pp = plan.tensor_parallel_size, plan.pipeline_parallel_size
    if d.kv_bytes_per_token is not None:
        layout = stated_layout(d.kv_bytes_per_token, tp=tp, pp=pp)
        notes = [f"KV per token stated by the user: {d.kv_bytes_per_token:,.0f} bytes, split evenly over the instance"]
    else:
        assert arch is not None
        notes = []
        fewest_kv_heads = min(arch.layer_kv_heads(kind) for kind in set(arch.layer_kinds))  # Gemma 4's full layers: fewer
        if tp > fewest_kv_heads and arch.mla is None and fewest_kv_heads:
            notes.append(f"TP {tp} exceeds {fewest_kv_heads} KV heads: each GPU keeps a replicated KV head")
        if arch.mla is not None and tp > 1:
            notes.append("MLA latent KV is replicated on every tensor-parallel rank")
        layout = kv_layout(arch, kv_bits=kv_dtype.bits_per_element.value, tp=tp, pp=pp,
                           residual_tokens=kv_dtype.residual_tokens)
    if rooms and layout.stages and least_room > 0:
        layout = dataclasses.replace(layout, stage_rooms=tuple(r.kv_bytes_per_gpu / least_room for r in rooms))
    return layout, notes


def kv_copies(d: Deployment, arch: Architecture | None, kv_dtype: KvDtype, plan: ParallelPlan, layout: KvLayout) -> float:
    """How many copies of each token's KV cache the instance holds: 1 where every layer splits over the
    tensor-parallel ranks; more where a layer is held whole on several ranks (MLA's latent on every rank,
    KV heads fewer than the ranks), so that ``layout.bytes_per_token`` counts it on each of them."""
    if d.kv_bytes_per_token is not None or arch is None or plan.tensor_parallel_size == 1:
        return 1.0
    one_rank = kv_layout(arch, kv_bits=kv_dtype.bits_per_element.value, tp=1, pp=plan.pipeline_parallel_size,
                         residual_tokens=kv_dtype.residual_tokens)
    return layout.bytes_per_token / one_rank.bytes_per_token if one_rank.bytes_per_token else 1.0
