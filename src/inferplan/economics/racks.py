"""Published rack efficiency curves (the seed's SemiAnalysis/CoreWeave tables): output tokens/s
per all-in utility MW and modelled owner cost per million output tokens, by interactivity."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from inferplan.catalog.loader import Catalog, load_catalog
from inferplan.errors import InvalidScenarioError


class RackComparison(BaseModel):
    model_config = ConfigDict(frozen=True, defer_build=True)

    interactivity_tokens_per_s: int
    baseline: str
    rows: tuple[dict, ...]  # profile id, tokens/s/MW, cost/Mtok, ratio vs baseline (tokens/MW up, cost down)


def _point(catalog: Catalog, profile_id: str, interactivity: int):
    profile = catalog.rack_profiles.get(profile_id, field_name="baseline", error=InvalidScenarioError)
    match = next((p for p in profile.points if p.interactivity_tokens_per_s == interactivity), None)
    if match is None:
        allowed = ", ".join(str(p.interactivity_tokens_per_s) for p in profile.points)
        raise InvalidScenarioError(f"{profile.id} has no point at {interactivity} tok/s/user",
                                   field="interactivity", allowed=allowed)
    return profile, match


def _ratio(catalog: Catalog, numerator: str, denominator: str, interactivity: int, field: str) -> float | None:
    """``field`` of ``numerator``'s point over the same of ``denominator``'s; None if either is not feasible."""
    top = getattr(_point(catalog, numerator, interactivity)[1], field)
    bottom = getattr(_point(catalog, denominator, interactivity)[1], field)
    return None if top is None or bottom is None else top.value / bottom.value


def tokens_per_mw_ratio(catalog: Catalog, a: str, b: str, interactivity: int) -> float | None:
    """How many times more output tokens per MW ``a`` delivers than ``b``; None if either is not feasible."""
    return _ratio(catalog, a, b, interactivity, "output_tokens_per_s_per_mw")


def cost_ratio(catalog: Catalog, a: str, b: str, interactivity: int) -> float | None:
    """How many times cheaper per million output tokens ``a`` is than ``b``."""
    return _ratio(catalog, b, a, interactivity, "owner_cost_usd_per_mtok")


def compare_racks(interactivity: int, baseline: str, catalog: Catalog | None = None) -> RackComparison:
    catalog = catalog or load_catalog()
    _point(catalog, baseline, interactivity)
    rows = []
    for profile in catalog.rack_profiles:
        point = next((p for p in profile.points if p.interactivity_tokens_per_s == interactivity), None)
        tpm = point.output_tokens_per_s_per_mw.value if point and point.output_tokens_per_s_per_mw else None
        cost = point.owner_cost_usd_per_mtok.value if point and point.owner_cost_usd_per_mtok else None
        rows.append({
            "profile": profile.id, "name": profile.name, "output_tokens_per_s_per_mw": tpm, "owner_cost_usd_per_mtok": cost,
            "tokens_per_mw_vs_baseline": tokens_per_mw_ratio(catalog, profile.id, baseline, interactivity) if point else None,
            "cheaper_than_baseline": cost_ratio(catalog, profile.id, baseline, interactivity) if point else None,
        })
    return RackComparison(interactivity_tokens_per_s=interactivity, baseline=baseline, rows=tuple(rows))
