"""The values a launch command states beyond a deployment's own: a flag rule's ``default`` (what the plan
assumes where the engine's default differs), and the context a shared context flag is sized from."""

from __future__ import annotations

from inferplan.catalog.flags_schema import EngineFlags
from inferplan.catalog.loader import Catalog
from inferplan.errors import UnknownModelError
from inferplan.inputs.deployment import Deployment
from inferplan.memory.fit_held import planned_length
from inferplan.memory.resolve import resolve_model


def stated_or_default(d: Deployment, flags: EngineFlags, setting: str) -> object:
    """``d``'s value of a setting, else the rule's ``default`` (where it has a ``default_with``: only when that
    setting is stated)."""
    value, rule = getattr(d, setting), flags.settings.get(setting)
    if value is None and rule is not None and (rule.default_with is None or getattr(d, rule.default_with) is not None):
        return rule.default
    return value


def slot_context(d: Deployment, catalog: Catalog, flags: EngineFlags) -> Deployment:
    """``d`` with its planned context written in where the engine's context flag is shared by its slots
    (``FlagRule.multiplied_by``: llama.cpp's --ctx-size over its --parallel slots) and ``d`` states none:
    left out, the engine's default context (the model's own) would be split among the slots, and an automatic
    context is one llama.cpp's --fit shortens to keep its margin free, while the plan gives each slot the
    model's whole context (``planned_length``). A model the catalogue cannot resolve is left to the engine."""
    rule = flags.settings.get("max_model_len")
    if d.max_model_len is not None or rule is None or rule.multiplied_by is None:
        return d
    try:
        spec = resolve_model(catalog, d.model)
    except UnknownModelError:
        return d
    return d.model_copy(update={"max_model_len": planned_length(d, spec, None)})
