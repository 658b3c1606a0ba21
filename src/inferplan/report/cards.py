"""The simulator's outputs as labelled, formatted cards — one list the CLI, the reports and the web
page all render, so every shell shows the same figures (formatting only; no arithmetic beyond
the currency conversion at the stored FX rate)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from inferplan.catalog.loader import load_catalog
from inferplan.economics.plan import PlanResult
from inferplan.economics.plan_inputs import NOT_SHIPPING
from inferplan.economics.sizing import PREFILL_POOL_BINDS
from inferplan.economics.uncertainty import Uncertainty
from inferplan.report.money import money_text, monthly_text
from inferplan.report.sources import SourceNote
from inferplan.units import fmt_billions, plural


class Card(BaseModel):
    model_config = ConfigDict(frozen=True, defer_build=True)

    key: str
    label: str
    value: str
    note: str = ""
    sources: list[SourceNote] = []  # catalogue records the figure rests on (a price band, an API or rental price)


def plan_money(r: PlanResult, usd: float | None, currency: str, digits: int = 0) -> str:
    """An amount in US dollars shown in ``currency`` ("eur": at the plan's rate) to ``digits`` decimals; "—" for None."""
    if usd is None:
        return "—"
    amount, symbol = (r.eur(usd), "€") if currency == "eur" else (usd, "$")
    return money_text(amount, symbol, digits)


def _monthly(r: PlanResult, usd: float | None, currency: str) -> str:
    """A monthly amount: whole units from 10, cents below (a $0.20 API bill is not "$0")."""
    if usd is None:
        return "—"
    return monthly_text(*((r.eur(usd), "€") if currency == "eur" else (usd, "$")))


def _beyond_capacity(r: PlanResult) -> str:
    """Say when owning only breaks even past what the loadouts can carry (nothing, when no user is carried)."""
    need = r.api_break_even_tokens_per_month
    if need is None or need <= r.capacity_tokens_per_month:
        return ""
    if r.capacity_tokens_per_month <= 0:
        return "unreachable: the loadouts carry no user at the speed target"
    return (f"beyond the {fmt_billions(r.capacity_tokens_per_month, ',.2f')} tokens / month these loadouts carry: even fully used, "
            f"{'renting' if r.rented else 'owning'} costs more per token than the API")


def headline_notes(r: PlanResult) -> list[str]:
    """What the headline figures must be read with: a platform the catalogue lists as roadmap or ramp
    (not shipping) is priced and sped from planning figures, which of them assumed; and the stored runs of the
    cell's deployment, the one its speed comes from or why one is not used."""
    return [*_platform_note(r), *r.capacity.cell.own_runs]


def _platform_note(r: PlanResult) -> list[str]:
    if r.platform_status not in NOT_SHIPPING:
        return []
    *rest, last = r.platform_assumed or ("",)
    named = f"{', '.join(rest)} and {last}" if rest else last
    assumed = (f"its {named} {'is' if len(r.platform_assumed) == 1 else 'are'} assumed "
               "in the catalogue, not quoted or measured" if r.platform_assumed else
               "its figures are early published or derived ones, not measured on shipping systems")
    return [f"{r.system} is a {r.platform_status} platform (catalogue status: {r.platform_status}, not shipping): "
            f"{assumed}; read its capex, users and payback as planning figures"]


def recommendation_reasons(r: PlanResult, currency: str = "usd") -> list[str]:
    """The recommendation's reasons, each route's monthly cost first, in ``currency``."""
    rec = r.recommendation
    costs = ", ".join(f"{_ROUTE_COSTS.get(route, route)} {_monthly(r, usd, currency)}" for route, usd in rec.monthly_usd.items())
    return [f"monthly cost of each route: {costs}", *rec.reasons] if costs else list(rec.reasons)


# how each route's monthly cost is named beside the recommendation (which names the route itself)
_ROUTE_COSTS = {"stay on an API": "API", "own": "owning", "rent dedicated capacity": "renting"}


def plan_cards(r: PlanResult, currency: str = "usd") -> list[Card]:
    m = lambda usd, digits=0: plan_money(r, usd, currency, digits)  # noqa: E731
    cycle_months = r.amortization_years * 12
    payback = ("— (not owned)" if r.capex_usd is None or r.rented else "never" if r.simple_payback_months is None else
               f"{r.simple_payback_months:,.1f} months" if r.simple_payback_months <= cycle_months else
               f"{r.simple_payback_months:,.0f} months, beyond the {r.amortization_years:g}-year hardware cycle")
    required = "—" if r.quote_multiplier_required is None else f"{r.quote_multiplier_required:g}×"
    owner = "Rented" if r.rented else "Owner"
    return [
        Card(key="operating_cash", label="Monthly operating cash", value=_monthly(r, r.monthly_operating_cash_usd, currency),
             note="private billing minus modeled monthly operating cost"),
        Card(key="payback", label="Simple capex payback", value=payback,
             note="capex ÷ positive monthly operating cash; excludes financing and demand ramp"),
        Card(key="recovery_gap", label="Gap to capital-recovery target", value=m(r.gap_to_capital_recovery_usd_per_month),
             note=f"per month, with capex recovered in {r.capital_recovery_years:g} years"),
        Card(key="private_quote", label="Selected private quote / user / month", value=m(r.private_quote_usd_per_user_month, 2),
             note=f"same-model API × {r.quote_multiplier:g}"),
        Card(key="same_model_api", label="Same-model API / user / month", value=m(r.same_model_api_usd_per_user_month, 2)),
        Card(key="break_even", label="Operating break-even / served user / month", value=m(r.operating_break_even_usd_per_user_month, 2),
             note="modeled monthly operating cost ÷ served users"),
        Card(key="target_payback", label="Target-payback price / served user / month", value=m(r.target_payback_usd_per_user_month, 2)),
        Card(key="user_gap", label="Per-user gap to target-payback price", value=m(r.per_user_gap_usd_per_month, 2)),
        Card(key="users", label="Estimated supported users", value=f"{r.supported_users:,}",
             note=(f"the rented cells' ({_rented_cells(r).removesuffix('; ')}); owning: " if r.users_on_rented_cells else "")
             + f"{_per_loadout(r)}; binding: {_binding(r)}"),
        Card(key="loadouts", label="Auto-sized loadouts for target" if r.stated_replicas is None else
             f"Loadouts holding the {r.stated_replicas:,} stated replica cell{'s' if r.stated_replicas != 1 else ''}",
             value=f"{r.loadouts}" if r.supported_users else f"{r.loadouts} priced, none carries a user",
             note=_loadouts_note(r)),
        Card(key="api_alternative", label="Selected API alternative / user / month", value=m(r.api_alternative_usd_per_user_month, 2),
             note=(f"list price until {r.api_alternative_valid_until.isoformat()}" if r.api_alternative_valid_until else
                   "" if r.api_alternative or r.api_alternative_usd_per_user_month is None else "at your API prices")),
        Card(key="multiplier", label="Selected private quote multiplier", value=f"{r.quote_multiplier:g}×"),
        Card(key="multiplier_required", label="Quote multiplier required for target", value=required,
             note="rounded up to the next 0.25× step"),
        Card(key="operating_cost", label="Modeled monthly operating cost", value=_monthly(r, r.modeled_monthly_operating_cost_usd, currency),
             note=_operating_note(r)),
        Card(key="billing", label="Monthly private billing at selected price", value=_monthly(r, r.monthly_billing_usd, currency)),
        Card(key="api_cost", label="Selected API cost for served target", value=_monthly(r, r.api_cost_for_served_usd_per_month, currency)),
        Card(key="capex", label="Capex", value=m(r.capex_usd), note=r.capex_basis),
        Card(key="cost_per_mtok", label=f"{owner} cost / million tokens at your {plural(r.served_users, 'user')}",
             value=m(r.owner_cost_usd_per_mtok, 3), note="input + output; the month's cost over the served users' tokens"),
        Card(key="cost_per_mtok_at_capacity",
             label=f"{owner} cost / million tokens at capacity ({r.capacity_users:,.1f} users)",
             value=m(r.owner_cost_usd_per_mtok_at_capacity, 3),
             note=f"input + output, {capacity_users_note(r) or _full(r)}; per million output tokens at capacity: "
                  f"{m(r.owner_cost_usd_per_output_mtok_at_capacity, 3)}"),
        Card(key="tokens_per_mw", label="Output tokens/s per MW",
             value="—" if r.output_tokens_per_s_per_mw is None else f"{r.output_tokens_per_s_per_mw:,.0f}"),
        Card(key="rent", label="Renting for the target / month", value=m(r.rent_usd_per_month),
             note=_rented_cells(r) + ("" if r.rent_usd_per_mtok is None else f"{m(r.rent_usd_per_mtok, 3)} per million tokens "
                                                                               "(input + output) served; ")
             + (_rental_note(r) if r.rental or r.rent_usd_per_month is None else "at your rate per GPU-hour")),
        Card(key="rent_break_even", label="Rent-vs-buy break-even",
             value="—" if r.rent_vs_buy_break_even_months is None else f"{r.rent_vs_buy_break_even_months:,.1f} months",
             note=r.rent_vs_buy_break_even_note or ""),
        Card(key="api_break_even", label="API break-even volume",
             value="—" if r.api_break_even_tokens_per_month is None else f"{fmt_billions(r.api_break_even_tokens_per_month, ',.2f')} tokens / month",
             note=_beyond_capacity(r)),
        Card(key="migration_break_even", label="Migration break-even volume",
             value="—" if r.migration_break_even_tokens is None else f"{fmt_billions(r.migration_break_even_tokens, ',.2f')} tokens",
             note="porting cost ÷ per-token saving; state a porting cost and a target price per million tokens "
                  "in the scenario's money section to compute it"),
        Card(key="recommendation", label="Recommendation", value=r.recommendation.route,
             note="; ".join(recommendation_reasons(r, currency))),
    ]


def _full(r: PlanResult) -> str:
    return f"the {'rented cells' if r.users_on_rented_cells else 'loadouts'} full"


def capacity_users_note(r: PlanResult) -> str:
    """Why the users at capacity differ from the supported users: rented cells where the paid instances hold more
    cells than the target needs, else the tokens the binding limit allows, not whole users; empty where they agree.
    The at-capacity card carries it, and a headline without the cards' notes prints it beside them."""
    if not r.capacity_users or r.capacity_users == r.supported_users:
        return ""
    held, cells = r.rented_held_cells or 0, r.rented_cells or 0
    if r.users_on_rented_cells and held > cells:
        return (f"{_full(r)} at their binding limit: the tokens of {r.capacity_users:,.1f} users, those of the "
                f"{held:,} cells the paid instances hold, where the supported users ({r.supported_users:,}) are "
                f"those of the {cells:,} cell{'s' if cells != 1 else ''} the target needs")
    # whole users per replica cell where the target's cells are rented, per loadout where the loadouts carry them;
    # stated replicas floor their users once over all the cells
    per = "" if r.stated_replicas is not None else " per rented cell" if r.users_on_rented_cells else " per loadout"
    return (f"{_full(r)} at their binding limit: the tokens of {r.capacity_users:,.1f} users, where the supported "
            f"users ({r.supported_users:,}) count whole users{per}")


def capacity_users_headline(r: PlanResult) -> str:
    """The at-capacity note where a headline prints it beside the figures: only where the users at capacity are a
    whole user or more beyond the supported users (a fraction of one is the card's detail, which --explain shows)."""
    if r.capacity_users is None or abs(r.capacity_users - r.supported_users) < 1:
        return ""
    return capacity_users_note(r)


def _binding(r: PlanResult) -> str:
    """What limits the supported users: a loadout's tightest limit, or the prefill pool where it keeps up with
    fewer users' prompts than the decode pool carries."""
    if r.binding != PREFILL_POOL_BINDS:
        return r.binding
    n = r.prefill_instances or 0
    return (f"the prefill pool ({n:,} instance{'s' if n != 1 else ''} keep{'s' if n == 1 else ''} up with "
            f"{r.supported_users:,} users' prompts, fewer than the decode pool carries)")


def _per_loadout(r: PlanResult) -> str:
    """The users one loadout carries: stated replica cells that leave some of a loadout's cells to a
    prefill pool (or idle) count only their own."""
    c, k = r.capacity, r.stated_replicas
    text = f"{r.users_per_loadout:,} per loadout"
    if k is None or k >= c.cells or not r.supported_users:
        return text
    runs = "the decode pool's" if r.prefill_instances is not None else "the stated"
    rest = "; the prefill pool shares its GPUs" if r.prefill_instances is not None and r.prefill_systems == 0 else ""
    return f"{text} ({runs} {k:,} replica cell{'s' if k != 1 else ''} of the {c.cells} it has room for{rest})"


def _operating_note(r: PlanResult) -> str:
    """What the operating cost is made of when rented: the rent, no power or space on top."""
    if not r.rented:
        return ""
    extra = " with the software and staff stated" if r.monthly_costs.software_usd or r.monthly_costs.staff_usd else ""
    return f"rented: the rent{extra}; the provider's price includes power, cooling and hosting"


def _loadouts_note(r: PlanResult) -> str:
    """What the loadouts are: systems and GPUs, a replica spanning systems, a prefill pool beside them."""
    c = r.capacity
    if r.prefill_instances is not None:
        what = (f"{r.loadouts} × {r.system} for the replica cells (the decode pool) and {r.prefill_systems} more for a "
                f"prefill pool of {r.prefill_instances:,} instance{'s' if r.prefill_instances != 1 else ''} of "
                f"{r.prefill_gpus_per_instance} GPU{'s' if r.prefill_gpus_per_instance != 1 else ''} "
                f"({r.systems} systems, {r.gpus} GPUs)")
    elif r.systems_per_loadout == 1 or not r.supported_users:
        what = f"{r.loadouts} × {r.system} ({r.gpus} GPU{'s' if r.gpus != 1 else ''})"
    else:
        what = (f"{r.loadouts} × {r.systems_per_loadout} {r.system} ({r.systems} systems, "
                f"{r.gpus} GPUs; one replica spans {r.systems_per_loadout} systems)")
    if not r.supported_users:
        return f"no loadout carries a user ({c.binding} binds): {what} is priced"
    if r.users_on_rented_cells:
        return f"{what}, what owning would run; the rented cells are another machine (the rent's)"
    if r.served_users < r.target_users:  # stated cells, or a prefill pool, carry fewer than the target
        return f"{what}, serving {r.served_users:,} of the {r.target_users:,} target users"
    return f"{what} for {plural(r.target_users, 'user')}"


def _rented_cells(r: PlanResult) -> str:
    """What the rent is for: the replica cells the target needs (none: no rent)."""
    if r.rented_cells is None or r.rent_usd_per_month is None:
        return ""
    gpus = r.rented_cells * r.rented_cell_gpus
    on = (f" on {r.rented_instances:,} rented {r.rented_instance_gpus}-GPU instance{'s' if r.rented_instances != 1 else ''}"
          if r.rented_instances else "")
    return (f"{r.rented_cells:,} replica cell{'s' if r.rented_cells != 1 else ''} of {r.rented_cell_gpus} GPU"
            f"{'s' if r.rented_cell_gpus != 1 else ''} ({gpus:,} GPU{'s' if gpus != 1 else ''}){_prefill_pool(r)}{on}, carrying "
            f"{plural(r.rented_users, 'user')}; ")


def _prefill_pool(r: PlanResult) -> str:
    """Separate pools: the prefill pool rented beside the replica cells, which are the decode pool (none: "")."""
    if r.prefill_instances is None:
        return ""
    return (f" beside a prefill pool of {r.prefill_instances:,} instance{'s' if r.prefill_instances != 1 else ''} of "
            f"{r.prefill_gpus_per_instance} GPU{'s' if r.prefill_gpus_per_instance != 1 else ''}")


def _rental_note(r: PlanResult) -> str:
    """Where a plan's rent comes from: the median of the on-demand listings of one instance size, or the
    one listing whose price it is, as its provider lists it (the ids stay in --json)."""
    if r.rental is None:
        return "no rental price"
    if r.rental_listings > 1:
        return f"the {r.rental_basis}"
    listing = load_catalog().rental_prices.records.get(r.rental)
    if listing is None:
        return r.rental
    where = "" if listing.region == "unspecified" else f", {listing.region}"
    return f"{listing.provider.capitalize()}, {listing.instance}{where}, on demand"


class BandRow(BaseModel):
    """One Monte Carlo output's P10, P50 and P90, formatted (money in the plan's chosen currency)."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    label: str
    p10: str
    p50: str
    p90: str


def uncertainty_rows(u: Uncertainty, r: PlanResult, currency: str = "usd") -> list[BandRow]:
    """The uncertainty bands, each figure formatted as the cards format it; an output with no draw
    (payback where none pays back) is absent."""
    money = lambda digits: lambda usd: plan_money(r, usd, currency, digits)  # noqa: E731
    bands = (
        ("Target-payback price / user / month", u.target_payback_usd_per_user_month, money(2)),
        ("Operating break-even / user / month", u.operating_break_even_usd_per_user_month, money(2)),
        ("Owner cost / million tokens (input + output)", u.owner_cost_usd_per_mtok, money(3)),
        ("Loadouts", u.loadouts, "{:,.0f}".format),
        ("Payback (draws that pay back)", u.payback_months, "{:,.1f} months".format),
    )
    return [BandRow(label=label, p10=fmt(b.p10), p50=fmt(b.p50), p90=fmt(b.p90)) for label, b, fmt in bands if b is not None]
