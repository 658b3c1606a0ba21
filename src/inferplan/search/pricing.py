"""What one platform unit costs — a system bought, or a rented instance — from the economics layer's
price bands, cost defaults and rental listings (``economics/plan.py``, ``economics/money.py``).

Buying is linear in the systems a deployment takes. Renting goes by the listing's instance: a
provider rents ``gpus_per_instance`` GPUs in one host, so an engine instance (its tensor-, pipeline-
and data-parallel GPUs, which share a host) must fit inside one rented instance, and a deployment
pays for whole instances (``RentQuote``). The search prices a candidate as units × these figures
over numpy arrays.
"""

from __future__ import annotations

from dataclasses import dataclass

from inferplan.catalog.loader import Catalog
from inferplan.economics import money
from inferplan.economics.plan_inputs import capex as priced_capex
from inferplan.economics.plan_inputs import hourly_usd, money_rates, power_w as rated_power_w
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
    listings: tuple[tuple[str, float, int], ...]  # (id, USD per GPU-hour, GPUs per instance) on demand, cheapest first
    notes: tuple[str, ...]
    # one rented GPU: the accelerator's TDP × the host share, as a bare GPU is rated (None: no TDP)
    rent_power_w_per_gpu: float | None = None

    def rents(self, width: int) -> tuple["RentQuote", ...]:
        """Renting engine instances of ``width`` GPUs: one quote per instance size that holds them, each
        the median on-demand price per GPU-hour over that size's listings (the middle listing's, or for
        an even count the mean of the middle two; the lower middle one is the listing compared with).
        Empty: no listing hosts it."""
        sizes = sorted({x[2] for x in self.listings if x[2] >= width})
        return tuple(_median_quote([x for x in self.listings if x[2] == g], width) for g in sizes)

    @property
    def largest_rent_instance_gpus(self) -> int | None:
        return max((x[2] for x in self.listings), default=None)


def _median_quote(options: list[tuple[str, float, int]], width: int) -> "RentQuote":
    low, high = options[(len(options) - 1) // 2], options[len(options) // 2]
    median = (low[1] + high[1]) / 2
    which = (f"{low[0]} at ${low[1]:.2f}" if low is high else
             f"${median:.3f}, the mean of the middle two: {low[0]} at ${low[1]:.2f} and {high[0]} at ${high[1]:.2f}")
    span = f"${options[0][1]:.2f}–${options[-1][1]:.2f}" if len(options) > 1 else f"${low[1]:.2f}"
    listings = "listing" if len(options) == 1 else "listings"
    note = f"rent: median of {len(options)} on-demand {listings} of {low[2]}-GPU instances ({span} per GPU-hour): {which}"
    return RentQuote(low[0], median, low[2], width, note)


@dataclass(frozen=True)
class RentQuote:
    """Engine instances of ``width`` GPUs on rented instances of ``instance_gpus`` GPUs each."""

    rental: str
    usd_per_gpu_hour: float
    instance_gpus: int
    width: int
    note: str

    @property
    def usd_per_instance_month(self) -> float:
        return self.usd_per_gpu_hour * self.instance_gpus * money.HOURS_PER_MONTH

    def instances(self, engine_instances, width: int | None = None):
        """Rented instances that hold ``engine_instances`` of ``width`` GPUs (default the quote's; no
        engine instance spans two rented ones)."""
        return -(-engine_instances // (self.instance_gpus // (width or self.width)))

    def pool_instances(self, prefill, prefill_width: int, decode, decode_width: int):
        """Rented instances that hold a prefill pool beside a decode pool (each at most ``width`` wide):
        GPU by GPU where both widths divide the instance's GPUs, else each pool on instances of its own."""
        g = self.instance_gpus
        if g % prefill_width == 0 and g % decode_width == 0:
            return -(-(prefill * prefill_width + decode * decode_width) // g)
        return self.instances(prefill, prefill_width) + self.instances(decode, decode_width)


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
    listings = sorted(((r.id, h, r.gpus_per_instance) for r in catalog.rental_prices if r.accelerator == p.accelerator.id
                       if (h := hourly_usd(r, rates.fx_usd_per_eur)) is not None), key=lambda x: (x[1], x[0]))
    return UnitCosts(p.gpus, power_w, capex, owner, tuple(listings), tuple(notes), _rented_gpu_power_w(model, p))


def _rented_gpu_power_w(model: str, p: Platform) -> float | None:
    """What one rented GPU draws: a rental is GPUs in the provider's host, not the platform's system, so
    it is rated as one bare GPU is (``economics.plan_inputs.power_w``: TDP × the host share)."""
    one = Scenario(model=model, platform=ScenarioPlatform(gpu=p.accelerator.id, gpus=1))
    try:
        return rated_power_w(one, None, p.accelerator)[0]
    except InvalidScenarioError:  # no TDP in the catalogue
        return None
