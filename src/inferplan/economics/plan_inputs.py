"""What a plan reads from its scenario or, where the scenario states none, from the catalogue: the
platform, the cost defaults (FX, electricity, PUE, colocation, support, amortization), capex from
a vendor quote or the system's price band, power, and the API price to compare with (rental
prices: ``rental.py``).
"""

from __future__ import annotations

from dataclasses import dataclass

from inferplan.catalog.economics_schema import ApiPrice
from inferplan.catalog.loader import Catalog
from inferplan.catalog.schema import Accelerator, System
from inferplan.catalog.site_schema import site_of
from inferplan.economics.scenario import MoneyInputs, Scenario
from inferplan.errors import InvalidScenarioError

# cost_defaults ids used when a scenario leaves a money input out (electricity, PUE and colocation:
# the platform's site, data/economics/sites.yaml)
DEFAULTS = {
    "fx": "fx-eur-usd",
    "support": "hardware-support-share",
    "amortization": "amortization-years",
    "recovery": "capital-recovery-years",
    "utilization": "utilization-default",
}
NVAIE = {"nvaie-1-year": "nvaie-1-year", "nvaie-5-year": "nvaie-5-year", "nvaie-perpetual": "nvaie-perpetual"}


@dataclass(frozen=True)
class Hardware:
    """The platform a loadout is built from."""

    label: str  # the system id, or "<gpus>x-<accelerator>" for a bare-GPU platform
    accelerator: Accelerator
    gpus_per_system: int
    system: System | None  # None for a bare-GPU platform


@dataclass(frozen=True)
class MoneyRates:
    """The money inputs a plan uses: each the scenario's, else the catalogue default."""

    fx_usd_per_eur: float
    fx_basis: str  # where the FX rate comes from and when it was checked
    amortization_years: float
    capital_recovery_years: float
    utilization: float  # average power draw as a share of the maximum
    electricity_usd_per_kwh: float
    pue: float
    pue_note: str  # "stated", or which default and why
    colocation_usd_per_kw_month: float
    support_share_of_capex_per_year: float
    site: str  # where the platform stands (sites.yaml): its electricity, PUE and colocation defaults
    electricity_note: str  # "stated", or the cost default taken
    colocation_note: str


def money_rates(catalog: Catalog, m: MoneyInputs, system: System | None, accelerator: Accelerator) -> MoneyRates:
    """The scenario's money inputs with the catalogue's defaults where it leaves one out: electricity,
    PUE and colocation are those of the site the platform stands at (a workstation at a desk, a node in
    a data centre)."""
    site = site_of(catalog, system.tier if system else None, accelerator.form_factor)
    pue, pue_note = (m.pue, "stated") if m.pue else _default_pue(catalog, system, site.pue)
    electricity = ((m.electricity_usd_per_kwh, "stated") if m.electricity_usd_per_kwh is not None
                   else (_cost(catalog, site.electricity, "usd"), site.electricity))
    colocation = ((m.colocation_usd_per_kw_month, "stated") if m.colocation_usd_per_kw_month is not None
                  else (_cost(catalog, site.colocation, "usd"), site.colocation))
    return MoneyRates(
        fx_usd_per_eur=_cost(catalog, "fx", "usd_per_eur"), fx_basis=fx_basis(catalog),
        amortization_years=m.amortization_years or _cost(catalog, "amortization", "count"),
        capital_recovery_years=m.capital_recovery_years or _cost(catalog, "recovery", "count"),
        utilization=m.utilization or _cost(catalog, "utilization", "ratio"),
        electricity_usd_per_kwh=electricity[0], electricity_note=electricity[1],
        pue=pue, pue_note=pue_note,
        colocation_usd_per_kw_month=colocation[0], colocation_note=colocation[1],
        support_share_of_capex_per_year=(m.support_share_of_capex_per_year if m.support_share_of_capex_per_year is not None
                                         else _cost(catalog, "support", "ratio")),
        site=site.id,
    )


def fx_basis(catalog: Catalog) -> str:
    """Where the FX rate every EUR figure uses comes from, and when it was checked (the catalogue's words)."""
    q = catalog.cost_defaults.records[DEFAULTS["fx"]].usd_per_eur
    source = catalog.sources[q.source]
    return f"{source.title}, checked {(q.checked or source.checked).isoformat()}"


def nvaie_usd(catalog: Catalog) -> dict[str, float]:
    """NVIDIA AI Enterprise list prices per GPU, by the scenario's ``money.software`` option."""
    return {k: _cost(catalog, v, "usd") for k, v in NVAIE.items()}


def _cost(catalog: Catalog, key: str, attr: str) -> float:
    record = catalog.cost_defaults.records[DEFAULTS.get(key, key)]
    return getattr(record, attr).value


def _default_pue(catalog: Catalog, system: System | None, site_pue: str) -> tuple[float, str]:
    """The PUE a plan assumes when the scenario states none: a direct-liquid-cooled system needs a
    facility built for it (the seed lists CDUs as required), planned at the liquid-cooled figure;
    anything else at its site's (a data centre's survey average, which legacy air-cooled sites
    dominate; no facility at a desk)."""
    if system is not None and (system.cooling or "").startswith("direct-liquid"):
        return _cost(catalog, "pue-liquid-cooled", "ratio"), f"{system.id} is direct-liquid-cooled: pue-liquid-cooled"
    return _cost(catalog, site_pue, "ratio"), site_pue


def hardware(catalog: Catalog, s: Scenario) -> Hardware:
    """The scenario's platform: a catalogue system, or a bare GPU and its count."""
    p = s.platform
    if p.system:
        system = catalog.system(p.system, "platform.system")
        accel = catalog.accelerators.records[system.accelerator]
        return Hardware(system.id, accel, system.accelerator_count, system)
    accel = catalog.accelerator(p.gpu or "", "platform.gpu")
    return Hardware(f"{p.gpus}x-{accel.id}", accel, int(p.gpus or 1), None)


def capex(catalog: Catalog, s: Scenario, system: System | None, systems: int) -> tuple[float, str]:
    """Purchase price of ``systems`` systems: the scenario's vendor quote, else the price band's point,
    plus the catalogue's host-machine cost default when the band prices the card(s) alone."""
    point = s.platform.price_point
    if s.platform.quote_usd_per_system:
        return s.platform.quote_usd_per_system * systems, "vendor quote"
    band = system.price if system else None
    if band is None or band.usd_low is None:
        what = (f"{system.name} has no price band in the catalogue" if system else
                f"a bare GPU platform ({s.platform.gpus or 1} × {s.platform.gpu}) has no purchase price in the catalogue, "
                "which prices whole systems")
        raise InvalidScenarioError(
            f"{what}; give a vendor quote for one loadout, or name a priced catalogue system (platform.system"
            f"{_priced_systems(catalog, system.accelerator if system else s.platform.gpu or '')})",
            field="platform.quote_usd_per_system", allowed="a price in USD of at least 1 (what you paid or were quoted)",
        )
    low = band.usd_low.value
    high = band.usd_high.value if band.usd_high else low
    value = {"low": low, "high": high, "mid": (low + high) / 2}[point]
    basis = f"{point} of the catalogue price band ({band.basis})"
    if band.host:
        host = catalog.cost_defaults.records[band.host].usd
        value += host.value
        basis += f" + ${host.value:,.0f} for the rest of the machine ({band.host}, {host.kind.value})"
    return value * systems, basis


def bare_host(catalog: Catalog, accelerator: str, gpus: int) -> tuple[str, float, int, str] | None:
    """The rest of the machine the catalogue adds to a card-only price of ``gpus`` bare ``accelerator`` cards:
    ``(cost default id, USD per host, hosts, kind)`` by the price band of a catalogue system built on that
    accelerator whose band prices the card(s) alone (``PriceBand.host``), one host per that system's cards.
    None: no such system, so a price for the GPU is taken as the whole machine's (a datacenter GPU's quote)."""
    for system in catalog.systems:
        if system.accelerator == accelerator and system.price is not None and system.price.host:
            host = catalog.cost_defaults.records[system.price.host].usd
            hosts = -(-gpus // system.accelerator_count)
            return system.price.host, host.value, hosts, host.kind.value
    return None


def _priced_systems(catalog: Catalog, gpu: str) -> str:
    """The priced catalogue systems built on the accelerator ``gpu`` names, as ": id (N × gpu), …" ("": none)."""
    accel = catalog.accelerator(gpu).id
    named = [f"{x.id} ({x.accelerator_count} × {accel})" for x in catalog.systems
             if x.accelerator == accel and x.price is not None and x.price.usd_low is not None]
    return f": {', '.join(named)}" if named else ""


def power_w(s: Scenario, system: System | None, accel: Accelerator) -> tuple[float, str | None]:
    if s.platform.power_w_per_system:
        return s.platform.power_w_per_system, None
    if system is not None and system.power_w is not None:
        return system.power_w.value, None
    gpus = system.accelerator_count if system else (s.platform.gpus or 1)
    if accel.tdp_w is None:
        raise InvalidScenarioError("no power figure for this platform; give platform.power_w_per_system",
                                   field="platform.power_w_per_system")
    host = 1.5  # CPUs, memory, fans and networking beside the GPUs
    return accel.tdp_w.value * gpus * host, f"system power assumed {host:g} × GPU TDP × {gpus} (no system figure)"


def api_price(catalog: Catalog, model: str, wanted: str | None) -> ApiPrice | None:
    """The API price named, else the current one of the model card ``model`` (its id, resolved from the name
    the user gave: ``resolve_model``) to compare with: an OpenRouter listing first,
    then the cheapest output price. A price past its ``valid_until`` is used only when named."""
    if wanted:
        return catalog.api_prices.get(wanted, field_name="money.api_alternative", error=InvalidScenarioError)
    same = current_api_prices(catalog, model)
    return min(same, key=lambda p: (p.provider != "openrouter", p.output_usd_per_mtok.value), default=None)


def current_api_prices(catalog: Catalog, model: str) -> tuple[ApiPrice, ...]:
    """The API prices still in force (none past its ``valid_until``) of the model card ``model`` (its id)."""
    return tuple(p for p in catalog.api_prices if p.model == model and not p.superseded)


def superseded_api_prices_note(catalog: Catalog, model: str, named: str | None = None) -> str | None:
    """The API prices of the model card ``model`` (its id) past their ``valid_until``, which comparisons leave
    out unless one is ``named`` (None: none left out)."""
    old = [p for p in catalog.api_prices if p.model == model and p.superseded and p.id != named]
    if not old:
        return None
    return "left out of API comparisons: " + ", ".join(f"{p.id} ({p.provider}'s {p.validity_label})" for p in old)


def api_comparison_notes(catalog: Catalog, model: str, name: str | None = None) -> tuple[str, ...]:
    """What a comparison with the model card ``model`` (its id; ``name``: the name the user gave it) at an API
    leaves out: superseded list prices, or every price when the catalogue holds no current one."""
    missing = (f"no current API price is catalogued for {name or model}: nothing to compare with at an API"
               if not current_api_prices(catalog, model) else None)
    return tuple(n for n in (superseded_api_prices_note(catalog, model), missing) if n)


NOT_SHIPPING = ("roadmap", "ramp")  # statuses whose figures are planning placeholders, not quotes or measurements


def platform_status(hw: Hardware) -> str:
    """The platform's catalogue status: a roadmap or ramp GPU in a shipping system counts as its GPU's."""
    statuses = [x.status.value for x in (hw.system, hw.accelerator) if x is not None]
    return next((s for s in NOT_SHIPPING if s in statuses), statuses[0])


def assumed_platform_figures(hw: Hardware, quoted: bool) -> tuple[str, ...]:
    """Which of the platform's figures the plan uses are catalogued as ``assumed``: its price band
    (unless a vendor quote replaces it), its GPU's memory, memory bandwidth and FLOP/s."""
    a = hw.accelerator
    band = hw.system.price if hw.system and not quoted else None
    named = (("price band", (band.usd_low, band.usd_high) if band else ()),
             ("GPU memory", (a.memory_bytes,)),
             ("memory bandwidth", (a.memory_bandwidth_bytes_per_s,)),
             ("FLOP/s", tuple(a.peak_flop_per_s.values())))
    return tuple(name for name, quantities in named if any(q is not None and q.kind == "assumed" for q in quantities))
