"""A hybrid model's cache memory split into recurrent-state slots and an attention KV pool, where the
engine release splits it (SGLang: ``catalog/hybrid_split.py``, the rule's ``hybrid_state_split``).

The room left for the cache on each GPU is split: the state pool takes ``ratio / (1 + ratio)`` of it in
whole slots of one sequence's state (one slot more where the release pads the pool), the attention KV pool
the rest. The KV tokens are what the attention layers' bytes per token make of the KV pool, and the
running sequences are capped at the slots over the slots each request holds. Where the release runs an
architecture with the radix cache off, a request holds one slot and the pool may be a fixed count (0.5.3 to
0.5.12: 512, or the running requests stated). The recurrent state is in the release's dtype
(``engine_state_architecture``). With a speculative draft the release solves the slots with each running
request's intermediate state per verified token, which leaves the KV pool (the entry's ``draft_state``; a
release whose solve is not read refuses the draft). Without the split the plan charges each sequence its
state inside the one pool (``fit_held.kv_held``).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from inferplan.catalog.architecture import Architecture, LayerKind
from inferplan.catalog.hybrid_split import HybridStateSplit, hybrid_split_at, next_split_release
from inferplan.catalog.memory_rules import MemoryRule
from inferplan.errors import InvalidScenarioError
from inferplan.inputs.deployment import METHOD_DRAFT_FIELDS, Deployment
from inferplan.memory.fit_held import Held
from inferplan.memory.kv_cache import KvLayout
from inferplan.units import GiB


RECURRENT = {LayerKind.MAMBA, LayerKind.LINEAR}  # the layers whose state the engine keeps in slots


@dataclass(frozen=True)
class StatePool:
    """One GPU's split of the cache room: the state slots, the bytes they take (and a draft's intermediate
    state) and the KV pool left."""

    slots: int
    slots_per_request: int
    state_bytes_per_gpu: float
    kv_pool_bytes_per_gpu: float
    draft_state_bytes_per_gpu: float = 0.0

    @property
    def running_cap(self) -> int:
        """The most requests that run at once: the slots over the slots each holds."""
        return self.slots // self.slots_per_request


@dataclass(frozen=True)
class DraftPlan:
    """A speculative draft as the state pool is solved for it: the verified tokens per step and the running
    requests each rank reserves intermediate state for."""

    verified_tokens: int
    running_requests_per_rank: int


def state_pool(split: HybridStateSplit, room_bytes_per_gpu: float, state_bytes_per_seq_per_gpu: float,
               hf_architecture: str | None, *, ratio: float | None = None, slots: int | None = None,
               draft: DraftPlan | None = None) -> StatePool:
    """The split of ``room_bytes_per_gpu`` as the engine solves it: ``slots`` where stated, else the most whole
    slots in the state pool's share at ``ratio`` (None: the release's default), with ``draft``'s intermediate
    state where one is planned (``HybridStateSplit.draft_state``)."""
    pad = 1 if split.padding_slot else 0
    s = state_bytes_per_seq_per_gpu
    per_request = split.slots_per_request(hf_architecture)
    verified = draft.verified_tokens if draft else 0
    if slots is None:
        r = ratio or split.state_to_kv_ratio
        budget = max(room_bytes_per_gpu, 0.0) * r / (1 + r)
        slots = max(int((budget - pad * s * (1 + verified)) // (s * (1 + verified / per_request))), 0)
    capped = min(draft.running_requests_per_rank, slots // per_request) if draft else 0
    intermediate = (capped + pad) * verified * s if draft else 0.0
    state = (slots + pad) * s
    return StatePool(slots, per_request, state, room_bytes_per_gpu - state - intermediate, intermediate)


def engine_state_architecture(rule: MemoryRule, d: Deployment, arch: Architecture | None) -> Architecture | None:
    """``arch`` with its recurrent state in the dtype the engine release keeps it in (the split entry's
    ``state_dtype_bytes``, the config's ``mamba_ssm_dtype`` where the release follows one); the conv state
    keeps the model's 16 bits. A release whose context cache states its own state dtype (llama.cpp's F32) keeps both
    the conv and the recurrent state in it."""
    wide = rule.context_cache.state_bytes_per_element if rule.context_cache else None
    if arch is not None and wide is not None:
        linear = arch.linear and dataclasses.replace(arch.linear, recurrent_state_bytes=wide, conv_state_bytes=wide)
        mamba = arch.mamba and dataclasses.replace(arch.mamba, ssm_state_bytes=wide, conv_state_bytes=wide)
        return dataclasses.replace(arch, linear=linear, mamba=mamba)
    entry = hybrid_split_at(rule.hybrid_state_split, rule.planned_release(d.engine_version))
    if arch is None or entry is None or entry.state_dtype_bytes is None:
        return arch
    linear, mamba = arch.linear, arch.mamba
    if linear is not None:
        named = linear.config_state_bytes if entry.config_state_dtype else None
        linear = dataclasses.replace(linear, recurrent_state_bytes=named or entry.state_dtype_bytes)
    if mamba is not None:
        named = mamba.config_state_bytes if entry.config_state_dtype else None
        mamba = dataclasses.replace(mamba, ssm_state_bytes=named or entry.state_dtype_bytes)
    return dataclasses.replace(arch, linear=linear, mamba=mamba)


def release_split(rule: MemoryRule, d: Deployment, arch: Architecture | None,
                  layout: KvLayout) -> HybridStateSplit | None:
    """The release's split where it applies: a model with Mamba or linear-attention layers on one pipeline stage
    (None otherwise; a stated state-pool setting where it does not apply is refused). Other per-sequence state
    (DeepSeek-V4's compressor state) stays in the KV pool."""
    recurrent = arch is not None and bool(RECURRENT & set(arch.layer_kinds))
    applies = recurrent and layout.state_bytes_per_seq_per_gpu > 0 and not layout.stages
    split = hybrid_split_at(rule.hybrid_state_split, rule.planned_release(d.engine_version)) if applies else None
    for field in ("max_mamba_cache_size", "mamba_full_memory_ratio"):
        if getattr(d, field) is not None and split is None:
            why = ("the model has no Mamba or linear-attention layers" if not recurrent else
                   "the split is planned on one pipeline stage only" if layout.stages else
                   "the engine release keeps no separate state pool")
            raise InvalidScenarioError(f"{field} sizes a hybrid model's recurrent-state pool, but {why}", field=field,
                                       allowed="leave it out, or a hybrid model on one pipeline stage under SGLang "
                                               "0.5.3 or later")
    if split is not None and split.architectures and arch is not None and arch.hf_architecture not in split.architectures:
        later = next_split_release(rule.hybrid_state_split, split, arch.hf_architecture)
        raise InvalidScenarioError(
            f"SGLang {split.first_release} runs no hybrid model of architecture {arch.hf_architecture}: its hybrid "
            f"models are {', '.join(split.architectures)}", field="engine_version",
            allowed=f"{later} or later" if later else "another engine")
    if split is not None and draft_named(d) and (split.draft_state is None or not d.speculative_tokens):
        planned = rule.planned_release(d.engine_version) or split.first_release
        solved = [e.first_release for e in rule.hybrid_state_split if e.draft_state is not None]
        if split.draft_state:
            raise InvalidScenarioError(f"SGLang {planned} sizes a hybrid model's state pool with a speculative draft's "
                                       f"verified tokens, and the draft states no speculative_tokens",
                                       field="speculative_tokens", allowed="state speculative_tokens N (the draft tokens)")
        raise InvalidScenarioError(f"a speculative draft with a hybrid model is not planned on SGLang {planned}: the "
                                   f"release's solve of the state pool with a draft's intermediate state is not read",
                                   field="speculative_tokens",
                                   allowed=f"0 (no draft), or draft tokens under SGLang {solved[0]} or later" if solved
                                   else "0 (no draft) for this model under SGLang")
    return split


def draft_named(d: Deployment) -> bool:
    """Whether ``d`` plans a speculative draft."""
    return bool(d.speculative_tokens or d.mtp_draft or d.eagle3_draft or d.draft_checkpoint)


def without_draft_models(d: Deployment) -> Deployment:
    """``d`` with none of the drafts a method loads (``METHOD_DRAFT_FIELDS``: MTP layers, an EAGLE-3 or a draft
    checkpoint); its draft tokens and method stay as stated."""
    return d.model_copy(update={field: False if field == "mtp_draft" else None for field in METHOD_DRAFT_FIELDS.values()})


def without_drafts(d: Deployment) -> Deployment:
    """``d`` drafting nothing: no draft tokens, no drafting method and none of the drafts a method loads (a
    prefill instance beside a drafting decode one, or the same deployment served without speculative decoding)."""
    return without_draft_models(d).model_copy(update={"speculative_tokens": 0, "speculative_method": None})


def draft_method(d: Deployment, arch: Architecture | None) -> str:
    """The method drafting ``d``'s tokens: the one named, else the one whose draft ``d`` names, else mtp where the
    model has MTP layers, else ngram (as ``memory.mtp.with_unnamed_drafts`` plans an unnamed draft)."""
    by_draft = next((method for method, field in METHOD_DRAFT_FIELDS.items() if getattr(d, field)), None)
    return d.speculative_method or by_draft or ("mtp" if arch is not None and arch.mtp_layers else "ngram")


def flag_running_requests(d: Deployment) -> int | None:
    """The --max-running-requests ``d`` is launched with (None: not stated): its max_num_seqs, each DP attention
    rank's, times the ranks (the flag is the server's total there: ``max_num_seqs`` in engine_flags.yaml)."""
    return d.max_num_seqs * attention_dp_ranks(d) if d.max_num_seqs else None


def draft_plan(split: HybridStateSplit, d: Deployment, arch: Architecture | None, ranks: int) -> DraftPlan | None:
    """The draft the state pool is solved for (None without one): the verified tokens by the method
    (``draft_method``) and the running requests per DP attention
    rank (of ``ranks``): stated (max_num_seqs is each rank's), else the release's default with a draft over the ranks."""
    if not d.speculative_tokens or split.draft_state is None:
        return None
    method = draft_method(d, arch)
    floor = split.draft_state.running_requests_floor_per_rank
    per_rank = d.max_num_seqs or max(floor, split.draft_state.running_requests // ranks)  # a stated cap is a rank's
    return DraftPlan(split.draft_state.verified_tokens(d.speculative_tokens, method), per_rank)


def probe_pool_settings(pipeline_parallel_size: int) -> dict:
    """The state-pool settings a smallest-fit probe at ``pipeline_parallel_size`` stages drops: the split is
    planned on one stage, so a probe over stages plans none (a stated setting is checked against the
    deployment's own layout only)."""
    return {} if pipeline_parallel_size == 1 else {"max_mamba_cache_size": None, "mamba_full_memory_ratio": None}


def with_state_pool(held: Held, split: HybridStateSplit | None, d: Deployment, layout: KvLayout, block: int,
                    arch: Architecture | None, instances: int, running_cap: int) -> tuple[Held, StatePool | None, list[str]]:
    """``held`` with the KV tokens of the attention pool and the sequences capped by the state slots, for ``d``
    on ``instances`` instances; the largest context at ``d``'s concurrency is each running sequence's share of the
    attention pool, at most the state slots' cap and the engine's own ``running_cap`` running per instance."""
    if split is None:
        return held, None, []
    hf_architecture = arch and arch.hf_architecture
    ranks = attention_dp_ranks(d) if split.stated_slots_over_attention_dp else 1
    draft = draft_plan(split, d, arch, attention_dp_ranks(d))
    radix_off = hf_architecture in split.radix_off_architectures
    if d.max_mamba_cache_size and not (radix_off or split.stated_slots_with_radix):
        raise InvalidScenarioError(f"SGLang {split.first_release} and the releases up to the next rule's solve the "
                                   f"state slots from the memory ratio with the radix cache on, whatever "
                                   f"max_mamba_cache_size says", field="max_mamba_cache_size",
                                   allowed="leave it out, or a later release (engine_version)")
    fixed = flag_running_requests(d) or (draft and split.draft_state.running_requests) or split.radix_off_slots
    stated = d.max_mamba_cache_size or (radix_off or None) and fixed
    stated = stated and max(stated // ranks, 0)  # per rank, as the engine divides it; a fixed pool with the radix off
    over = attention_dp_ranks(d) if hf_architecture in split.solved_slots_over_attention_dp_architectures else 1
    divided = over > 1 and not stated and d.max_mamba_cache_size is None
    if divided:  # the slots solved from the ratio, divided once more
        stated = state_pool(split, held.kv_gpu, layout.state_bytes_per_seq_per_gpu, hf_architecture,
                            ratio=d.mamba_full_memory_ratio, draft=draft).slots // over
    pool = state_pool(split, held.kv_gpu, layout.state_bytes_per_seq_per_gpu, hf_architecture,
                      ratio=d.mamba_full_memory_ratio, slots=stated, draft=draft)
    if d.max_mamba_cache_size and pool.running_cap < 1:  # a stated pool that runs no request is no memory shortfall
        raise InvalidScenarioError(
            f"max_mamba_cache_size {d.max_mamba_cache_size:,} leaves {pool.slots:,} state slot(s) per rank"
            + (f" over {ranks} DP attention ranks" if ranks > 1 else "") + f", and a running request holds "
            f"{pool.slots_per_request}: no request runs", field="max_mamba_cache_size",
            allowed=f"at least {pool.slots_per_request * ranks:,}, or leave it out")
    sequences = d.concurrency
    per_tok = layout.bytes_per_token_per_gpu
    kv_room = max(pool.kv_pool_bytes_per_gpu, 0.0)
    tokens = int(kv_room // (block * per_tok)) * block if per_tok else 0
    seq = math.ceil(held.max_len / block) * block * per_tok
    by_kv = kv_room / seq if seq else float(pool.running_cap)
    concurrency = min(by_kv, float(pool.running_cap))
    fits = held.fits and kv_room >= seq and pool.running_cap >= 1
    largest = held.largest
    if sequences and per_tok:  # each running sequence's share of the attention pool; those above the cap queue
        running = min(math.ceil(sequences / instances), pool.running_cap, running_cap)
        largest = int(kv_room / max(running, 1) // per_tok)
    how = (f"{d.max_mamba_cache_size:,} as stated" + (f" over {ranks} DP attention ranks" if ranks > 1 else "")
           if d.max_mamba_cache_size else "the radix cache off: a fixed pool" if radix_off and stated else
           f"{d.mamba_full_memory_ratio or split.state_to_kv_ratio:g} x the KV pool's memory"
           + (f", the slots so solved divided over {over} DP attention ranks" if divided else ""))
    note = (f"the cache room is split as the engine release does for a hybrid model: {pool.slots:,} recurrent-state "
            f"slots ({pool.state_bytes_per_gpu / GiB:.2f} GiB per GPU, {how}) and {tokens:,} tokens of attention KV "
            f"cache; the state pool caps the running sequences at {pool.running_cap:,} per instance "
            f"({pool.slots_per_request} slot{'s' if pool.slots_per_request > 1 else ''} each)"
            + (f", {pool.running_cap * instances:,} across {instances} instances" if instances > 1 else "")
            + (f"; the draft's intermediate state for {draft.verified_tokens} verified tokens takes "
               f"{pool.draft_state_bytes_per_gpu / GiB:.2f} GiB per GPU from the KV pool" if draft else ""))
    return (dataclasses.replace(held, tokens=tokens, concurrency=concurrency, fits=fits, largest=largest), pool,
            [note])


def attention_dp_ranks(d: Deployment) -> int:
    """The data-parallel attention ranks SGLang runs (the plan's DP with expert parallelism: DP attention), 1 without."""
    return (d.data_parallel_size or 1) if d.enable_expert_parallel else 1
