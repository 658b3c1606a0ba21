"""The per-step token budget a deployment is planned with where its engine cannot split its longest prompt.

TensorRT-LLM's PyTorch backend refuses a prompt longer than its per-step token budget (``max_num_tokens``,
8192 unless given) while chunked prefill is off (``EngineFlags.prompt_budget``). Where its feature matrix
says chunked prefill does not run with the model (``PromptBudget.unsupported_with``: sliding-window layers),
a deployment that states no budget is planned with one step as long as its longest prompt (its
max_model_len, else the model's context), as trtllm-bench raises ``max_num_tokens`` to the longest prompt
when chunking is off: fit charges that step's activations, perf prefills the prompt in that one step, and
the launch states it with the engine's own flag (``settings.max_num_batched_tokens`` of its flag record).
A stated budget shorter than that prompt is refused, naming ``max_model_len``, by one check
(``needs_chunking``) that fit's answer, perf and the launch command all make.
"""

from __future__ import annotations

from inferplan.catalog.architecture import LayerKind
from inferplan.catalog.flag_parts_schema import ChunkingFeature, PromptBudget
from inferplan.catalog.flags_schema import EngineFlags, flags_for
from inferplan.catalog.loader import Catalog
from inferplan.catalog.models import ModelSpec
from inferplan.errors import InferplanError, UnsupportedSettingError
from inferplan.inputs.deployment import Deployment
from inferplan.memory.hardware import with_default_engine
from inferplan.memory.resolve import resolve_model

FEATURE_NAMES = {"sliding_window": "sliding-window attention", "mtp": "MTP drafts"}


def model_spec(d: Deployment, catalog: Catalog) -> ModelSpec | None:
    """``d``'s model as the catalogue resolves it (None: it cannot)."""
    try:
        return resolve_model(catalog, d.model)
    except InferplanError:  # a model the catalogue cannot resolve: its context and layers are the engine's to read
        return None


def longest_prompt(d: Deployment, spec: ModelSpec | None) -> int | None:
    """The longest prompt ``d`` admits: its max_model_len, else the model's context (None: neither is known)."""
    return d.max_model_len or (spec.context_tokens if spec is not None else None)


def chunking_features(spec: ModelSpec | None, mtp: bool) -> set[ChunkingFeature]:
    """What of a deployment an engine's feature matrix may rule on: the model's sliding-window layers, MTP drafts."""
    found: set[ChunkingFeature] = {"mtp"} if mtp else set()
    arch = spec.architecture if spec is not None else None
    if arch is not None and LayerKind.SLIDING in arch.layer_kinds:
        found.add("sliding_window")
    return found


def unchunked(flags: EngineFlags | None, features: set[ChunkingFeature], spec: ModelSpec | None = None) -> list[ChunkingFeature]:
    """The features of ``features`` the engine's feature matrix says chunked prefill does not run with (none
    for a model whose own row of the matrix says it chunks: ``PromptBudget.chunked_architectures``)."""
    rule = flags.prompt_budget if flags is not None else None
    if rule is None or model_row_chunks(rule, spec):
        return []
    return [f for f in rule.unsupported_with if f in features]


def model_row_chunks(rule: PromptBudget, spec: ModelSpec | None) -> bool:
    """Whether the engine's model-feature matrix has a row for ``spec``'s architecture saying chunked prefill
    runs with it (``PromptBudget.chunked_architectures``): the generic combinations do not rule on it then."""
    arch = spec.architecture if spec is not None and not spec.architecture_is_proxy else None
    return arch is not None and arch.hf_architecture in rule.chunked_architectures


def planned_step_budget(d: Deployment, spec: ModelSpec | None, flags: EngineFlags | None) -> tuple[int | None, str | None]:
    """The step budget ``d`` is planned with where it states none, its engine refuses a prompt longer than its
    default step without chunked prefill, and chunked prefill does not run with the model: its longest prompt,
    with the note that says why (None, None: the engine's default budget, or the stated one, applies)."""
    rule = flags.prompt_budget if flags is not None else None
    longest = longest_prompt(d, spec)
    if rule is None or d.max_num_batched_tokens is not None or longest is None or longest <= rule.default_tokens:
        return None, None
    refused = unchunked(flags, chunking_features(spec, d.mtp_draft), spec)
    if not refused:
        return None, None
    flag = flags.settings.get("max_num_batched_tokens")
    named = f" ({flag.flags[0]})" if flag is not None else ""
    return longest, (
        f"max_num_batched_tokens{named} {longest:,}, the longest prompt: {flags.engine} runs a prompt longer than its "
        f"{rule.default_tokens:,}-token step only with chunked prefill, which its feature matrix says does not run with "
        f"{', '.join(FEATURE_NAMES[f] for f in refused)} ({rule.combination_source}); the step is planned at the longest "
        "prompt, its activations counted and the prompt prefilled in one step, and the launch states it")


def with_step_budget(d: Deployment, catalog: Catalog, spec: ModelSpec | None = None) -> tuple[Deployment, str | None]:
    """``d`` with ``planned_step_budget`` written in as its max_num_batched_tokens, and the note that says so."""
    flags = flags_for(catalog, catalog.engine(d.engine, field_name="engine").id)
    budget, note = planned_step_budget(d, spec if spec is not None else model_spec(d, catalog), flags)
    return (d, None) if budget is None else (d.model_copy(update={"max_num_batched_tokens": budget}), note)


def check_step_budget(d: Deployment, catalog: Catalog) -> None:
    """Refuses ``d`` where its step budget, as planned (``with_step_budget``), is shorter than
    a longest prompt the engine cannot chunk (``needs_chunking``): the check fit's and perf's answers make before
    they plan, as the launch command does. A plan of memory alone (a logged start-up replayed) does not make it:
    the engine starts such a launch and refuses the longer prompts when they come."""
    d, _ = with_step_budget(with_default_engine(d, catalog), catalog)
    spec = model_spec(d, catalog)
    needs_chunking(d, spec, flags_for(catalog, catalog.engine(d.engine, field_name="engine").id), d.mtp_draft)


def needs_chunking(d: Deployment, spec: ModelSpec | None, flags: EngineFlags | None, mtp: bool) -> bool:
    """Whether ``d``'s longest prompt (unknown: as long as the model's context) is longer than its step budget
    (stated, else the engine's default) on an engine that refuses such a prompt without chunked prefill.
    Where its feature matrix says chunked prefill does not run with the model (``mtp``: drafting with its
    MTP layers), ``d`` is refused, naming ``max_model_len``: fit, perf and deploy refuse it alike."""
    rule = flags.prompt_budget if flags is not None else None
    if rule is None:
        return False
    longest = longest_prompt(d, spec)
    budget = d.max_num_batched_tokens or rule.default_tokens
    if longest is not None and longest <= budget:
        return False
    if refused := unchunked(flags, chunking_features(spec, mtp), spec):
        said = f"{longest:,}-token prompts" if longest is not None else "prompts as long as the model's context"
        raise UnsupportedSettingError(
            f"{flags.engine} runs {said} of {d.model} only with chunked prefill, which its feature matrix says does "
            f"not run with {', '.join(FEATURE_NAMES[f] for f in refused)} ({rule.combination_source}); a prompt "
            f"longer than max_num_batched_tokens {budget:,} is refused", field="max_model_len",
            allowed=f"at most {budget:,} tokens, or state max_num_batched_tokens ≥ the context "
                    f"({longest:,})" if longest is not None else f"at most {budget:,} tokens")
    return True
