"""A speculative draft the engine loads after sizing its memory fraction (``engine_mtp_rules.yaml``:
``weights_in_pool`` or ``kv_layers_in_pool`` false: SGLang through 0.5.13, and from 0.5.14 an MTP draft
whose layer count SGLang does not know when it sizes the target's pool): what it holds outside the
fraction must fit in what the fraction leaves beyond the engine's draft reserve. Those releases run an
EAGLE-3 head and a model's own MTP layers (NEXTN, an alias of EAGLE) through the same EAGLE draft worker,
built after the target's pool is sized, with a draft pool of the target's token count; so one check
serves both drafts (``memory.eagle3``, ``memory.mtp``)."""

from __future__ import annotations

from inferplan.catalog.mtp_rules import MtpRule
from inferplan.errors import InvalidScenarioError
from inferplan.units import fmt_gib


def draft_reserve_bytes(rule: MtpRule | None) -> float:
    """What the engine keeps outside its default fraction while a draft runs (0: nothing more)."""
    return rule.fraction_reserve_bytes.value if rule and rule.fraction_reserve_bytes else 0.0


def check_outside_fraction(rule: MtpRule, draft: str, *, weight_bytes_per_gpu: float, pool_bytes_per_gpu: float,
                           total_bytes: float, memory_fraction: float, field: str, allowed: str) -> None:
    """Refuse (an error naming ``field``) a draft whose weights per GPU and draft pool per GPU, each where
    the engine places it outside the fraction, need more than the fraction leaves beyond the reserve."""
    if rule.weights_in_pool and rule.kv_layers_in_pool:
        return  # both inside the fraction: the pool has already lost them
    need = (0.0 if rule.weights_in_pool else weight_bytes_per_gpu) + (0.0 if rule.kv_layers_in_pool else pool_bytes_per_gpu)
    parts = " and ".join(p for p, inside in (("its weights", rule.weights_in_pool),
                                             ("a draft pool of the target's tokens", rule.kv_layers_in_pool)) if not inside)
    room = total_bytes * (1 - memory_fraction) - draft_reserve_bytes(rule)
    if need > room:
        raise InvalidScenarioError(
            f"{draft} on {rule.engine} needs {fmt_gib(need)} per GPU outside the memory fraction ({parts}), "
            f"{fmt_gib(max(room, 0))} is left there beyond the draft reserve", field=field, allowed=allowed)
