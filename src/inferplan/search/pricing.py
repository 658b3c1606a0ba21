"""What one platform unit costs — a system bought, or a GPU rented — from the economics layer's
price bands, cost defaults and rental listings (``economics/plan.py``, ``economics/money.py``).

Costs are linear in the units a deployment takes, so the search prices a candidate as units ×
these figures over numpy arrays.
"""

from __future__ import annotations

from dataclasses import dataclass

from inferplan.catalog.loader import Catalog
from inferplan.economics import money
from inferplan.economics.plan_inputs import capex as priced_capex
from inferplan.economics.plan_inputs import money_rates, power_w as rated_power_w, rental as rental_listing
from inferplan.economics.scenario import Platform as ScenarioPlatform
from inferplan.economics.scenario import Scenario
from inferplan.errors import InvalidScenarioError
from inferplan.search.space import Platform


@dataclass(frozen=True)
class UnitCosts:
    """Per system (a catalogue system) or per the platform's N GPUs (a bare accelerator)."""

    gpus: int
    power_w: float | None  # None: no power figure in the catalogue
    capex_usd: float | None  # None: no purchase price in the catalogue
    owner_usd_per_month: float | None  # amortized capex + power + colocation + support
    rent_usd_per_month: float | None  # the same GPUs rented around the clock (None: no listing)
    rental: str | None
    notes: tuple[str, ...]


def unit_costs(catalog: Catalog, p: Platform, model: str) -> UnitCosts:
    """A platform unit's purchase, monthly owner and monthly rent cost, priced as ``plan`` prices a
    loadout (mid of the price band, the catalogue's cost defaults, the median of the on-demand listings)."""
    if p.system is not None:
        s = Scenario(model=model, platform=ScenarioPlatform(system=p.system.id))
    else:
        s = Scenario(model=model, platform=ScenarioPlatform(gpu=p.accelerator.id, gpus=p.gpus))
    notes = []
    try:
        power_w, note = rated_power_w(s, p.system, p.accelerator)
    except InvalidScenarioError:
        power_w, note = None, f"{p.id}: no power figure in the catalogue, so it cannot be priced to own"
    if note:
        notes.append(note)
    rates = money_rates(catalog, s.money, p.system)
    capex = owner = None
    if p.system is not None:
        try:
            capex, basis = priced_capex(s, p.system, 1)
        except InvalidScenarioError:
            notes.append(f"{p.system.name}: no price band in the catalogue, so it cannot be priced to buy")
        else:
            notes.append(f"capex: {basis}")
    if capex is not None and power_w is not None:
        operating = (money.power_cost_usd(power_w, utilization=rates.utilization, pue=rates.pue,
                                          usd_per_kwh=rates.electricity_usd_per_kwh)
                     + money.colocation_cost_usd(power_w, rates.colocation_usd_per_kw_month)
                     + capex * rates.support_share_of_capex_per_year / 12)
        owner = operating + capex / (rates.amortization_years * 12)
    rental, hourly, rental_note = rental_listing(catalog, p.accelerator.id, None, rates.fx_usd_per_eur)
    if rental_note:
        notes.append(rental_note)
    rent = hourly * p.gpus * money.HOURS_PER_MONTH if hourly is not None else None
    return UnitCosts(p.gpus, power_w, capex, owner, rent, rental.id if rental else None, tuple(notes))
