"""What a plan's deployment costs to run: capex once and the monthly costs, owned or rented.

Owned, the systems draw power and take colocation, support is a share of their capex and the
capex is recovered. Rented (``Scenario.rented``), the monthly operating cost is the rent route's
bill with the software and staff the scenario states: a provider's hourly price includes the GPUs'
power, cooling and hosting (``rental_prices.yaml``: its listings name storage, egress or tax as
extra where they are, never power or space), so none of them is charged on top, and nothing owned
needs support or capital recovery.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from inferplan.catalog.loader import Catalog
from inferplan.economics import money
from inferplan.economics.plan_inputs import Hardware, MoneyRates, capex, nvaie_usd, power_w
from inferplan.economics.rent_route import RentRoute
from inferplan.economics.scenario import Scenario
from inferplan.errors import InvalidScenarioError


@dataclass(frozen=True)
class Costs:
    """What the loadouts cost: capex once, the rest per month."""

    capex_usd: float | None  # None: rented, and the catalogue has no purchase price (``priced_capex``)
    capex_basis: str
    power_w_per_loadout: float
    power_w: float  # the maximum draw of every system bought
    power_note: str | None  # how power was assumed when no figure is stated or catalogued
    gpus: int
    monthly: money.MonthlyCosts
    operating_usd_per_month: float
    capital_recovery_usd_per_month: float | None
    amortized_usd_per_month: float | None
    rented: bool = False  # the monthly figures are a renter's: the rent, software and staff

    @property
    def usd_per_month(self) -> float | None:
        """The deployment's whole month: operating cost with the amortized capex owned, the rent rented
        (None: owned, and not priced to own)."""
        if self.rented:
            return self.operating_usd_per_month
        return None if self.amortized_usd_per_month is None else self.operating_usd_per_month + self.amortized_usd_per_month


def owned_costs(catalog: Catalog, s: Scenario, hw: Hardware, rates: MoneyRates, *, systems: int,
                systems_per_loadout: int) -> Costs:
    """``systems`` systems owned: their capex, and power, colocation, software, support and staff a month."""
    capex_usd, basis = priced_capex(catalog, s, hw, systems)
    watts, power_note = power_w(s, hw.system, hw.accelerator)  # of one system
    drawn_w = watts * systems
    gpus = hw.gpus_per_system * systems
    monthly = money.MonthlyCosts(
        power_usd=money.power_cost_usd(drawn_w, utilization=rates.utilization, pue=rates.pue,
                                       usd_per_kwh=rates.electricity_usd_per_kwh),
        colocation_usd=money.colocation_cost_usd(drawn_w, rates.colocation_usd_per_kw_month),
        software_usd=money.software_cost_usd(gpus, s.money.software, nvaie_usd(catalog), rates.amortization_years),
        support_usd=(capex_usd or 0.0) * rates.support_share_of_capex_per_year / 12,
        staff_usd=s.money.staff_usd_per_month,
    )
    owned = capex_usd is not None
    return Costs(capex_usd, basis, watts * systems_per_loadout, drawn_w, power_note, gpus, monthly, monthly.operating_usd,
                 capex_usd / (rates.capital_recovery_years * 12) if owned else None,
                 capex_usd / (rates.amortization_years * 12) if owned else None)


def rented_costs(owned: Costs, rent: RentRoute) -> Costs:
    """The same deployment rented: the rent with ``owned``'s software and staff, no power, colocation
    or support, nothing to recover; the capex stays as what owning it would cost. A rented scenario
    with no rent price is refused, naming ``rented``."""
    if rent.usd_per_month is None:
        raise InvalidScenarioError(
            f"the scenario is rented, but no rent prices it ({rent.note or 'no rental listing for its GPU'})",
            field="rented", allowed="rented: false (owned), or your rate as money.rent_usd_per_gpu_hour")
    monthly = owned.monthly.model_copy(update={"power_usd": 0.0, "colocation_usd": 0.0, "support_usd": 0.0,
                                               "rent_usd": rent.usd_per_month})
    return dataclasses.replace(owned, monthly=monthly, operating_usd_per_month=monthly.operating_usd,
                               capital_recovery_usd_per_month=None, amortized_usd_per_month=None, rented=True)


def priced_capex(catalog: Catalog, s: Scenario, hw: Hardware, systems: int) -> tuple[float | None, str]:
    """The systems' purchase price; a rented scenario on a platform with none is priced by its rent
    route alone (None), and says so; one with a price is told it is what owning would cost."""
    try:
        usd, basis = capex(catalog, s, hw.system, systems)
    except InvalidScenarioError as exc:
        if not s.rented or exc.field != "platform.quote_usd_per_system":
            raise
        return None, f"not priced to own: {exc}; this scenario is rented, so the rent route prices it"
    if s.rented:
        basis += "; the scenario is rented, so this is what owning the same systems would cost (the recommendation's own route)"
    return usd, basis
