"""Chunked prefill where an engine would refuse the plan's longest prompt without it.

TensorRT-LLM's PyTorch backend refuses a prompt longer than its per-step token budget
(``max_num_tokens``, 8192 unless given) while chunked prefill is off, its default
(``EngineFlags.prompt_budget``). A plan that admits longer prompts is launched with the options-file
entry that turns chunked prefill on, as the speed model prefills prompts in chunks of that budget.
Where the engine's feature matrix says chunked prefill does not run with the model
(``PromptBudget.unsupported_with``: sliding-window layers), the longest prompt must fit the budget the
launch states (``max_num_batched_tokens``: as stated, else planned at the longest prompt by
``memory.step_budget``, which fit and perf plan the step's activations and prefill with), so only a stated
budget shorter than the longest prompt is refused, by the check fit and perf make (``needs_chunking``); where chunked prefill was not tested (``untested_with``:
MTP) the command says so.
"""

from __future__ import annotations

from inferplan.catalog.flags_schema import EngineFlags
from inferplan.catalog.loader import Catalog
from inferplan.inputs.deployment import Deployment
from inferplan.memory.step_budget import FEATURE_NAMES, chunking_features, model_row_chunks, model_spec, needs_chunking


def chunked_prefill(d: Deployment, catalog: Catalog, flags: EngineFlags,
                    speculative_method: str | None = None) -> tuple[dict, tuple[str, ...]]:
    """The options-file entries that let ``d``'s longest prompt run (empty: none are needed) and the notes
    they carry. A prompt longer than the launch's budget (``max_num_batched_tokens``, else the engine's
    default), or an unknown longest prompt, gets chunked prefill; a model the engine does not chunk is refused."""
    spec, mtp = model_spec(d, catalog), speculative_method == "mtp"
    if not needs_chunking(d, spec, flags, mtp):  # the same refusal as fit's (memory.step_budget)
        return {}, ()
    rule, features = flags.prompt_budget, chunking_features(spec, mtp)
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
