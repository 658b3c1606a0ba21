"""Chunked prefill where an engine would refuse the plan's longest prompt without it.

TensorRT-LLM's PyTorch backend refuses a prompt longer than its per-step token budget
(``max_num_tokens``, 8192 unless given) while chunked prefill is off, its default
(``EngineFlags.prompt_budget``). A plan that admits longer prompts is launched with the options-file
entry that turns chunked prefill on, as the speed model prefills prompts in chunks of that budget.
"""

from __future__ import annotations

from inferplan.catalog.flags_schema import EngineFlags
from inferplan.catalog.loader import Catalog
from inferplan.errors import InferplanError
from inferplan.inputs.deployment import Deployment
from inferplan.memory.resolve import resolve_model


def longest_prompt(d: Deployment, catalog: Catalog) -> int | None:
    """The longest prompt ``d`` admits: its max_model_len, else the model's context (None: neither is known)."""
    if d.max_model_len:
        return d.max_model_len
    try:
        return resolve_model(catalog, d.model).context_tokens
    except InferplanError:  # a model the catalogue cannot resolve: its context is the engine's to read
        return None


def chunked_prefill_options(d: Deployment, catalog: Catalog, flags: EngineFlags) -> dict:
    """The options-file entries that let ``d``'s longest prompt run (empty: none are needed). A prompt
    longer than the launch's budget (``max_num_batched_tokens``, else the engine's default), or an unknown
    longest prompt, gets chunked prefill."""
    rule = flags.prompt_budget
    if rule is None:
        return {}
    longest = longest_prompt(d, catalog)
    if longest is not None and longest <= (d.max_num_batched_tokens or rule.default_tokens):
        return {}
    *parents, last = rule.option.key.split(".")
    entry: dict = {last: rule.option.value}
    for part in reversed(parents):
        entry = {part: entry}
    return entry
