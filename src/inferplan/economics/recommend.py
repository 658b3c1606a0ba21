"""The route chooser: stay on an API, rent dedicated capacity, or own — from the plan's numbers,
stated with the figures that decide it."""

from __future__ import annotations

from typing import Any

from inferplan.economics.plan import Recommendation


def recommend(r: dict[str, Any], hardware_cycle_years: float) -> Recommendation:
    api = r["api_cost_for_served_usd_per_month"]
    own = r["modeled_monthly_operating_cost_usd"] + r["capex_usd"] / (hardware_cycle_years * 12)
    rent = r["rent_usd_per_month"]
    served, target = r["served_users"], r["target_users"]
    reasons: list[str] = []
    if served == 0:
        return Recommendation(route="stay on an API", reasons=(
            "this platform cannot meet the workload's per-user speed target with this model",))
    payback = r["simple_payback_months"]
    options = {"own": own}
    if api is not None:
        options["stay on an API"] = api
    if rent is not None:
        options["rent dedicated capacity"] = rent + r["monthly_costs"].staff_usd
    route = min(options, key=options.get)
    monthly = dict(sorted(options.items(), key=lambda kv: kv[1]))
    if route == "own":
        if payback is None or payback > hardware_cycle_years * 12:
            alt = min((k for k in options if k != "own"), key=options.get, default=None)
            if alt is not None:
                reasons.append(
                    "owning is cheapest on paper but the capex does not pay back within the "
                    f"{hardware_cycle_years:g}-year hardware cycle at the selected quote" if payback is None else
                    f"owning is cheapest on paper but payback takes {payback:,.0f} months, beyond the "
                    f"{hardware_cycle_years:g}-year hardware cycle")
                route = alt
        else:
            reasons.append(f"capex pays back in {payback:,.0f} months, inside the {hardware_cycle_years:g}-year cycle")
    if r["loadouts"] and target and served < target:
        reasons.append(f"the loadouts serve {served} of {target} target users")
    utilization = target / max(r["supported_users"], 1)
    if route == "own" and utilization < 0.5:
        reasons.append(f"only {utilization:.0%} of the owned capacity is used at the target: renting first de-risks demand")
    return Recommendation(route=route, reasons=tuple(reasons), monthly_usd=monthly)
