"""Where the host RAM is short by a host KV-cache tier (vLLM ``--kv-offloading-size``, SGLang
``--hicache-size`` / ``--hicache-ratio``): the largest tier of the same flag that the host RAM holds,
else the deployment without the tier; each checked by a fit of the changed deployment. Where the host
RAM is short and nothing is suggested, ``host_note`` says so once, with the figures.

The tier's bytes grow in proportion to its setting (``memory.offload.host_kv_tier_bytes``), so the
largest setting that fits is the stated one times the share of the tier the host RAM has room for,
rounded down to the flag's step (whole GiB, whole GB, a tenth of the ratio).
"""

from __future__ import annotations

import math

from inferplan.catalog.flags_schema import flags_for
from inferplan.catalog.loader import Catalog
from inferplan.inputs.deployment import Deployment
from inferplan.memory.fit import MemoryPlan, fits_changed as _fits
from inferplan.memory.fit_result import FitSuggestion, MemoryFit
from inferplan.memory.offload import host_kv_tier_bytes
from inferplan.units import GiB

# the tier's settings in the order host_kv_tier_bytes reads them, each with the step a suggestion takes
TIER_STEPS = {"kv_offloading_size": 1.0, "hicache_size": 1.0, "hicache_ratio": 0.1}
TRIES = 3  # steps below the proportional answer tried when a fit refuses it (a tier the engine does not start with)


def smaller_kv_tier(d: Deployment, mp: MemoryPlan, catalog: Catalog) -> FitSuggestion | None:
    """For a deployment whose host RAM is short and which states a host KV tier: the largest tier of the
    same setting that fits; when none does, no tier (None: neither fits, or no tier is stated)."""
    r = mp.result
    field = next((f for f in TIER_STEPS if getattr(d, f)), None)
    if field is None or not r.host_shortfall_bytes:
        return None
    p = r.parallel
    tier = host_kv_tier_bytes(d, r.kv_cache_bytes_per_gpu, p.tensor_parallel_size * p.pipeline_parallel_size)
    flag = _flag(catalog, d.engine, field)
    step, stated = TIER_STEPS[field], getattr(d, field)
    room = max(tier - r.host_shortfall_bytes, 0.0)
    steps = math.floor(stated * room / tier / step + 1e-9) if tier else 0
    for n in range(steps, max(steps - TRIES, 0), -1):
        value = round(n * step, 6)
        fit = _fits(d, {field: value}, catalog) if value < stated else None
        if fit is not None:
            return FitSuggestion(kind="host_tier", changes={field: value},
                                 summary=f"a smaller host KV tier: {flag} {value:g} holds {fit.host_kv_cache_tokens:,} "
                                         f"tokens in {fit.host_memory_bytes_used / GiB:.1f} of the "
                                         f"{fit.host_memory_budget_bytes / GiB:.1f} GiB of host RAM the engine may use")
    cleared = {f: None for f in (*TIER_STEPS, "kv_offloading_backend") if getattr(d, f) is not None}
    if _fits(d, cleared, catalog) is None:
        return None
    return FitSuggestion(kind="host_tier", changes=cleared,
                         summary=f"no host KV tier: the host RAM holds no {flag} the engine starts with")


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

