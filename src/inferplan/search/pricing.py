"""What one platform unit costs — a system bought, or a rented instance — from the economics layer's
price bands, cost defaults and rental listings (``economics/plan.py``, ``economics/money.py``).

Buying is linear in the systems a deployment takes. Renting goes by the listing's instance, by the
rule ``plan`` prices with too (``economics/rental.py``: an engine instance inside one rented
instance, whole instances paid for, the median of each instance size's listings). The search prices
a candidate as units × these figures over numpy arrays.
"""

from __future__ import annotations

from dataclasses import dataclass

from inferplan.catalog.loader import Catalog
from inferplan.economics import money
from inferplan.economics.plan_inputs import capex as priced_capex
from inferplan.economics.plan_inputs import bare_host, money_rates, power_w as rated_power_w
from inferplan.economics.rental import RentQuote, on_demand_listings, rent_quotes
from inferplan.economics.scenario import Platform as ScenarioPlatform
from inferplan.economics.scenario import Scenario
from inferplan.errors import InvalidScenarioError
from inferplan.search.space import Platform

CAPEX_BUYS_ONLY = ("ranked by capex: purchases only, since renting commits no capital (rank by monthly or "
                   "usd-per-mtok to weigh renting against buying)")
CAPEX_CAP_BUYS_ONLY = ("max_capex_usd caps what is bought: renting commits no capital, so rented deployments pass it "
                       "(pricing buy searches purchases only)")


def pricing_notes(objective: str, pricing: str, max_capex_usd: float | None) -> list[str]:
    """What a capex ranking and a capex cap mean when renting is searched too."""
    if objective == "capex":  # purchases only (``run.search``): the cap then caps every pick
        return [CAPEX_BUYS_ONLY] if pricing == "both" else []
    return [CAPEX_CAP_BUYS_ONLY] if max_capex_usd is not None and pricing != "buy" else []


@dataclass(frozen=True)
class UnitCosts:
    """Per system (a catalogue system) or per the platform's N GPUs (a bare accelerator)."""

    gpus: int
    power_w: float | None  # None: no power figure in the catalogue
    capex_usd: float | None  # None: no purchase price in the catalogue
    owner_usd_per_month: float | None  # amortized capex + power + colocation + support
    listings: tuple[tuple[str, float, int], ...]  # (id, USD per GPU-hour, GPUs per instance) on demand, cheapest first
    notes: tuple[str, ...]
    # one rented GPU: the accelerator's TDP × the host share, as a bare GPU is rated (None: no TDP)
    rent_power_w_per_gpu: float | None = None
    quote_usd: float | None = None  # the user's price of a bare unit's N GPUs (its scenario's quote_usd_per_system)
    price_basis: str | None = None  # where the purchase price comes from (None: no purchase price)

    def rents(self, width: int) -> tuple["RentQuote", ...]:
        """Renting engine instances of ``width`` GPUs: one quote per instance size that holds them
        (``economics.rental.rent_quotes``). Empty: no listing hosts it."""
        return rent_quotes(self.listings, width)

    def priced_on(self, pricing: str) -> bool:
        """Whether the unit has a price on the route asked: a purchase price, or a rental listing."""
        return (pricing != "rent" and self.capex_usd is not None) or (pricing != "buy" and bool(self.listings))


def unit_costs(catalog: Catalog, p: Platform, model: str, usd_per_gpu: float | None = None) -> UnitCosts:
    """A platform unit's purchase, monthly owner and monthly rent cost, priced as ``plan`` prices a
    loadout (mid of the price band, the catalogue's cost defaults, the median of the on-demand listings).
    ``usd_per_gpu``: the user's purchase price of one of a bare platform's GPUs, priced as ``plan`` prices a
    bare-GPU platform with a vendor quote for its N GPUs (``platform.quote_usd_per_system``)."""
    if p.system is not None:
        s = Scenario(model=model, platform=ScenarioPlatform(system=p.system.id))
    else:
        host = bare_host(catalog, p.accelerator.id, p.gpus) if usd_per_gpu is not None else None
        quote = usd_per_gpu * p.gpus + (host[1] * host[2] if host else 0) if usd_per_gpu is not None else None
        s = Scenario(model=model, platform=ScenarioPlatform(gpu=p.accelerator.id, gpus=p.gpus,
                                                            quote_usd_per_system=quote))
    notes = []
    try:
        power_w, note = rated_power_w(s, p.system, p.accelerator)
    except InvalidScenarioError:
        power_w, note = None, f"{p.id}: no power figure in the catalogue, so it cannot be priced to own"
    if note:
        notes.append(note)
    rates = money_rates(catalog, s.money, p.system, p.accelerator)
    capex = owner = basis = None
    if p.system is not None:
        try:
            capex, basis = priced_capex(catalog, s, p.system, 1)
        except InvalidScenarioError:
            notes.append(f"{p.system.name}: no price band in the catalogue, so it cannot be priced to buy")
        else:
            notes.append(f"capex: {basis}")
    elif s.platform.quote_usd_per_system is not None:
        capex, _ = priced_capex(catalog, s, None, 1)
        basis = stated_price_text(p.accelerator.id, usd_per_gpu, host)
        notes.append(f"capex: {basis}")
    if capex is not None and power_w is not None:
        operating = (money.power_cost_usd(power_w, utilization=rates.utilization, pue=rates.pue,
                                          usd_per_kwh=rates.electricity_usd_per_kwh)
                     + money.colocation_cost_usd(power_w, rates.colocation_usd_per_kw_month)
                     + capex * rates.support_share_of_capex_per_year / 12)
        owner = operating + capex / (rates.amortization_years * 12)
    listings = on_demand_listings(catalog, p.accelerator.id, rates.fx_usd_per_eur)
    return UnitCosts(p.gpus, power_w, capex, owner, listings, tuple(notes), _rented_gpu_power_w(model, p),
                     quote_usd=s.platform.quote_usd_per_system, price_basis=basis)


def priced_systems(catalog: Catalog, accelerator: str) -> list[str]:
    """The catalogue systems built on ``accelerator`` that have a purchase price (a price band with a low end)."""
    return [s.id for s in catalog.systems if s.accelerator == accelerator and s.price is not None
            and s.price.usd_low is not None]


def stated_price_text(accelerator: str, usd_per_gpu: float, host: tuple[str, float, int, str] | None) -> str:
    """Where a bare GPU's purchase price comes from when the user states it: the card's price, plus the host
    the catalogue adds to that accelerator's card-only price (``economics.plan_inputs.bare_host``)."""
    machine = (f" + ${host[1]:,.0f} host PC{f' × {host[2]}' if host[2] > 1 else ''} ({host[3]}, {host[0]})"
               if host else ", the machine around it included")
    return (f"your ${usd_per_gpu:,.0f} per {accelerator} (gpu_price_usd){machine}; "
            "power is the GPUs' TDP × the host share")


def _rented_gpu_power_w(model: str, p: Platform) -> float | None:
    """What one rented GPU draws: a rental is GPUs in the provider's host, not the platform's system, so
    it is rated as one bare GPU is (``economics.plan_inputs.power_w``: TDP × the host share)."""
    one = Scenario(model=model, platform=ScenarioPlatform(gpu=p.accelerator.id, gpus=1))
    try:
        return rated_power_w(one, None, p.accelerator)[0]
    except InvalidScenarioError:  # no TDP in the catalogue
        return None


def platform_label(p, gpus_paid: int, renting: bool = False) -> str:
    """The system's id when bought, or the GPUs rented (in whole listing instances) as
    ``<n>x-<accelerator>`` (all of them, not one unit)."""
    return p.id if p.system is not None and not renting else f"{gpus_paid}x-{p.accelerator.id}"
