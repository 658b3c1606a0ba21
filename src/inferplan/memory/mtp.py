"""Speculative decoding with a model's own multi-token-prediction (MTP) layers: which of them the
engine holds where (``catalog/data/engine_mtp_rules.yaml``). vLLM V1 and TensorRT-LLM load the MTP
layers before sizing the KV cache (the pool loses their weights) and give their attention entries in
the target's pool, on the last pipeline stage, as SGLang does from 0.5.14 where it knows their count (for
some architectures, or from a config key: ``rule_for_architecture``; for other models its draft worker
allocates a pool of its own after the target's, outside the fraction); through 0.5.13 SGLang's draft
worker loads them and a draft pool of its own after the target's pool is sized, and its default fraction
keeps room outside for them; the plan checks what is outside fits there (``check_mtp_headroom``). The
rule is the engine release's (``mtp_rule``) as it holds for the model."""

from __future__ import annotations

import dataclasses
import functools

from inferplan.catalog.architecture import Architecture, LayerKind
from inferplan.catalog.flags_schema import flags_for
from inferplan.catalog.memory_rules import memory_rule
from inferplan.catalog.models import ModelSpec
from inferplan.catalog.mtp_rules import MtpRule, drafts_at_pipeline, mtp_rule, rule_for_architecture
from inferplan.catalog.quantization_schema import Quantization
from inferplan.errors import InferplanError, InvalidScenarioError
from inferplan.inputs.deployment import SPECULATIVE_METHODS, Deployment
from inferplan.memory.draft_headroom import check_outside_fraction
from inferplan.memory.hardware import runs_named_build
from inferplan.memory.kv_cache import kv_layout
from inferplan.memory.resolve import resolve_model
from inferplan.memory.weights import weight_bytes

FIELD = "mtp_draft"
OTHER_METHOD = "ngram"  # the method of speculative decoding that names none, where no MTP draft is planned


def _has_mtp_layers(spec: ModelSpec) -> bool:
    arch = spec.architecture
    return arch is not None and not spec.architecture_is_proxy and bool(arch.mtp_layers)


def mtp_models(catalog) -> str:
    """The catalogue's models that ship MTP layers, for a refusal's ``allowed``."""
    return ", ".join(m.id for m in catalog.models if _has_mtp_layers(resolve_model(catalog, m.id)))


def _no_layers(catalog, spec: ModelSpec) -> InvalidScenarioError | None:
    """Why ``spec`` cannot draft with MTP layers (an error naming ``mtp_draft``), None when it ships some."""
    if _has_mtp_layers(spec):
        return None
    return InvalidScenarioError(
        f"{spec.name} ships no multi-token-prediction layers to draft with (config.json "
        "num_nextn_predict_layers is 0 or not known)", field=FIELD,
        allowed=f"no MTP draft, or a catalogue model with MTP layers: {mtp_models(catalog)}")


def check_mtp_layers(catalog, spec: ModelSpec) -> None:
    """Refuse an MTP draft of a model that ships no MTP layers (an error naming ``mtp_draft``): the one
    refusal fit, perf and a launch command with the mtp method give."""
    refused = _no_layers(catalog, spec)
    if refused is not None:
        raise refused


def _refusal(catalog, d: Deployment, spec: ModelSpec, engine: str) -> tuple[MtpRule | None, InvalidScenarioError | None]:
    """The engine's rule for drafting with ``spec``'s MTP layers, as it holds for its architecture, or why
    no such draft is planned (an
    error naming ``mtp_draft``): the model ships none, the engine does not draft with them, or the
    release line's memory rule does not count the draft."""
    no_layers = _no_layers(catalog, spec)
    if no_layers is not None:
        return None, no_layers
    rule = mtp_rule(catalog, engine, d.engine_version)
    if rule is None:
        engines = ", ".join(sorted(r.engine for r in catalog.mtp_rules))
        return None, InvalidScenarioError(f"{engine} does not draft with a model's MTP layers", field=FIELD,
                                          allowed=f"no MTP draft, or an engine that drafts with them: {engines}")
    release = memory_rule(catalog, engine, d.engine_version)
    if release.variant in rule.unplanned_variants:
        return None, InvalidScenarioError(f"an MTP draft on {release.label}: {rule.unplanned_note}", field=FIELD,
                                          allowed="no MTP draft, or a release of another line")
    return rule_for_architecture(rule, spec.architecture), None


def draft_rule(catalog, d: Deployment, spec: ModelSpec, engine: str, pipeline_parallel_size: int) -> MtpRule | None:
    """The engine's rule for an MTP draft the deployment runs (None: it runs none). A model without MTP
    layers, or an engine that does not draft with them, is an error naming ``mtp_draft``; a pipeline the
    engine does not draft under, an error naming ``pipeline_parallel_size``."""
    if not d.mtp_draft:
        return None
    rule, refused = _refusal(catalog, d, spec, engine)
    if refused is not None:
        raise refused
    if not drafts_at_pipeline(catalog, engine, pipeline_parallel_size):
        bound = rule.max_pipeline_parallel_size
        raise InvalidScenarioError(
            f"{engine} does not start an MTP draft at pipeline_parallel_size {pipeline_parallel_size}: "
            f"{rule.pipeline_parallel_note}", field="pipeline_parallel_size",
            allowed=f"at most {bound} with an MTP draft on {engine} (tensor parallelism over more GPUs), "
                    "or no MTP draft")
    return rule


def mtp_kinds(arch: Architecture) -> tuple[LayerKind, ...]:
    """The attention of each MTP layer: as the config states it (DeepSeek-V4's compress ratios,
    Nemotron-H's MTP block pattern), else the last decoder layer's (a DeepSeek MTP module repeats it)."""
    return arch.mtp_layer_kinds or (arch.layer_kinds[-1],) * arch.mtp_layers


def kv_architecture(arch: Architecture | None, rule: MtpRule | None) -> Architecture | None:
    """The layers whose KV the target's pool holds: the MTP layers after the decoder layers (on the last
    pipeline stage) where the engine gives them entries there."""
    if arch is None or rule is None or not rule.kv_layers_in_pool:
        return arch
    return _with_mtp_layers(arch)


@functools.lru_cache(maxsize=256)  # one object per model: the layout caches below find it by identity
def _with_mtp_layers(arch: Architecture) -> Architecture:
    return dataclasses.replace(arch, layer_kinds=arch.layer_kinds + mtp_kinds(arch))


def with_default_draft_tokens(d: Deployment, rule: MtpRule | None, arch: Architecture | None) -> tuple[Deployment, list[str]]:
    """``d`` drafting with its MTP layers as the engine launches it when no draft tokens are stated: the
    rule's default (``mtp_layers``: vLLM's num_speculative_tokens defaults to the MTP layer count its config
    states), which sets the decode query the engine captures CUDA graphs for; unchanged where tokens are
    stated, no MTP draft runs, or the engine's default is not known. With the note saying so. Where the
    config states no count (``Architecture.mtp_layers_key``) the engine has no default and refuses to start:
    an error naming ``speculative_tokens``."""
    if rule is None or d.speculative_tokens or rule.default_draft_tokens != "mtp_layers" or arch is None \
            or not arch.mtp_layers:
        return d, []
    if arch.mtp_layers_key is None:
        raise InvalidScenarioError(
            f"an MTP draft on {rule.engine} with no speculative_tokens stated takes the MTP layer count the config "
            f"states as its draft tokens per step, and {arch.hf_architecture}'s config states none, so the engine "
            "refuses to start", field="speculative_tokens", allowed="speculative_tokens of at least 1 with the MTP draft")
    note = (f"MTP draft on {rule.engine} with no speculative_tokens stated: {arch.mtp_layers} draft token(s) per step, "
            f"the engine's default ({arch.mtp_layers_key}), so a decode query is "
            f"{1 + arch.mtp_layers} tokens")
    return d.model_copy(update={"speculative_tokens": arch.mtp_layers}), [note]


def check_mtp_headroom(rule: MtpRule | None, spec: ModelSpec, quant: Quantization, kv_bits: float,
                       tensor_parallel_size: int, total_bytes: float, memory_fraction: float,
                       pool_tokens: int) -> None:
    """Where the engine's draft worker loads the MTP layers or a draft pool of its own after its fraction is
    sized (SGLang through 0.5.13; from 0.5.14 the pool of a model whose MTP layer count it does not know),
    what it holds there must fit in what the fraction leaves beyond the draft reserve: the MTP layers'
    weights (the embeddings and lm_head are the target's) per tensor-parallel rank, and a pool of the
    target's ``pool_tokens`` over the MTP layers (their KV per token per GPU as the config states their attention;
    SGLang's draft pool reuses the target's token count, so a hybrid model's state slots do not scale it). More is
    an error naming ``mtp_draft`` (``memory.draft_headroom``, the check an EAGLE-3 draft gets)."""
    arch = spec.architecture
    if rule is None or arch is None or not arch.mtp_layers or (rule.weights_in_pool and rule.kv_layers_in_pool):
        return
    weights = weight_bytes(spec, quant, mtp_loaded=True).mtp_bytes / tensor_parallel_size
    target = kv_layout(arch, kv_bits=kv_bits, tp=tensor_parallel_size).bytes_per_token_per_gpu
    drafted = kv_layout(_with_mtp_layers(arch), kv_bits=kv_bits, tp=tensor_parallel_size).bytes_per_token_per_gpu
    pool = pool_tokens * (drafted - target)
    check_outside_fraction(rule, f"the MTP draft ({arch.mtp_layers} layer(s) of {spec.name})",
                           weight_bytes_per_gpu=weights, pool_bytes_per_gpu=pool, total_bytes=total_bytes,
                           memory_fraction=memory_fraction, field=FIELD,
                           allowed="a smaller memory fraction, more tensor parallelism, or no MTP draft")


def draft_notes(rule: MtpRule | None, arch: Architecture | None) -> list[str]:
    if rule is None or arch is None:
        return []
    kinds = ", ".join(k.value for k in mtp_kinds(arch))
    where = (f"{arch.mtp_layers} MTP layer(s) ({kinds}) hold KV-cache entries in the pool on the last stage"
             if rule.kv_layers_in_pool else "the MTP layers' KV is a draft pool of its own, outside the fraction")
    return [f"MTP speculative decoding on {rule.engine}: {where}; {rule.note}"]


def with_mtp_draft(catalog, d: Deployment, speculative_tokens: int) -> Deployment:
    """The deployment as it runs ``speculative_tokens`` draft tokens per step: drafting with the model's
    own MTP layers where it has them, the engine drafts with them and ``d`` names no other method (its memory
    then counts them); unchanged otherwise (another draft or method, such as ngram, or none)."""
    if not speculative_tokens:
        return d
    d = d.model_copy(update={"speculative_tokens": speculative_tokens})  # verified per decode step, whatever drafts them
    if d.mtp_draft or d.eagle3_draft or d.draft_checkpoint or d.speculative_method not in (None, "mtp"):
        return d
    spec = resolve_model(catalog, d.model)
    if not _has_mtp_layers(spec):  # before _refusal, which lists the catalogue's MTP models
        return d
    _, refused = _refusal(catalog, d, spec, catalog.engine(d.engine).id)
    return d if refused is not None else d.model_copy(update={"mtp_draft": True})


def check_launch_drafts(catalog, d: Deployment) -> None:
    """Refuse drafts the launch of ``d`` (after ``with_default_engine``) does not run, naming ``speculative_tokens``:
    an Ollama tag's build, whose runner takes no speculative-decoding setting (``perf`` and ``deploy`` both refuse)."""
    named = runs_named_build(catalog, d)
    if named is not None and d.speculative_tokens:
        raise InvalidScenarioError(
            f"{named.tag} runs under Ollama, whose runner takes no speculative-decoding setting: its launch runs no "
            "draft, so none is planned", field="speculative_tokens",
            allowed=f"0 on an Ollama tag, or the model by its catalogue id ({named.model}) on an engine with a "
                    "speculative_method its launch runs")


def unnamed_method(catalog, d: Deployment) -> str:
    """The method that drafts ``d``'s tokens where none is named and no MTP draft is planned, as ``deploy`` launches
    it: ``OTHER_METHOD``, which needs no draft checkpoint, where the engine's launch flags list it
    (``engine_flags.yaml`` speculative methods; an engine with no flag record is left to it); refused naming
    ``speculative_method`` and the engine's methods where they do not, as ``deploy`` refuses it."""
    engine = catalog.engine(d.engine).id
    flags = flags_for(catalog, engine)
    if flags is None:
        return OTHER_METHOD
    methods = sorted(flags.speculative.methods) if flags.speculative else []
    if OTHER_METHOD in methods:
        return OTHER_METHOD
    spec = resolve_model(catalog, d.model)
    if not _has_mtp_layers(spec):  # mtp drafts with the model's own MTP layers
        methods = [m for m in methods if m != "mtp"]
    drafted = [m for m in methods if m in flags.speculative.draft_required] if flags.speculative else []
    needs = f" ({', '.join(drafted)} with a draft checkpoint)" if drafted else ""
    if not methods:
        raise InvalidScenarioError(f"{engine}'s launch has no speculative method {spec.name} drafts by",
                                   field="speculative_method", allowed="no speculative_tokens, or another engine")
    raise InvalidScenarioError(
        f"{engine}'s launch has no speculative method {OTHER_METHOD}, which drafts where no method is named and no MTP "
        f"draft is planned, so {spec.name}'s drafts need their method named{needs}", field="speculative_method",
        allowed=f"a method {engine} launches: {', '.join(methods)}")


def with_unnamed_drafts(catalog, d: Deployment, speculative_tokens: int) -> Deployment:
    """``d`` as it runs ``speculative_tokens`` draft tokens per step, as ``deploy`` launches them: a launch that runs
    no draft is refused (``check_launch_drafts``), as is a named method the engine does not launch
    (``check_engine_method``); where ``d`` names no method, no draft checkpoint and no MTP draft, the model's MTP
    layers where they are planned (``with_mtp_draft``), else ``unnamed_method``."""
    d = with_mtp_draft(catalog, d, speculative_tokens)
    if not speculative_tokens:
        return d
    check_launch_drafts(catalog, d)
    if d.speculative_method is not None:
        check_engine_method(catalog, d)
    if d.mtp_draft or d.eagle3_draft or d.draft_checkpoint or d.speculative_method is not None:
        return d
    return d.model_copy(update={"speculative_method": unnamed_method(catalog, d)})


def check_engine_method(catalog, d: Deployment) -> None:
    """Refuse the ``speculative_method`` ``d`` names where the engine's launch flags list no such method
    (``engine_flags.yaml`` speculative methods; an engine with no flag record is left to it), as ``deploy`` refuses it."""
    engine = catalog.engine(d.engine).id
    flags = flags_for(catalog, engine)
    methods = sorted(flags.speculative.methods) if flags and flags.speculative else []
    if flags is not None and d.speculative_method not in methods:
        raise InvalidScenarioError(f"{engine}'s launch has no speculative method {d.speculative_method}",
                                   field="speculative_method",
                                   allowed=", ".join(methods) or "no speculative_tokens, or another engine")


def with_speculative(catalog, d: Deployment, speculative_tokens: int, speculative_method: str | None,
                     draft_model: str | None = None) -> Deployment:
    """The deployment as it runs ``speculative_tokens`` draft tokens per step made by ``speculative_method``,
    as ``deploy`` launches it: ``mtp`` drafts with the model's MTP layers (``mtp_draft``: the memory counts
    them), refused naming ``speculative_method`` where the model or engine has none; ``eagle3`` with
    ``draft_model`` (left out: the model's one catalogued draft) as ``eagle3_draft`` (``memory.eagle3``: the
    memory counts a catalogued draft); ``draft_model`` with the smaller model ``draft_model`` names as
    ``draft_checkpoint`` (``memory.draft_model``: refused without one); left out, the draft ``perf`` plans
    (``with_unnamed_drafts``: the MTP layers, else the engine's method without a draft checkpoint, ngram, or a
    refusal); ngram holds nothing more in the memory planned here. A launch that runs no draft (an Ollama tag) is
    refused (``check_launch_drafts``). The method is the
    deployment's ``speculative_method`` from then on (the speed model adds no MTP draft to another method);
    left out, the one ``d`` states."""
    if speculative_method is None:
        speculative_method = d.speculative_method
    elif d.speculative_method not in (None, speculative_method):
        raise InvalidScenarioError(f"the deployment drafts by {d.speculative_method}, not {speculative_method}",
                                   field="speculative_method", allowed=f"{d.speculative_method}, or leave one out")
    if speculative_method is not None and speculative_method not in SPECULATIVE_METHODS:
        raise InvalidScenarioError(f"{speculative_method!r} is not a speculative method", field="speculative_method",
                                   allowed=", ".join(SPECULATIVE_METHODS), names=())  # draft_model: a method
    if draft_model is not None and speculative_method not in ("eagle3", "draft_model"):
        raise InvalidScenarioError("a draft checkpoint drafts by the eagle3 or draft_model method", field="draft_model",
                                   allowed="with speculative_method eagle3 (or draft_model), or leave it out",
                                   names=("speculative_method",))
    speculative_tokens = speculative_tokens or d.speculative_tokens
    if speculative_tokens:  # whatever drafts them, the engine verifies them in every decode step
        d = d.model_copy(update={"speculative_tokens": speculative_tokens})
    if not speculative_tokens:
        if speculative_method is not None:
            raise InvalidScenarioError("a speculative method drafts speculative_tokens per step: state them",
                                       field="speculative_method", allowed="with speculative_tokens of 1 or more")
        return d
    if speculative_method is None:  # the draft deploy launches: the MTP layers where planned, else unnamed_method
        return with_unnamed_drafts(catalog, d, speculative_tokens)
    check_launch_drafts(catalog, d)
    d = d.model_copy(update={"speculative_method": speculative_method})
    if speculative_method == "eagle3":
        return _with_eagle3(catalog, d, draft_model)
    if speculative_method == "draft_model":
        from inferplan.memory.draft_model import with_draft_model

        return with_draft_model(catalog, d, draft_model)
    if speculative_method != "mtp":
        if d.mtp_draft:
            raise InvalidScenarioError(f"mtp_draft drafts with the MTP layers, not by {speculative_method}",
                                       field="speculative_method", allowed="mtp, or leave mtp_draft out",
                                       names=("mtp_draft",))
        return d
    _, refused = _refusal(catalog, d, resolve_model(catalog, d.model), catalog.engine(d.engine).id)
    if refused is not None:
        refused.field = "speculative_method"
        raise refused
    return d.model_copy(update={"mtp_draft": True})


def _with_eagle3(catalog, d: Deployment, draft_model: str | None) -> Deployment:
    """``d`` drafting with an EAGLE-3 head: ``draft_model`` (a catalogued draft of the model, named by its id or
    repo, as its repo), else the model's one catalogued draft; a model with none and no ``draft_model`` is refused
    naming ``draft_model``, as is an MTP draft beside it (naming ``speculative_method``)."""
    from inferplan.memory.eagle3 import missing_draft, planned_draft

    if d.mtp_draft:
        raise InvalidScenarioError("mtp_draft drafts with the MTP layers, not by eagle3", field="speculative_method",
                                   allowed="mtp, or leave mtp_draft out")
    try:
        spec = resolve_model(catalog, d.model)
    except InferplanError:
        if draft_model is None:
            raise
        return d.model_copy(update={"eagle3_draft": draft_model})  # no catalogued draft: launched as named
    draft = planned_draft(catalog, spec, draft_model)
    if draft is None and draft_model is None:
        raise missing_draft(catalog, spec)
    return d.model_copy(update={"eagle3_draft": draft.repo if draft else draft_model})
