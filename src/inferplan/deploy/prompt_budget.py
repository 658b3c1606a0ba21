"""Chunked prefill where an engine would refuse the plan's longest prompt without it.

TensorRT-LLM's PyTorch backend refuses a prompt longer than its per-step token budget
(``max_num_tokens``, 8192 unless given) while chunked prefill is off, its default
(``EngineFlags.prompt_budget``). A plan that admits longer prompts is launched with the options-file
entry that turns chunked prefill on, as the speed model prefills prompts in chunks of that budget.
Where the engine's feature matrix says chunked prefill does not run with the model
(``PromptBudget.unsupported_with``: sliding-window layers), the longest prompt must fit the budget the
launch states (``max_num_batched_tokens``: as stated, else planned at the longest prompt by
``memory.step_budget``, which fit and perf plan the step's activations and prefill with), so only a stated
budget shorter than the longest prompt is refused; where chunked prefill was not tested (``untested_with``:
MTP) the command says so.
"""

from __future__ import annotations

from inferplan.catalog.flags_schema import EngineFlags
from inferplan.catalog.loader import Catalog
from inferplan.errors import UnsupportedSettingError
from inferplan.inputs.deployment import Deployment
from inferplan.memory.step_budget import (FEATURE_NAMES, chunking_features, longest_prompt, model_row_chunks, model_spec,
                                          unchunked)


def chunked_prefill(d: Deployment, catalog: Catalog, flags: EngineFlags,
                    speculative_method: str | None = None) -> tuple[dict, tuple[str, ...]]:
    """The options-file entries that let ``d``'s longest prompt run (empty: none are needed) and the notes
    they carry. A prompt longer than the launch's budget (``max_num_batched_tokens``, else the engine's
    default), or an unknown longest prompt, gets chunked prefill; a model the engine does not chunk is refused."""
    rule = flags.prompt_budget
    if rule is None:
        return {}, ()
    spec = model_spec(d, catalog)
    longest = longest_prompt(d, spec)
    budget = d.max_num_batched_tokens or rule.default_tokens
    if longest is not None and longest <= budget:
        return {}, ()
    features = chunking_features(spec, speculative_method == "mtp")
    if refused := unchunked(flags, features, spec):
        said = f"{longest:,}-token prompts" if longest is not None else "prompts as long as the model's context"
        raise UnsupportedSettingError(
            f"{flags.engine} runs {said} of {d.model} only with chunked prefill, which its feature matrix says does "
            f"not run with {', '.join(FEATURE_NAMES[f] for f in refused)} ({rule.combination_source}); a prompt "
            f"longer than max_num_batched_tokens {budget:,} is refused", field="max_model_len",
            allowed=f"at most {budget:,} tokens, or state max_num_batched_tokens ≥ the context "
                    f"({longest:,})" if longest is not None else f"at most {budget:,} tokens")
    *parents, last = rule.option.key.split(".")
    entry: dict = {last: rule.option.value}
    for part in reversed(parents):
        entry = {part: entry}
    untested = [f for f in rule.untested_with if f in features] if not model_row_chunks(rule, spec) else []
    notes = (f"{rule.option.key}: {flags.engine}'s feature matrix marks chunked prefill with "
             f"{', '.join(FEATURE_NAMES[f] for f in untested)} untested ({rule.combination_source})",) if untested else ()
    return entry, notes


def chunked_prefill_options(d: Deployment, catalog: Catalog, flags: EngineFlags,
                            speculative_method: str | None = None) -> dict:
    """The options-file entries of ``chunked_prefill``."""
    return chunked_prefill(d, catalog, flags, speculative_method)[0]
