"""Where the host RAM is short by a host KV-cache tier (vLLM ``--kv-offloading-size``, SGLang
``--hicache-size`` / ``--hicache-ratio``): the largest tier of the same flag that the host RAM holds,
else the deployment without the tier; each checked by a fit of the changed deployment. Where the GPU
is short too, ``held_tier`` gives that tier with its plan, for the GPU's answers to be sought at it
(``memory.suggest``). Where the host RAM is short and nothing is suggested, ``host_note`` says so
once, with the figures.

The tier's bytes grow in proportion to its setting (``memory.offload.host_kv_tier_bytes``), so the
largest setting that fits is the stated one times the share of the tier the host RAM has room for,
rounded down to the flag's step (whole GiB, whole GB, a tenth of the ratio).
"""

from __future__ import annotations

import math

from inferplan.catalog.flags_schema import flags_for
from inferplan.catalog.loader import Catalog
from inferplan.errors import InferplanError
from inferplan.inputs.deployment import Deployment
from inferplan.memory.fit import MemoryPlan, fits_changed as _fits, plan_memory
from inferplan.memory.fit_result import FitSuggestion, MemoryFit
from inferplan.memory.offload import host_kv_tier_bytes
from inferplan.units import GiB

# the tier's settings in the order host_kv_tier_bytes reads them, each with the step a suggestion takes
TIER_STEPS = {"kv_offloading_size": 1.0, "hicache_size": 1.0, "hicache_ratio": 0.1}
TRIES = 3  # steps below the proportional answer tried when a fit refuses it (a tier the engine does not start with)


def smaller_kv_tier(d: Deployment, mp: MemoryPlan, catalog: Catalog) -> FitSuggestion | None:
    """For a deployment whose host RAM is short and which states a host KV tier: the largest tier of the
    same setting that fits; when none does, no tier (None: neither fits, or no tier is stated)."""
    for changes in _tiers(d, mp):
        fit = _fits(d, changes, catalog)
        if fit is not None:
            return FitSuggestion(kind="host_tier", changes=changes, summary=tier_words(d, changes, catalog, fit))
    return None


def held_tier(d: Deployment, mp: MemoryPlan, catalog: Catalog) -> tuple[dict, MemoryPlan] | None:
    """For a deployment whose host RAM is short by a host KV tier: the largest tier of the same setting the
    host RAM holds whatever the GPU lacks, else no tier, with the plan at it (None: no tier is stated, the
    host RAM is not short, or it is short without the tier too)."""
    for changes in _tiers(d, mp):
        try:
            there = plan_memory(d.model_copy(update=changes), catalog)
        except InferplanError:  # a tier the engine does not start with
            continue
        if not there.result.host_shortfall_bytes:
            return changes, there
    return None


def tier_words(d: Deployment, changes: dict, catalog: Catalog, fit: MemoryFit) -> str:
    """What a tier change is, with the tokens and the host RAM of the fit at it."""
    field = next(f for f in TIER_STEPS if getattr(d, f))
    flag = _flag(catalog, d.engine, field)
    if changes.get(field) is None:
        return f"no host KV tier: the host RAM holds no {flag} the engine starts with"
    return (f"a smaller host KV tier: {flag} {changes[field]:g} holds {fit.host_kv_cache_tokens:,} tokens in "
            f"{fit.host_memory_bytes_used / GiB:.1f} of the {fit.host_memory_budget_bytes / GiB:.1f} GiB of host RAM "
            "the engine may use")


def _tiers(d: Deployment, mp: MemoryPlan) -> list[dict]:
    """The tier changes to try, largest first: the stated setting scaled by the share of the tier the host
    RAM has room for, rounded down to the flag's step, and up to TRIES steps below it; then no tier (empty:
    no tier is stated or the host RAM is not short)."""
    r = mp.result
    field = next((f for f in TIER_STEPS if getattr(d, f)), None)
    if field is None or not r.host_shortfall_bytes:
        return []
    p = r.parallel
    tier = host_kv_tier_bytes(d, r.kv_cache_bytes_per_gpu, p.tensor_parallel_size * p.pipeline_parallel_size)
    step, stated = TIER_STEPS[field], getattr(d, field)
    room = max(tier - r.host_shortfall_bytes, 0.0)
    steps = math.floor(stated * room / tier / step + 1e-9) if tier else 0
    values = (round(n * step, 6) for n in range(steps, max(steps - TRIES, 0), -1))
    return [*({field: v} for v in values if v < stated),
            {f: None for f in (*TIER_STEPS, "kv_offloading_backend") if getattr(d, f) is not None}]


def host_note(r: MemoryFit) -> str | None:
    """Why nothing is suggested for a deployment whose host RAM is short (None: it is not)."""
    if not r.host_shortfall_bytes or r.host_memory_origin == "unified":
        return None
    return (f"nothing tried fits the {r.host_memory_total_bytes / GiB:g} GiB of host RAM: this plan needs "
            f"{r.host_memory_bytes_used / GiB:.2f} GiB of the {r.host_memory_budget_bytes / GiB:.2f} GiB the engine may use, "
            "and no shorter context, layout, smaller weight format or offload the engine takes fits both it and the GPU")


def _flag(catalog: Catalog, engine: str, field: str) -> str:
    """The engine's flag for a setting (engine_flags.yaml), else the field's own name."""
    flags = flags_for(catalog, engine)
    rule = flags.settings.get(field) if flags is not None else None
    return rule.flags[0] if rule is not None and rule.flags else field

