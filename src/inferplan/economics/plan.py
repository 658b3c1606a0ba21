"""``plan(scenario)``: the Users + ROI simulator's outputs for one scenario.

Capacity comes from the memory and speed models (``capacity.py``), the loadouts that carry the
target from ``sizing.py``; money from the catalogue's
price bands, cost defaults, API and rental prices (``money.py``). Every output the seed's
simulator shows is here, plus cost per million tokens, tokens/s per MW, rent-vs-buy and API
break-even volumes, and a route recommendation with the figures that decide it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from typing import Callable, TypeVar

from pydantic import BaseModel, ConfigDict

from inferplan.catalog.loader import Catalog, load_catalog
from inferplan.economics import money
from inferplan.economics.capacity import CellCapacity, LoadoutCapacity
from inferplan.economics.deployed import deployed
from inferplan.economics.operating import Costs, owned_costs, rented_costs
from inferplan.economics.per_token import PerToken, per_token
from inferplan.memory.resolve import resolve_model
from inferplan.economics.plan_inputs import (Hardware, MoneyRates, api_price, assumed_platform_figures, hardware,
                                             money_rates, platform_status, superseded_api_prices_note)
from inferplan.economics.recommend import Recommendation, RouteFigures, recommend
from inferplan.economics.rent_route import RentRoute, rent_route
from inferplan.economics.scenario import MoneyInputs, Scenario
from inferplan.economics.sizing import Sizing, size_loadouts
from inferplan.economics.workloads import WorkloadProfile, resolve_workload
from inferplan.errors import InferplanError

T = TypeVar("T")


class PlanResult(BaseModel):
    model_config = ConfigDict(frozen=True, defer_build=True)

    name: str
    model: str
    system: str
    accelerator: str
    workload: WorkloadProfile
    capacity: LoadoutCapacity
    target_users: int
    loadouts: int  # auto-sized to carry the target, or holding the stated replica cells
    stated_replicas: int | None = None  # the scenario's replica cells (a search's pick); None: auto-sized
    systems_per_loadout: int = 1  # more than 1 when one replica of the model needs several systems
    prefill_instances: int | None = None  # separate pools: the prefill instances beside the replica cells (the decode pool)
    prefill_gpus_per_instance: int | None = None
    prefill_systems: int = 0  # systems (or N-GPU units) the prefill pool adds to the loadouts
    prefill_users: int | None = None  # separate pools: the users whose prompts the prefill pool keeps up with at the peak
    gpus_per_system: int = 1
    gpus: int
    supported_users: int  # by all loadouts (rented on another machine than the loadout: by the rented cells, as a note says)
    # by the replica cells one loadout runs (stated ones: the fullest loadout's, the decode pool's); the owned loadout's
    # even where a rented scenario's rented cells are another machine
    users_per_loadout: int = 0
    # what limits supported_users: one loadout's tightest limit (capacity.binding: token throughput, concurrency,
    # per-request memory, service target), or "prefill pool" where a stated prefill pool keeps up with fewer users'
    # prompts than the decode pool carries
    binding: str
    served_users: int
    capex_usd: float | None  # None: a rented scenario on a platform the catalogue has no purchase price for
    capex_basis: str
    amortization_years: float
    capital_recovery_years: float
    monthly_costs: money.MonthlyCosts
    modeled_monthly_operating_cost_usd: float  # rented: the rent, with the software and staff stated
    rented: bool = False  # the scenario's deployment is rented: its operating figures and $/Mtok are the rent's
    monthly_billing_usd: float
    monthly_operating_cash_usd: float
    simple_payback_months: float | None  # None = never (operating cash ≤ 0), or not owned (no capex)
    capital_recovery_usd_per_month: float | None
    gap_to_capital_recovery_usd_per_month: float | None
    quote_multiplier: float
    quote_multiplier_required: float | None
    private_quote_usd_per_user_month: float | None
    same_model_api_usd_per_user_month: float | None
    api_alternative_usd_per_user_month: float | None
    api_cost_for_served_usd_per_month: float | None
    operating_break_even_usd_per_user_month: float | None
    target_payback_usd_per_user_month: float | None
    per_user_gap_usd_per_month: float | None
    owner_cost_usd_per_mtok: float | None  # per million input + output tokens at the served load, capex amortized (rented: the rent)
    owner_cost_usd_per_mtok_at_capacity: float | None  # per million input + output tokens the loadouts can carry
    owner_cost_usd_per_output_mtok_at_capacity: float | None = None  # per million output tokens (racks' and the seed's basis)
    output_tokens_per_s_per_mw: float | None
    rental: str | None  # the listing compared with (of a median over an even count: the lower middle one)
    rental_listings: int = 0  # on-demand listings rent_usd_per_month is the median of (1: the rental's own price)
    rental_ids: tuple[str, ...] = ()  # those listings, cheapest first
    rental_basis: str | None = None  # what the rent is priced on, e.g. "median of 2 on-demand listings of 8-GPU instances"
    rented_instances: int | None = None  # the listing's whole instances rented, each holding whole engine instances
    rented_instance_gpus: int | None = None  # GPUs in one rented instance
    rented_cells: int | None = None  # replica cells the target needs, rented (at least one)
    rented_cell_gpus: int | None = None  # GPUs of one rented replica cell
    rented_users: int | None = None  # users the rented cells carry (at least the target)
    rented_held_cells: int | None = None  # the cells the paid instances hold: the at-capacity users' on rented cells
    rented_cell: CellCapacity | None = None  # the replica cell rented (its layout, memory and speed)
    api_price: str | None = None  # id of the same-model API price the quote is built on
    api_alternative: str | None = None  # id of the API price compared with
    api_alternative_valid_until: date | None = None  # the last day that price was in force (None: current)
    rent_usd_per_month: float | None  # the cells the target needs rented around the clock, on whole instances
    rent_usd_per_mtok: float | None = None  # that rent per million input + output tokens at the served load
    rent_vs_buy_break_even_months: float | None
    rent_vs_buy_break_even_note: str | None = None  # why there is none though rent and purchase are both priced
    api_break_even_tokens_per_month: float | None
    capacity_tokens_per_month: float = 0.0  # input + output tokens the loadouts carry at their binding limit
    capacity_users: float = 0.0  # the users those tokens are (not floored): the at-capacity cost's users
    # rented on another machine than the owned loadout (a rack's tray): the users above are the rented cells', while
    # the loadouts, gpus, users_per_loadout, capacity and output_tokens_per_s_per_mw stay the owned loadout's
    users_on_rented_cells: bool = False
    migration_break_even_tokens: float | None
    fx_usd_per_eur: float
    fx_basis: str = ""  # the FX rate's source and checked date, printed wherever EUR is shown
    platform_status: str = "shipping"  # the catalogue status of the system (or its GPU when that is roadmap or ramp)
    platform_assumed: tuple[str, ...] = ()  # the platform's figures the plan uses that the catalogue marks assumed
    rates: MoneyRates  # the money inputs used: the scenario's, else its site's and the catalogue's defaults
    recommendation: Recommendation
    assumptions: tuple[str, ...]

    @property
    def fx_text(self) -> str:
        """The FX rate with its source and date, as every EUR figure is printed with it."""
        return f"€1 = ${self.fx_usd_per_eur:g} ({self.fx_basis})"

    @property
    def systems(self) -> int:
        """Systems bought: every loadout's (several when one replica spans them) and a prefill pool's."""
        return self.loadouts * self.systems_per_loadout + self.prefill_systems

    @property
    def users_per_loadout_by_limit(self) -> dict[str, float]:
        """Users one loadout's replica cells carry by each limit (token throughput, concurrency,
        per-request memory): of stated cells, the fullest loadout's, as ``users_per_loadout`` counts them."""
        c = self.capacity
        share = 1.0 if self.stated_replicas is None else min(self.stated_replicas, c.cells) / c.cells
        return {"token throughput": c.users_by_throughput * share, "concurrency": c.users_by_concurrency * share,
                "per-request memory": c.users_by_memory * share}

    @property
    def systems_per_cell(self) -> int:
        """Systems one replica cell spans."""
        return cell_systems(self.capacity.cell.gpus, self.gpus_per_system)

    def eur(self, usd: float | None) -> float | None:
        return None if usd is None else usd / self.fx_usd_per_eur


# a library check names the Deployment or Workload field; in a scenario the same input is this key
SCENARIO_KEYS = {
    "model": "model", "engine": "engine", "engine_version": "engine_version", "quantization": "quantization", "kv_cache_dtype": "kv_cache_dtype",
    "kv_bytes_per_token": "kv_bytes_per_token", "tensor_parallel_size": "cell.tensor_parallel_size",
    "pipeline_parallel_size": "cell.pipeline_parallel_size", "gpu": "platform.gpu", "gpus": "platform",
    "data_parallel_size": "cell.data_parallel_size", "enable_expert_parallel": "cell.enable_expert_parallel",
    "system": "platform.system", "max_model_len": "workload", "input_len": "workload",
    "speculative_method": "speculative.method", "mtp_draft": "speculative.method", "draft_model": "speculative.draft_model",
    "speculative_tokens": "speculative.tokens", "acceptance_rate": "speculative.acceptance_rate",
}


def cell_systems(cell_gpus: int, gpus_per_system: int) -> int:
    """Systems a replica cell of ``cell_gpus`` GPUs spans."""
    return max(1, cell_gpus // gpus_per_system)


@dataclass(frozen=True)
class SizedScenario:
    """What a plan knows before any price: the platform, the workload and the loadouts sized to the target
    (the replica cell whose memory and speed the plan shows)."""

    hardware: Hardware
    workload: WorkloadProfile
    sizing: Sizing

    @property
    def systems_per_cell(self) -> int:
        return cell_systems(self.sizing.capacity.cell.gpus, self.hardware.gpus_per_system)


def sized(s: Scenario, catalog: Catalog | None = None) -> SizedScenario:
    """The scenario sized without its prices, as ``plan`` sizes it: what its replica cell holds and how fast it
    runs are known on a platform no price is given for yet. An error names the scenario key at fault."""
    return _keyed(_sized, s, catalog)


def _keyed(step: Callable[[Scenario, Catalog], T], s: Scenario, catalog: Catalog | None) -> T:
    """``step`` of the scenario, an error naming the scenario key at fault (``SCENARIO_KEYS``)."""
    try:
        return step(s, catalog or load_catalog())
    except InferplanError as exc:
        exc.field = SCENARIO_KEYS.get(exc.field or "", exc.field)
        raise


def _sized(s: Scenario, catalog: Catalog) -> SizedScenario:
    hw = hardware(catalog, s)
    w = _workload(catalog, s)
    return SizedScenario(hw, w, size_loadouts(catalog, s, hw, w))


def plan(s: Scenario, catalog: Catalog | None = None) -> PlanResult:
    """Users, loadouts, costs, payback and the recommendation for one scenario; an error names the
    scenario key at fault."""
    return _keyed(_plan, s, catalog)


def _plan(s: Scenario, catalog: Catalog) -> PlanResult:
    known = _sized(s, catalog)
    hw, w, size = known.hardware, known.workload, known.sizing
    rates = money_rates(catalog, s.money, hw.system, hw.accelerator)
    owned = owned_costs(catalog, s, hw, rates, systems=size.systems, systems_per_loadout=size.systems_per_loadout)
    # staff is paid on either route (``recommend`` adds it to the rent): owning saves the rent against
    # its operating cost without the staff
    rent = rent_route(catalog, s, hw.accelerator.id, size.space, rates.fx_usd_per_eur, owned.capex_usd,
                      owned.operating_usd_per_month - owned.monthly.staff_usd, owned_users=size.served_users,
                      prefill=size.prefill)
    costs = rented_costs(owned, rent) if s.rented else owned  # a renter pays the rent, not the power or space
    size, capacity_users = deployed(s, size, rent, hw.gpus_per_system)
    quotes = _quotes(catalog, s, w, size.served_users, costs)
    tokens = per_token(w, size, rates, costs, quotes.alternative_api_usd, s.money, rent.usd_per_month, capacity_users)
    route = recommend(_route_figures(s, size, owned, quotes, rent, rates, catalog.constant("rent-first-below-use")))
    return _assemble(s, hw, w, size, rates, (owned, costs), quotes, rent, tokens, route, capacity_users,
                     on_rented_cells=size is not known.sizing)


def _workload(catalog: Catalog, s: Scenario) -> WorkloadProfile:
    """The workload preset with the scenario's overrides and speculative decoding."""
    w = resolve_workload(catalog, s.workload)
    if s.speculative is None:
        return w
    return w.model_copy(update={"speculative_tokens": s.speculative.tokens, "acceptance_rate": s.speculative.acceptance_rate})


@dataclass(frozen=True)
class _Quotes:
    """Per-user prices: the APIs', the private quote built on them, and what the loadouts must earn."""

    same_model_api_usd: float | None  # the same model at an API, per user-month
    alternative_api_usd: float | None  # the API compared with (the same one unless named), per user-month
    private_quote_usd: float | None
    billing_usd_per_month: float
    operating_cash_usd_per_month: float
    break_even_usd: float | None  # per user-month, to cover operating costs
    target_payback_usd: float | None  # per user-month, to cover operating costs and capital recovery
    payback_months: float | None  # None = never (operating cash ≤ 0)
    api_cost_for_served_usd_per_month: float | None  # the served users' tokens at the compared API
    note: str | None
    same_model_api_id: str | None = None  # the API price the quote is built on
    alternative_api_id: str | None = None  # the API price compared with
    alternative_api_valid_until: date | None = None


def _payback_months(costs: Costs, billing_usd: float) -> float | None:
    """Months the owned capex takes to pay back out of operating cash (None: never, or not owned)."""
    if costs.rented or costs.capex_usd is None:
        return None
    return money.payback_months(costs.capex_usd, billing_usd - costs.operating_usd_per_month)


def _quotes(catalog: Catalog, s: Scenario, w: WorkloadProfile, served: int, costs: Costs) -> _Quotes:
    m = s.money
    card = resolve_model(catalog, s.model).id  # API prices are the model card's, whatever name the scenario gives
    same = api_price(catalog, card, None)
    alt = api_price(catalog, card, m.api_alternative) if m.api_alternative else same
    same_user = money.api_cost_per_user_usd(w, same) if same else None
    alt_user = money.api_cost_per_user_usd(w, alt) if alt else None
    if m.api_input_usd_per_mtok is not None and m.api_output_usd_per_mtok is not None:  # the user's own API prices
        cached = m.api_input_usd_per_mtok if m.api_cached_input_usd_per_mtok is None else m.api_cached_input_usd_per_mtok
        alt, alt_user = None, money.api_cost_per_user_at(w, m.api_input_usd_per_mtok, cached, m.api_output_usd_per_mtok)
    note = "; ".join(n for n in (
        f"no API price for {s.model} in the catalogue: quote-based outputs are left empty" if same is None else None,
        superseded_api_prices_note(catalog, card, m.api_alternative),
        f"API compared with: {alt.id} is {alt.provider}'s {alt.validity_label}" if alt and alt.superseded else None,
    ) if n) or None
    quote_user = same_user * m.quote_multiplier if same_user is not None else None
    billing = served * quote_user if quote_user is not None else 0.0
    operating = costs.operating_usd_per_month
    return _Quotes(
        same_user, alt_user, quote_user, billing, billing - operating,
        operating / served if served else None,
        (operating + costs.capital_recovery_usd_per_month) / served
        if served and costs.capital_recovery_usd_per_month is not None else None,
        _payback_months(costs, billing),
        served * alt_user if alt_user is not None else None,
        note,
        same.id if same else None,
        alt.id if alt else None,
        alt.valid_until if alt else None,
    )


def _assemble(s: Scenario, hw: Hardware, w: WorkloadProfile, size: Sizing, rates: MoneyRates, both: tuple[Costs, Costs],
              quotes: _Quotes, rent: RentRoute, per_token: PerToken, route: Recommendation, capacity_users: float, *,
              on_rented_cells: bool = False) -> PlanResult:
    """The result; ``both`` is owning's costs (the recommendation's own route) and the deployment's (rented: the rent's)."""
    owned, costs = both
    served, target_user, same_user = size.served_users, quotes.target_payback_usd, quotes.same_model_api_usd
    return PlanResult(
        name=s.name, model=s.model, system=hw.label, accelerator=hw.accelerator.id, workload=w, capacity=size.capacity,
        target_users=s.target_users, loadouts=size.loadouts, stated_replicas=s.replicas, systems_per_loadout=size.systems_per_loadout,
        prefill_instances=size.prefill.instances if size.prefill else None,
        prefill_gpus_per_instance=size.prefill.shape.gpus if size.prefill else None,
        prefill_systems=size.prefill.systems if size.prefill else 0,
        prefill_users=size.prefill.users if size.prefill else None,
        gpus_per_system=hw.gpus_per_system, gpus=costs.gpus, supported_users=size.supported_users, served_users=served,
        users_per_loadout=size.users_per_loadout_run, binding=size.binding, rented=costs.rented,
        capex_usd=costs.capex_usd, capex_basis=costs.capex_basis, amortization_years=rates.amortization_years,
        capital_recovery_years=rates.capital_recovery_years, monthly_costs=costs.monthly,
        modeled_monthly_operating_cost_usd=costs.operating_usd_per_month,
        monthly_billing_usd=quotes.billing_usd_per_month, monthly_operating_cash_usd=quotes.operating_cash_usd_per_month,
        simple_payback_months=quotes.payback_months,
        capital_recovery_usd_per_month=costs.capital_recovery_usd_per_month,
        gap_to_capital_recovery_usd_per_month=(quotes.billing_usd_per_month - costs.operating_usd_per_month
                                               - costs.capital_recovery_usd_per_month
                                               if costs.capital_recovery_usd_per_month is not None else None),
        quote_multiplier=s.money.quote_multiplier,
        quote_multiplier_required=(money.required_multiplier(target_user, same_user)
                                   if same_user and target_user is not None else None),
        private_quote_usd_per_user_month=quotes.private_quote_usd, same_model_api_usd_per_user_month=same_user,
        api_alternative_usd_per_user_month=quotes.alternative_api_usd,
        api_cost_for_served_usd_per_month=quotes.api_cost_for_served_usd_per_month,
        operating_break_even_usd_per_user_month=quotes.break_even_usd, target_payback_usd_per_user_month=target_user,
        per_user_gap_usd_per_month=(quotes.private_quote_usd - target_user
                                    if quotes.private_quote_usd is not None and target_user is not None else None),
        owner_cost_usd_per_mtok=per_token.owner_usd_per_mtok,
        owner_cost_usd_per_mtok_at_capacity=per_token.owner_usd_per_mtok_at_capacity,
        owner_cost_usd_per_output_mtok_at_capacity=per_token.owner_usd_per_output_mtok_at_capacity,
        output_tokens_per_s_per_mw=per_token.output_tokens_per_s_per_mw,
        rental=rent.rental, rental_listings=len(rent.listings), rental_ids=rent.listings, rental_basis=rent.basis,
        rented_instances=rent.instances, rented_instance_gpus=rent.instance_gpus, rented_cells=rent.engine_instances,
        rented_cell_gpus=rent.cell_gpus, rented_users=rent.users, rented_cell=rent.cell,
        rented_held_cells=rent.held_cells,
        rent_usd_per_month=rent.usd_per_month, rent_usd_per_mtok=per_token.rent_usd_per_mtok,
        rent_vs_buy_break_even_months=rent.break_even_months, rent_vs_buy_break_even_note=rent.break_even_note,
        api_price=quotes.same_model_api_id, api_alternative=quotes.alternative_api_id,
        api_alternative_valid_until=quotes.alternative_api_valid_until,
        api_break_even_tokens_per_month=per_token.api_break_even_tokens_per_month,
        capacity_tokens_per_month=per_token.capacity_tokens_per_month,
        capacity_users=capacity_users, users_on_rented_cells=on_rented_cells,
        migration_break_even_tokens=per_token.migration_break_even_tokens,
        fx_usd_per_eur=rates.fx_usd_per_eur, fx_basis=rates.fx_basis,
        platform_status=platform_status(hw),
        platform_assumed=assumed_platform_figures(hw, quoted=bool(s.platform.quote_usd_per_system)),
        rates=rates, recommendation=route,
        assumptions=_assumptions(s, hw, size, rates, costs, quotes, rent),
    )


def _route_figures(s: Scenario, size: Sizing, owned: Costs, quotes: _Quotes, rent: RentRoute,
                   rates: MoneyRates, rent_first_below_use: float) -> RouteFigures:
    """The routes compared: owning at ``owned``'s costs (a rented deployment's too), renting, the API."""
    costs = owned
    return RouteFigures(
        served_users=size.served_users, target_users=s.target_users, supported_users=size.supported_users,
        loadouts=size.loadouts, capex_usd=costs.capex_usd, modeled_monthly_operating_cost_usd=costs.operating_usd_per_month,
        staff_usd_per_month=costs.monthly.staff_usd,
        simple_payback_months=_payback_months(owned, quotes.billing_usd_per_month),
        api_cost_for_served_usd_per_month=quotes.api_cost_for_served_usd_per_month,
        rent_usd_per_month=rent.usd_per_month, hardware_cycle_years=rates.amortization_years,
        rent_first_below_use=rent_first_below_use,
    )


def _own_api_note(m: MoneyInputs) -> str | None:
    if m.api_input_usd_per_mtok is None or m.api_output_usd_per_mtok is None:
        return None
    cached = m.api_input_usd_per_mtok if m.api_cached_input_usd_per_mtok is None else m.api_cached_input_usd_per_mtok
    return (f"API compared with: your prices per million tokens, ${m.api_input_usd_per_mtok:,.4g} input "
            f"(${cached:,.4g} cached), ${m.api_output_usd_per_mtok:,.4g} output")


def _assumptions(s: Scenario, hw: Hardware, size: Sizing, rates: MoneyRates, costs: Costs, quotes: _Quotes,
                 rent: RentRoute) -> tuple[str, ...]:
    """What the plan assumed, in the order its steps assumed it, each once."""
    per_loadout, r = size.systems_per_loadout, rates
    notes = [*size.notes, costs.power_note, quotes.note, _own_api_note(s.money), rent.note]
    if costs.rented:
        extra = costs.monthly.software_usd or costs.monthly.staff_usd
        notes.append(f"rented: the monthly operating cost is the rent{' with the software and staff stated' if extra else ''}; "
                     "a provider's price includes the GPUs' power, cooling and hosting (the listings name storage, egress "
                     "or tax as extra where they are), so none is charged on top, and nothing owned needs support"
                     + ("; the power, colocation and support below price owning the same systems"
                        if costs.capex_usd is not None else ""))
    notes += [
        f"capex: {costs.capex_basis}; {size.loadouts} loadout(s) of {size.loadout_gpus} GPU{'s' if size.loadout_gpus != 1 else ''}"
        + (f" ({per_loadout} × {hw.label} each: one replica of {s.model} needs more GPUs than one system has; "
           "a vendor quote or power figure counts per system)" if per_loadout > 1 else "")
        + (f" and {size.prefill.systems} × {hw.label} more for the prefill pool" if size.prefill else ""),
        f"power {costs.power_w_per_loadout / 1000:,.1f} kW per loadout at {r.utilization:.0%} average draw × PUE "
        f"{r.pue:g} ({r.pue_note}) × ${r.electricity_usd_per_kwh:g}/kWh ({r.electricity_note}); "
        f"colocation ${r.colocation_usd_per_kw_month:g}/kW-month on the maximum draw ({r.colocation_note}); "
        f"{hw.label} stands at the site {r.site} (its defaults: data/economics/sites.yaml)",
        f"amortization {r.amortization_years:g} years; capital-recovery target {r.capital_recovery_years:g} years; "
        f"support {r.support_share_of_capex_per_year:.0%} of capex a year",
        f"FX €1 = ${r.fx_usd_per_eur:g} ({r.fx_basis}); all prices ex VAT",
    ]
    return tuple(dict.fromkeys(n for n in notes if n is not None))
