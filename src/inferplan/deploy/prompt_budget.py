"""Chunked prefill where an engine would refuse the plan's longest prompt without it.

TensorRT-LLM's PyTorch backend refuses a prompt longer than its per-step token budget
(``max_num_tokens``, 8192 unless given) while chunked prefill is off, its default
(``EngineFlags.prompt_budget``). A plan that admits longer prompts is launched with the options-file
entry that turns chunked prefill on, as the speed model prefills prompts in chunks of that budget.
Where the engine's feature matrix says chunked prefill does not run with the model
(``PromptBudget.unsupported_with``: sliding-window layers), the longest prompt must fit the budget the
launch states (``max_num_batched_tokens``, which fit and perf plan the step's activations with), else
the plan is refused; where it was not tested (``untested_with``: MTP) the command says so.
"""

from __future__ import annotations

from inferplan.catalog.architecture import LayerKind
from inferplan.catalog.flags_schema import ChunkingFeature, EngineFlags
from inferplan.catalog.loader import Catalog
from inferplan.errors import InferplanError, UnsupportedSettingError
from inferplan.inputs.deployment import Deployment
from inferplan.memory.resolve import resolve_model

_FEATURE_NAMES = {"sliding_window": "sliding-window attention", "mtp": "MTP drafts"}


def longest_prompt(d: Deployment, catalog: Catalog) -> int | None:
    """The longest prompt ``d`` admits: its max_model_len, else the model's context (None: neither is known)."""
    if d.max_model_len:
        return d.max_model_len
    try:
        return resolve_model(catalog, d.model).context_tokens
    except InferplanError:  # a model the catalogue cannot resolve: its context is the engine's to read
        return None


def _features(d: Deployment, catalog: Catalog, speculative_method: str | None) -> set[ChunkingFeature]:
    """What of ``d`` the engine's feature matrix may rule on: sliding-window layers, MTP drafts."""
    found: set[ChunkingFeature] = {"mtp"} if speculative_method == "mtp" else set()
    try:
        arch = resolve_model(catalog, d.model).architecture
    except InferplanError:  # a model the catalogue cannot resolve: its layers are not known here
        arch = None
    if arch is not None and LayerKind.SLIDING in arch.layer_kinds:
        found.add("sliding_window")
    return found


def chunked_prefill(d: Deployment, catalog: Catalog, flags: EngineFlags,
                    speculative_method: str | None = None) -> tuple[dict, tuple[str, ...]]:
    """The options-file entries that let ``d``'s longest prompt run (empty: none are needed) and the notes
    they carry. A prompt longer than the launch's budget (``max_num_batched_tokens``, else the engine's
    default), or an unknown longest prompt, gets chunked prefill; a model the engine does not chunk is refused."""
    rule = flags.prompt_budget
    if rule is None:
        return {}, ()
    longest = longest_prompt(d, catalog)
    budget = d.max_num_batched_tokens or rule.default_tokens
    if longest is not None and longest <= budget:
        return {}, ()
    features = _features(d, catalog, speculative_method)
    if refused := [f for f in rule.unsupported_with if f in features]:
        said = f"{longest:,}-token prompts" if longest is not None else "prompts as long as the model's context"
        raise UnsupportedSettingError(
            f"{flags.engine} runs {said} of {d.model} only with chunked prefill, which its feature matrix says does "
            f"not run with {', '.join(_FEATURE_NAMES[f] for f in refused)} ({rule.combination_source}); a prompt "
            f"longer than max_num_batched_tokens {budget:,} is refused", field="max_model_len",
            allowed=f"at most {budget:,} tokens, or state max_num_batched_tokens ≥ the context "
                    f"({longest:,})" if longest is not None else f"at most {budget:,} tokens")
    *parents, last = rule.option.key.split(".")
    entry: dict = {last: rule.option.value}
    for part in reversed(parents):
        entry = {part: entry}
    untested = [f for f in rule.untested_with if f in features]
    notes = (f"{rule.option.key}: {flags.engine}'s feature matrix marks chunked prefill with "
             f"{', '.join(_FEATURE_NAMES[f] for f in untested)} untested ({rule.combination_source})",) if untested else ()
    return entry, notes


def chunked_prefill_options(d: Deployment, catalog: Catalog, flags: EngineFlags,
                            speculative_method: str | None = None) -> dict:
    """The options-file entries of ``chunked_prefill``."""
    return chunked_prefill(d, catalog, flags, speculative_method)[0]
