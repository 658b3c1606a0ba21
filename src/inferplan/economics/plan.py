"""``plan(scenario)``: the Users + ROI simulator's outputs for one scenario.

Capacity comes from the memory and speed models (``capacity.py``); money from the catalogue's
price bands, cost defaults, API and rental prices (``money.py``). Every output the seed's
simulator shows is here, plus cost per million tokens, tokens/s per MW, rent-vs-buy and API
break-even volumes, and a route recommendation with the figures that decide it.
"""

from __future__ import annotations

import math

from pydantic import BaseModel, ConfigDict

from inferplan.catalog.economics_schema import ApiPrice, RentalPrice
from inferplan.catalog.loader import Catalog, load_catalog
from inferplan.economics import money
from inferplan.economics.capacity import LoadoutCapacity, loadout_capacity, spanning_cell
from inferplan.economics.workloads import WorkloadProfile, resolve_workload
from inferplan.errors import InferplanError, InvalidScenarioError
from inferplan.memory.deployment import Deployment
from inferplan.scenario import Cell, Scenario

# cost_defaults ids used when a scenario leaves a money input out
DEFAULTS = {
    "fx": "fx-eur-usd",
    "electricity": "electricity-us-industrial",
    "pue": "pue-global-average",
    "colocation": "colocation-us-primary",
    "support": "hardware-support-share",
    "amortization": "amortization-years",
    "recovery": "capital-recovery-years",
    "utilization": "utilization-default",
}
NVAIE = {"nvaie-1-year": "nvaie-1-year", "nvaie-5-year": "nvaie-5-year", "nvaie-perpetual": "nvaie-perpetual"}


class Recommendation(BaseModel):
    model_config = ConfigDict(frozen=True)

    route: str  # "stay on an API" | "rent dedicated capacity" | "own"
    reasons: tuple[str, ...]  # what decided it, in words (money is in ``monthly_usd``, formatted by the shells)
    monthly_usd: dict[str, float] = {}  # each route's monthly cost, cheapest first


class PlanResult(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    model: str
    system: str
    accelerator: str
    workload: WorkloadProfile
    capacity: LoadoutCapacity
    target_users: int
    loadouts: int  # auto-sized to carry the target
    systems_per_loadout: int = 1  # more than 1 when one replica of the model needs several systems
    gpus_per_system: int = 1
    gpus: int
    supported_users: int  # by all loadouts
    served_users: int
    capex_usd: float
    capex_basis: str
    amortization_years: float
    capital_recovery_years: float
    monthly_costs: money.MonthlyCosts
    modeled_monthly_operating_cost_usd: float
    monthly_billing_usd: float
    monthly_operating_cash_usd: float
    simple_payback_months: float | None  # None = never (operating cash ≤ 0)
    capital_recovery_usd_per_month: float
    gap_to_capital_recovery_usd_per_month: float
    quote_multiplier: float
    quote_multiplier_required: float | None
    private_quote_usd_per_user_month: float | None
    same_model_api_usd_per_user_month: float | None
    api_alternative_usd_per_user_month: float | None
    api_cost_for_served_usd_per_month: float | None
    operating_break_even_usd_per_user_month: float | None
    target_payback_usd_per_user_month: float | None
    per_user_gap_usd_per_month: float | None
    owner_cost_usd_per_mtok: float | None  # per million input + output tokens at the served load, capex amortized
    owner_cost_usd_per_mtok_at_capacity: float | None  # per million input + output tokens the loadouts can carry
    owner_cost_usd_per_output_mtok_at_capacity: float | None = None  # per million output tokens (racks' and the seed's basis)
    output_tokens_per_s_per_mw: float | None
    rental: str | None
    api_price: str | None = None  # id of the same-model API price the quote is built on
    api_alternative: str | None = None  # id of the API price compared with
    rent_usd_per_month: float | None  # the same GPUs rented around the clock
    rent_vs_buy_break_even_months: float | None
    api_break_even_tokens_per_month: float | None
    capacity_tokens_per_month: float = 0.0  # input + output tokens the loadouts carry at their binding limit
    migration_break_even_tokens: float | None
    fx_usd_per_eur: float
    recommendation: Recommendation
    assumptions: tuple[str, ...]

    @property
    def systems(self) -> int:
        """Systems bought: every loadout's (several when one replica spans them)."""
        return self.loadouts * self.systems_per_loadout

    @property
    def systems_per_cell(self) -> int:
        """Systems one replica cell spans."""
        return max(1, self.capacity.cell.gpus // self.gpus_per_system)

    def eur(self, usd: float | None) -> float | None:
        return None if usd is None else usd / self.fx_usd_per_eur


def _cost(catalog: Catalog, key: str, attr: str) -> float:
    record = catalog.cost_defaults.records[DEFAULTS.get(key, key)]
    return getattr(record, attr).value


def _default_pue(catalog: Catalog, system) -> tuple[float, str]:
    """The PUE a plan assumes when the scenario states none: a direct-liquid-cooled system needs a
    facility built for it (the seed lists CDUs as required), planned at the liquid-cooled figure;
    anything else at the survey's global average, which legacy air-cooled sites dominate."""
    if system is not None and (system.cooling or "").startswith("direct-liquid"):
        return _cost(catalog, "pue-liquid-cooled", "ratio"), f"{system.id} is direct-liquid-cooled: pue-liquid-cooled"
    return _cost(catalog, "pue", "ratio"), "pue-global-average"


def _platform(catalog: Catalog, s: Scenario):
    p = s.platform
    if p.system:
        system = catalog.system(p.system, "platform.system")
        accel = catalog.accelerators.records[system.accelerator]
        gpus = system.accelerator_count
        return system.id, accel, gpus, system
    accel = catalog.accelerator(p.gpu or "", "platform.gpu")
    return f"{p.gpus}x-{accel.id}", accel, int(p.gpus or 1), None


def _capex(s: Scenario, system, systems: int) -> tuple[float, str]:
    point = s.platform.price_point
    if s.platform.quote_usd_per_system:
        return s.platform.quote_usd_per_system * systems, "vendor quote"
    band = system.price if system else None
    if band is None or band.usd_low is None:
        raise InvalidScenarioError(
            f"{system.name if system else 'this platform'} has no price band in the catalogue; give a vendor quote",
            field="platform.quote_usd_per_system",
        )
    low = band.usd_low.value
    high = band.usd_high.value if band.usd_high else low
    value = {"low": low, "high": high, "mid": (low + high) / 2}[point]
    return value * systems, f"{point} of the catalogue price band ({band.basis})"


def _power_w(s: Scenario, system, accel) -> tuple[float, str | None]:
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


def _api_price(catalog: Catalog, model: str, wanted: str | None) -> ApiPrice | None:
    if wanted:
        return catalog.api_prices.get(wanted, field_name="money.api_alternative", error=InvalidScenarioError)
    same = [p for p in catalog.api_prices if p.model == model]
    same.sort(key=lambda p: (p.provider != "openrouter", p.output_usd_per_mtok.value))
    return same[0] if same else None


def _rental(catalog: Catalog, accel_id: str, wanted: str | None, fx: float) -> tuple[RentalPrice | None, float | None, str | None]:
    """The rental price to compare with: the one named, else the median on-demand listing for the GPU
    (marketplace floors and hyperscaler list prices both sit far from what a buyer pays)."""
    if wanted:
        r = catalog.rental_prices.get(wanted, field_name="money.rental", error=InvalidScenarioError)
        if r.accelerator != accel_id:  # renting other GPUs says nothing about when buying these pays off
            same = sorted(x.id for x in catalog.rental_prices if x.accelerator == accel_id)
            raise InvalidScenarioError(f"{r.id} rents {r.accelerator}, not the platform's {accel_id}",
                                       field="money.rental", allowed=", ".join(same) or f"no listing for {accel_id}")
        hourly = _hourly_usd(r, fx)
        if hourly is None:
            raise InvalidScenarioError(f"{r.id} lists no on-demand price to compare with", field="money.rental")
        return r, hourly, None
    options = sorted(((r, h) for r in catalog.rental_prices if r.accelerator == accel_id
                      if (h := _hourly_usd(r, fx)) is not None), key=lambda o: o[1])
    if not options:
        return None, None, None
    r, h = options[(len(options) - 1) // 2]
    note = (f"rent: median of {len(options)} on-demand listings for {accel_id} "
            f"(${options[0][1]:.2f}–${options[-1][1]:.2f} per GPU-hour): {r.id} at ${h:.2f}")
    return r, h, note


def _hourly_usd(r: RentalPrice, fx: float) -> float | None:
    if r.on_demand_usd_per_gpu_hour:
        return r.on_demand_usd_per_gpu_hour.value
    if r.on_demand_eur_per_gpu_hour:
        return r.on_demand_eur_per_gpu_hour.value * fx
    return None


# a library check names the flag a CLI user would type; in a scenario the same input is this key
SCENARIO_KEYS = {
    "--model": "model", "--engine": "engine", "--quantization": "quantization", "--kv-cache-dtype": "kv_cache_dtype",
    "--kv-bytes-per-token": "kv_bytes_per_token", "--tensor-parallel-size": "cell.tensor_parallel_size",
    "--pipeline-parallel-size": "cell.pipeline_parallel_size", "--gpu": "platform.gpu", "--gpus": "platform",
    "--data-parallel-size": "cell.data_parallel_size", "--enable-expert-parallel": "cell.enable_expert_parallel",
    "--system": "platform.system", "--max-model-len": "workload", "--input-len": "workload",
}


def plan(s: Scenario, catalog: Catalog | None = None) -> PlanResult:
    """Users, loadouts, costs, payback and the recommendation for one scenario; an error names the
    scenario key at fault."""
    try:
        return _plan(s, catalog or load_catalog())
    except InferplanError as exc:
        exc.field = SCENARIO_KEYS.get(exc.field or "", exc.field)
        raise


def _plan(s: Scenario, catalog: Catalog) -> PlanResult:
    m = s.money
    system_id, accel, node_gpus, system = _platform(catalog, s)
    w = resolve_workload(catalog, s.workload)
    if s.speculative is not None:
        w = w.model_copy(update={"speculative_tokens": s.speculative.tokens, "acceptance_rate": s.speculative.acceptance_rate})
    cell = s.cell or Cell()  # the search starts from one GPU when no cell is stated
    base = Deployment(
        model=s.model, gpu=accel.id, quantization=s.quantization, engine=s.engine, kv_cache_dtype=s.kv_cache_dtype,
        kv_bytes_per_token=s.kv_bytes_per_token,
        tensor_parallel_size=cell.tensor_parallel_size, pipeline_parallel_size=cell.pipeline_parallel_size,
        data_parallel_size=cell.data_parallel_size if cell.enable_expert_parallel else None,
        enable_expert_parallel=cell.enable_expert_parallel,
        max_model_len=w.input_tokens_per_request + w.output_tokens_per_request,
    )
    fixed = s.cell is not None  # a stated cell is kept as stated, TP 1 included
    # a model no single system holds: a loadout is the fewest systems one replica cell needs
    start, per_loadout = spanning_cell(catalog, base, system, cell_fixed=fixed) if system else (None, 1)
    loadout_gpus = node_gpus * per_loadout
    label = system_id if per_loadout == 1 else f"{per_loadout}× {system_id}"
    cap = loadout_capacity(catalog, base, w, system_gpus=loadout_gpus, system=label, cell_fixed=fixed,
                           nodes=(system.id, node_gpus) if per_loadout > 1 else None, start=start)
    assumptions = list(cap.assumptions)
    users_per_loadout = min(cap.users_by_throughput, cap.users_by_concurrency, cap.users_by_memory)
    if cap.supported_users:
        loadouts = max(1, math.ceil(s.target_users / cap.supported_users))
        supported = cap.supported_users * loadouts
    elif cap.cell.meets_target and users_per_loadout > 0:  # a user heavier than one loadout: several carry each
        loadouts = math.ceil(s.target_users / users_per_loadout)
        supported = math.floor(users_per_loadout * loadouts)
        assumptions.append(f"one user's traffic needs {1 / users_per_loadout:,.1f} loadouts ({cap.binding} binds): "
                           f"{loadouts:,} carry {s.target_users:,}")
    else:
        loadouts, supported = 1, 0
    served = min(s.target_users, supported)

    fx = _cost(catalog, "fx", "usd_per_eur")
    amort = m.amortization_years or _cost(catalog, "amortization", "count")
    recovery = m.capital_recovery_years or _cost(catalog, "recovery", "count")
    util = m.utilization or _cost(catalog, "utilization", "ratio")
    kwh = m.electricity_usd_per_kwh if m.electricity_usd_per_kwh is not None else _cost(catalog, "electricity", "usd")
    pue, pue_note = (m.pue, "stated") if m.pue else _default_pue(catalog, system)
    colo = m.colocation_usd_per_kw_month if m.colocation_usd_per_kw_month is not None else _cost(catalog, "colocation", "usd")
    support = m.support_share_of_capex_per_year if m.support_share_of_capex_per_year is not None else _cost(catalog, "support", "ratio")
    capex, basis = _capex(s, system, loadouts * per_loadout)
    power_w, power_note = _power_w(s, system, accel)
    power_w *= per_loadout
    if power_note:
        assumptions.append(power_note)
    gpus = loadout_gpus * loadouts
    nvaie = {k: _cost(catalog, v, "usd") for k, v in NVAIE.items()}
    costs = money.MonthlyCosts(
        power_usd=loadouts * money.power_cost_usd(power_w, utilization=util, pue=pue, usd_per_kwh=kwh),
        colocation_usd=loadouts * money.colocation_cost_usd(power_w, colo),
        software_usd=money.software_cost_usd(gpus, m.software, nvaie, amort),
        support_usd=capex * support / 12,
        staff_usd=m.staff_usd_per_month,
    )
    operating = costs.operating_usd
    recovery_month = capex / (recovery * 12)
    amortized = capex / (amort * 12)

    same = _api_price(catalog, s.model, None)
    alt = _api_price(catalog, s.model, m.api_alternative) if m.api_alternative else same
    same_user = money.api_cost_per_user_usd(w, same) if same else None
    alt_user = money.api_cost_per_user_usd(w, alt) if alt else None
    if same is None:
        assumptions.append(f"no API price for {s.model} in the catalogue: quote-based outputs are left empty")
    quote_user = same_user * m.quote_multiplier if same_user is not None else None
    billing = served * quote_user if quote_user is not None else 0.0
    cash = billing - operating
    be_user = operating / served if served else None
    target_user = (operating + recovery_month) / served if served else None

    monthly_tokens = served * w.monthly_tokens
    # the tokens the loadouts carry at capacity: the users their tightest limit allows (input tokens
    # included), each with the workload's month
    capacity_tokens = loadouts * users_per_loadout * w.monthly_tokens
    owner_month = operating + amortized
    rental, hourly, rental_note = _rental(catalog, accel.id, m.rental, fx)
    if rental_note:
        assumptions.append(rental_note)
    rent_month = hourly * gpus * money.HOURS_PER_MONTH if hourly is not None else None
    mw = power_w * loadouts * pue / 1e6
    blended_api = (alt_user / w.monthly_tokens * 1e6) if alt_user is not None else None  # USD per Mtok
    own_mtok = owner_month / (monthly_tokens / 1e6) if monthly_tokens else None
    migration = None
    if m.migration_cost_usd is not None and m.migration_target_usd_per_mtok is not None and own_mtok is not None:
        migration = money.migration_break_even_tokens(m.migration_cost_usd, own_mtok, m.migration_target_usd_per_mtok)
    result = dict(
        name=s.name, model=s.model, system=system_id, accelerator=accel.id, workload=w, capacity=cap,
        target_users=s.target_users, loadouts=loadouts, systems_per_loadout=per_loadout, gpus_per_system=node_gpus, gpus=gpus, supported_users=supported, served_users=served,
        capex_usd=capex, capex_basis=basis, amortization_years=amort, capital_recovery_years=recovery, monthly_costs=costs, modeled_monthly_operating_cost_usd=operating,
        monthly_billing_usd=billing, monthly_operating_cash_usd=cash,
        simple_payback_months=money.payback_months(capex, cash),
        capital_recovery_usd_per_month=recovery_month,
        gap_to_capital_recovery_usd_per_month=billing - operating - recovery_month,
        quote_multiplier=m.quote_multiplier,
        quote_multiplier_required=money.required_multiplier(target_user, same_user) if same_user and target_user is not None else None,
        private_quote_usd_per_user_month=quote_user, same_model_api_usd_per_user_month=same_user,
        api_alternative_usd_per_user_month=alt_user,
        api_cost_for_served_usd_per_month=served * alt_user if alt_user is not None else None,
        operating_break_even_usd_per_user_month=be_user, target_payback_usd_per_user_month=target_user,
        per_user_gap_usd_per_month=quote_user - target_user if quote_user is not None and target_user is not None else None,
        owner_cost_usd_per_mtok=own_mtok,
        owner_cost_usd_per_mtok_at_capacity=owner_month / (capacity_tokens / 1e6) if capacity_tokens else None,
        owner_cost_usd_per_output_mtok_at_capacity=(owner_month / (capacity_tokens * w.output_share / 1e6)
                                                    if capacity_tokens else None),
        output_tokens_per_s_per_mw=loadouts * cap.output_tokens_per_s / mw if mw else None,
        rental=rental.id if rental else None, rent_usd_per_month=rent_month,
        api_price=same.id if same else None, api_alternative=alt.id if alt else None,
        rent_vs_buy_break_even_months=(capex / (rent_month - operating) if rent_month and rent_month > operating else None),
        api_break_even_tokens_per_month=(owner_month / blended_api * 1e6 if blended_api else None),
        capacity_tokens_per_month=capacity_tokens,
        migration_break_even_tokens=migration,
        fx_usd_per_eur=fx,
    )
    from inferplan.economics.recommend import recommend  # after the numbers it reads

    result["recommendation"] = recommend(result, amort)
    assumptions += [
        f"capex: {basis}; {loadouts} loadout(s) of {loadout_gpus} GPUs"
        + (f" ({per_loadout} × {system_id} each: one replica of {s.model} needs more GPUs than one system has; "
           "a vendor quote or power figure counts per system)" if per_loadout > 1 else ""),
        f"power {power_w / 1000:,.1f} kW per loadout at {util:.0%} average draw × PUE {pue:g} ({pue_note}) × ${kwh:g}/kWh; "
        f"colocation ${colo:g}/kW-month on the maximum draw",
        f"amortization {amort:g} years; capital-recovery target {recovery:g} years; support {support:.0%} of capex a year",
        f"FX €1 = ${fx:g}; all prices ex VAT",
    ]
    return PlanResult(**result, assumptions=tuple(dict.fromkeys(assumptions)))
