"""How sure is the answer: a seeded Monte Carlo over the inputs that are really ranges.

Draws (independent): capex inside the price band (triangular low–mid–high; a vendor quote ±10 %,
``monte-carlo-quote-spread``), capacity per loadout (log-normal with σ set from the speed model's held-out
error, ``speed-capacity-log-sigma``), average power draw (±30 %, ``monte-carlo-power-draw-spread``) and
electricity price (±25 %, ``monte-carlo-electricity-price-spread``); each constant is in
``catalog/data/calibration.yaml`` with how it was chosen. Each draw
re-sizes the loadouts for the target and recomputes cost per user, payback and owner cost per
million tokens with the same formulas as ``plan``; P10/P50/P90 are reported, and the share of
draws whose payback is "never".
"""

from __future__ import annotations

import numpy as np
from pydantic import BaseModel, ConfigDict

from inferplan.catalog.loader import Catalog, load_catalog
from inferplan.economics.plan import PlanResult
from inferplan.economics.scenario import Scenario


class Band(BaseModel):
    model_config = ConfigDict(frozen=True, defer_build=True)

    p10: float
    p50: float
    p90: float


class Uncertainty(BaseModel):
    model_config = ConfigDict(frozen=True, defer_build=True)

    draws: int
    seed: int
    target_payback_usd_per_user_month: Band
    operating_break_even_usd_per_user_month: Band
    owner_cost_usd_per_mtok: Band
    payback_months: Band | None  # over the draws that pay back
    never_pays_back_share: float
    loadouts: Band


def _band(x: np.ndarray) -> Band:
    p10, p50, p90 = np.percentile(x, [10, 50, 90])
    return Band(p10=float(p10), p50=float(p50), p90=float(p90))


def _spread(rng: np.random.Generator, half_width: float, draws: int) -> np.ndarray:
    """Multipliers drawn uniformly within ±``half_width`` of 1."""
    return rng.uniform(1 - half_width, 1 + half_width, draws)


def no_draws_reason(result: PlanResult) -> str:
    """Why ``simulate`` drew nothing for this plan."""
    if result.rented or result.capex_usd is None:
        return "nothing is owned (a rented scenario: its rent is a listed price), so there is no capex to draw"
    return "no user is carried at the service target, so there is nothing to draw"


def simulate(result: PlanResult, scenario: Scenario, *, draws: int = 10_000, seed: int = 0,
             catalog: Catalog | None = None) -> Uncertainty | None:
    """P10/P50/P90 of the plan's money outputs; None when the platform carries no user at the
    workload's speed target (every draw would need unboundedly many loadouts)."""
    if result.capacity.supported_users == 0 or result.capex_usd is None or result.rented:  # no user carried, or nothing owned
        return None
    catalog = catalog or load_catalog()
    rng = np.random.default_rng(seed)
    per_loadout_capex = result.capex_usd / result.loadouts
    if result.capex_basis == "vendor quote":
        capex_draw = _spread(rng, catalog.constant("monte-carlo-quote-spread"), draws) * per_loadout_capex
    else:
        band = catalog.system(result.system).price
        low = band.usd_low.value
        high = band.usd_high.value if band.usd_high else low
        per_system = rng.triangular(low, (low + high) / 2, high, draws) if high > low else np.full(draws, low)
        # a loadout may be several systems, and a prefill pool's systems are spread over the loadouts
        capex_draw = per_system * (result.systems / result.loadouts)
    sigma = catalog.constant("speed-capacity-log-sigma")
    speed = np.exp(rng.normal(0.0, sigma, draws))  # the draw's speed against the speed model's
    users_per_loadout = result.capacity.supported_users * speed
    if result.stated_replicas is None:
        loadouts = np.maximum(1, np.ceil(result.target_users / np.maximum(users_per_loadout, 1e-9)))
        served = np.minimum(result.target_users, np.floor(users_per_loadout * loadouts))
    else:  # the stated replica cells: their loadouts hold, the users they carry vary
        loadouts = np.full(draws, float(result.loadouts))
        served = np.minimum(result.target_users,
                            np.floor(users_per_loadout * result.stated_replicas / result.capacity.cells))
    if result.prefill_users is not None:  # the prefill pool's bound, from the same speed model: the draw's speed
        served = np.minimum(served, np.floor(result.prefill_users * speed))
    c = result.monthly_costs
    per_loadout_power = c.power_usd / result.loadouts
    power = (loadouts * per_loadout_power * _spread(rng, catalog.constant("monte-carlo-power-draw-spread"), draws)
             * _spread(rng, catalog.constant("monte-carlo-electricity-price-spread"), draws))
    colocation = loadouts * c.colocation_usd / result.loadouts
    software = loadouts * c.software_usd / result.loadouts
    capex = capex_draw * loadouts
    support = capex * (c.support_usd / result.capex_usd if result.capex_usd else 0.0)
    operating = power + colocation + software + support + c.staff_usd
    recovery_months = result.capital_recovery_years * 12
    amort_months = result.amortization_years * 12
    billing = served * (result.private_quote_usd_per_user_month or 0.0)
    cash = billing - operating
    pays = cash > 0
    served_safe = np.maximum(served, 1)
    tokens = served_safe * result.workload.monthly_tokens / 1e6
    return Uncertainty(
        draws=draws, seed=seed,
        target_payback_usd_per_user_month=_band((operating + capex / recovery_months) / served_safe),
        operating_break_even_usd_per_user_month=_band(operating / served_safe),
        owner_cost_usd_per_mtok=_band((operating + capex / amort_months) / tokens),
        payback_months=_band(capex[pays] / cash[pays]) if pays.any() else None,
        never_pays_back_share=float(1 - pays.mean()),
        loadouts=_band(loadouts),
    )
