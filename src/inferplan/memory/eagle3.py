"""Speculative decoding with a published EAGLE-3 draft head (``catalog/data/eagle3_drafts.yaml``): what
the engine holds for it. Each engine places a draft head's weights and KV where it places a model's
own MTP layers (``engine_mtp_rules.yaml``, the same code paths: vLLM V1's EAGLE proposer loads either
drafter before sizing the KV cache and gives its attention layers entries in the target's pool;
SGLang through 0.5.13 loads it and a draft pool of the target's token count after the target's pool is
sized, with 2 or 4 GiB more kept outside the default fraction, and from 0.5.14 inside the fraction as vLLM
does; TensorRT-LLM's one-model mode builds
the draft layers into the model and the KV-cache manager gives them layers after the target's). A
draft checkpoint the catalogue does not list is launched as named, its memory not counted."""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass

from inferplan.catalog.architecture import Architecture, LayerKind
from inferplan.catalog.eagle3_drafts import Eagle3Draft, draft_by_repo, drafts_for
from inferplan.catalog.models import ModelSpec
from inferplan.catalog.mtp_rules import MtpRule, drafts_at_pipeline, mtp_rule
from inferplan.errors import InvalidScenarioError
from inferplan.inputs.deployment import Deployment
from inferplan.memory.draft_headroom import check_outside_fraction, draft_reserve_bytes
from inferplan.memory.kv_cache import kv_layout
from inferplan.units import fmt_billions, fmt_gib

FIELD = "draft_model"


@dataclass(frozen=True)
class Eagle3Memory:
    """An EAGLE-3 draft the deployment runs: the catalogued checkpoint (None: one the catalogue does not
    list) and the engine's placement rule (None: the engine has none)."""

    repo: str
    draft: Eagle3Draft | None
    rule: MtpRule | None

    def weight_bytes_per_gpu(self, tensor_parallel_size: int) -> float:
        """The draft's weights on each GPU where the engine loads them before sizing its KV cache: split
        over the tensor-parallel ranks as the target's layers are (assumed)."""
        if self.draft is None or self.rule is None or not self.rule.weights_in_pool:
            return 0.0
        return self.draft.weight_bytes / tensor_parallel_size

    @property
    def reserve_bytes(self) -> float:
        """What the engine keeps outside its default fraction while the draft runs."""
        return draft_reserve_bytes(self.rule)


def default_draft(catalog, spec: ModelSpec) -> Eagle3Draft | None:
    """The model's one catalogued EAGLE-3 draft (None: it has none); several are refused naming
    ``draft_model`` with the ones to pick from."""
    drafts = drafts_for(catalog, spec.id)
    if len(drafts) > 1:
        raise InvalidScenarioError(f"{spec.name} has {len(drafts)} catalogued EAGLE-3 drafts: name one", field=FIELD,
                                   allowed=", ".join(r.repo for r in drafts))
    return drafts[0] if drafts else None


def planned_draft(catalog, spec: ModelSpec, draft_model: str | None) -> Eagle3Draft | None:
    """The catalogued draft ``draft_model`` names for ``spec`` (by its repo or its catalogue id); with none named,
    the model's one catalogued draft (``default_draft``). None: a draft the catalogue does not list, or none."""
    return draft_by_repo(catalog, spec.id, draft_model) if draft_model else default_draft(catalog, spec)


def missing_draft(catalog, spec: ModelSpec) -> InvalidScenarioError:
    """The error for EAGLE-3 drafting of ``spec`` with no draft named and none catalogued: it names
    ``draft_model``, what it takes and the catalogue's drafts (each by its id and repo, for its own model)."""
    listed = ", ".join(f"{r.id} = {r.repo} ({r.model})" for r in catalog.eagle3_drafts)
    return InvalidScenarioError(f"the catalogue lists no EAGLE-3 draft for {spec.name}: name the draft checkpoint",
                                field=FIELD, allowed=f"the repo path of the EAGLE-3 draft for {spec.name} (a Hugging Face "
                                                     f"owner/name, or a local directory), or a catalogued draft's id or "
                                                     f"repo for its own model: {listed}")


def eagle3_memory(catalog, d: Deployment, spec: ModelSpec, engine: str, pipeline_parallel_size: int) -> Eagle3Memory | None:
    """The EAGLE-3 draft ``d`` runs (``eagle3_draft``) as ``engine`` holds it; None: it runs none. A
    catalogued draft on an engine its publisher does not show it running on is an error naming
    ``draft_model``; a pipeline the engine starts no draft under, one naming ``pipeline_parallel_size``."""
    if not d.eagle3_draft:
        return None
    draft = draft_by_repo(catalog, spec.id, d.eagle3_draft)
    if draft is not None and engine not in draft.engines:
        raise InvalidScenarioError(f"EAGLE-3 draft {draft.repo} runs on {', '.join(draft.engines)} as its publisher "
                                   f"shows it, not on {engine}", field=FIELD,
                                   allowed=f"engine {' or '.join(draft.engines)} with {draft.repo}, or another "
                                           "draft_model, or another speculative_method")
    rule = mtp_rule(catalog, engine, d.engine_version)
    if not drafts_at_pipeline(catalog, engine, pipeline_parallel_size):
        raise InvalidScenarioError(
            f"{engine} does not start an EAGLE-3 draft at pipeline_parallel_size {pipeline_parallel_size}: "
            f"{rule.pipeline_parallel_note}", field="pipeline_parallel_size",
            allowed=f"at most {rule.max_pipeline_parallel_size} with an EAGLE-3 draft on {engine} (tensor "
                    "parallelism over more GPUs), or no EAGLE-3 draft")
    return Eagle3Memory(d.eagle3_draft, draft, rule)


def check_draft_headroom(plan: Eagle3Memory | None, arch: Architecture | None, kv_bits: float, tensor_parallel_size: int,
                         total_bytes: float, memory_fraction: float, pool_tokens: int) -> None:
    """Where the engine loads a catalogued draft's weights and a draft pool of its own after its fraction
    is sized (SGLang through 0.5.13), they must fit in what the fraction leaves beyond the draft reserve: the weights per
    tensor-parallel rank and a pool of the target's ``pool_tokens`` over the draft's layers, each with the KV per token
    per GPU of one of the target's (``arch``) full-attention layers. SGLang's draft worker takes the target's pool
    config, its token count, and allocates a plain pool of that many tokens over its own layers, so a hybrid target's
    state slots and other layer kinds do not scale it. More is an error naming ``draft_model``
    (``memory.draft_headroom``)."""
    if plan is None or plan.draft is None or plan.rule is None or arch is None:
        return
    draft = plan.draft
    target = kv_layout(arch, kv_bits=kv_bits, tp=tensor_parallel_size).bytes_per_token_per_gpu
    drafted = kv_layout(with_draft_layers(arch, draft.decoder_layers), kv_bits=kv_bits,
                        tp=tensor_parallel_size).bytes_per_token_per_gpu
    check_outside_fraction(plan.rule, f"EAGLE-3 draft {draft.repo}",
                           weight_bytes_per_gpu=draft.weight_bytes / tensor_parallel_size,
                           pool_bytes_per_gpu=pool_tokens * (drafted - target),
                           total_bytes=total_bytes, memory_fraction=memory_fraction, field=FIELD,
                           allowed="a smaller memory fraction, more tensor parallelism, a smaller draft, or no EAGLE-3 draft")


def eagle3_kv_architecture(arch: Architecture | None, plan: Eagle3Memory | None) -> Architecture | None:
    """The layers whose KV the target's pool holds: the draft's decoder layers after the target's (on the
    last pipeline stage), each as one of the target's full-attention layers, where the engine gives
    them entries there."""
    if arch is None or plan is None or plan.draft is None or plan.rule is None or not plan.rule.kv_layers_in_pool:
        return arch
    return with_draft_layers(arch, plan.draft.decoder_layers)


@functools.lru_cache(maxsize=256)  # one object per model and draft: the layout caches find it by identity
def with_draft_layers(arch: Architecture, layers: int) -> Architecture:
    """The target's architecture ``arch`` with a draft's ``layers`` after its own, each as one of the target's
    full-attention layers (its last layer kind where it has none), for a KV pool that holds the draft's entries
    beside the target's (an EAGLE-3 head's, a draft model's). Cached, so one model and draft give one object."""
    kind = LayerKind.FULL if LayerKind.FULL in arch.layer_kinds else arch.layer_kinds[-1]
    return dataclasses.replace(arch, layer_kinds=arch.layer_kinds + (kind,) * layers)


def eagle3_notes(plan: Eagle3Memory | None, tensor_parallel_size: int) -> list[str]:
    if plan is None:
        return []
    if plan.draft is None:
        return [f"EAGLE-3 draft {plan.repo} is not in the catalogue (eagle3_drafts.yaml): its weights and KV are "
                "not counted"]
    draft, rule = plan.draft, plan.rule
    if rule is None:
        return [f"EAGLE-3 draft {draft.repo}: the engine has no rule for where a draft head's memory goes; not counted"]
    weights = (f"its weights ({fmt_billions(draft.parameters.value)} parameters at {draft.dtype}, {fmt_gib(draft.weight_bytes)}, "
               f"{fmt_gib(draft.weight_bytes / tensor_parallel_size)} per tensor-parallel rank) are loaded before the KV cache is sized"
               if rule.weights_in_pool else f"its weights ({fmt_gib(draft.weight_bytes)}) load after the KV cache is sized, outside the fraction")
    kv = (f"its {draft.decoder_layers} layer(s) hold KV entries in the pool as one of the target's full-attention "
          "layers (assumed: an EAGLE-3 head copies the target's attention shape)" if rule.kv_layers_in_pool
          else "its KV is a draft pool of its own, outside the fraction")
    if draft.embedding_parameters is not None:
        weights += (f", its own token embeddings ({fmt_billions(draft.embedding_parameters.value)} parameters) "
                    "included: an upper bound where the engine shares the target's table instead (not confirmed)")
    rate = acceptance_rate(draft)
    accepted = (f"; its stated acceptance length {draft.acceptance.length.value:g} at {draft.acceptance.draft_tokens} "
                f"draft tokens is {rate:.3f} per draft token (one rate at every position assumed)") if rate is not None else ""
    return [f"EAGLE-3 speculative decoding on {rule.engine} with {draft.repo}: {weights}; {kv}{accepted}"]


def acceptance_rate(draft: Eagle3Draft | None) -> float | None:
    """The per-draft-token acceptance rate that gives the draft's stated acceptance length at the draft
    tokens it was measured at (``rate_for_length``); None: the draft states none."""
    if draft is None or draft.acceptance is None:
        return None
    return rate_for_length(draft.acceptance.length.value, draft.acceptance.draft_tokens)


def rate_for_length(length: float, draft_tokens: float) -> float:
    """The per-draft-token acceptance rate ``a`` that gives an acceptance length (tokens a verify step keeps,
    the bonus token counted) at ``draft_tokens`` drafted per step: length = (1 - a^(k+1)) / (1 - a), one rate at
    every position; a length of k + 1 or more is every draft accepted."""
    target, k = length, draft_tokens
    if target >= k + 1:
        return 1.0
    low, high = 0.0, 1.0
    for _ in range(60):  # the length rises with the rate: bisect
        mid = (low + high) / 2
        if (1 - mid ** (k + 1)) / (1 - mid) < target:
            low = mid
        else:
            high = mid
    return (low + high) / 2
