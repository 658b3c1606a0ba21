"""The route chooser: stay on an API, rent dedicated capacity, or own — from the plan's numbers,
stated with the figures that decide it."""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict


class Recommendation(BaseModel):
    model_config = ConfigDict(frozen=True, defer_build=True)

    route: str  # "stay on an API" | "rent dedicated capacity" | "own"
    reasons: tuple[str, ...]  # what decided it, in words (money is in ``monthly_usd``, formatted by the shells)
    monthly_usd: dict[str, float] = {}  # each route's monthly cost, cheapest first


@dataclass(frozen=True)
class RouteFigures:
    """The plan's figures the route choice reads (``plan.py`` fills it)."""

    served_users: int
    target_users: int
    supported_users: int
    loadouts: int
    capex_usd: float | None  # None: not owned (rented, no purchase price)
    modeled_monthly_operating_cost_usd: float
    staff_usd_per_month: float
    simple_payback_months: float | None  # None = never
    api_cost_for_served_usd_per_month: float | None  # None: no API price to compare with
    rent_usd_per_month: float | None  # None: no rental listing for the GPU
    hardware_cycle_years: float  # the amortization period: capex must pay back inside it
    # below this share of the owned capacity in use at the target, owning carries idle hardware and renting
    # first is advised (``rent-first-below-use`` in ``catalog/data/calibration.yaml``, an assumption with its source)
    rent_first_below_use: float


def recommend(f: RouteFigures) -> Recommendation:
    cycle_years = f.hardware_cycle_years
    served, target = f.served_users, f.target_users
    reasons: list[str] = []
    if served == 0:
        return Recommendation(route="stay on an API", reasons=(
            "this platform cannot meet the workload's per-user speed target with this model",))
    payback = f.simple_payback_months
    options = {} if f.capex_usd is None else {"own": f.modeled_monthly_operating_cost_usd + f.capex_usd / (cycle_years * 12)}
    if f.api_cost_for_served_usd_per_month is not None:
        options["stay on an API"] = f.api_cost_for_served_usd_per_month
    if f.rent_usd_per_month is not None:
        options["rent dedicated capacity"] = f.rent_usd_per_month + f.staff_usd_per_month
    route = min(options, key=options.get) if options else "stay on an API"
    monthly = dict(sorted(options.items(), key=lambda kv: kv[1]))
    if route == "own":
        if payback is None or payback > cycle_years * 12:
            alt = min((k for k in options if k != "own"), key=options.get, default=None)
            if alt is not None:
                reasons.append(
                    "owning is cheapest on paper but the capex does not pay back within the "
                    f"{cycle_years:g}-year hardware cycle at the selected quote" if payback is None else
                    f"owning is cheapest on paper but payback takes {payback:,.0f} months, beyond the "
                    f"{cycle_years:g}-year hardware cycle")
                route = alt
        else:
            reasons.append(f"capex pays back in {payback:,.0f} months, inside the {cycle_years:g}-year cycle")
    if f.loadouts and target and served < target:
        reasons.append(f"the loadouts serve {served} of {target} target users")
    utilization = target / max(f.supported_users, 1)
    if route == "own" and utilization < f.rent_first_below_use:
        reasons.append(f"only {utilization:.0%} of the owned capacity is used at the target: renting first de-risks demand")
    return Recommendation(route=route, reasons=tuple(reasons), monthly_usd=monthly)
