"""A plan's per-token figures: the owner's (rented: the renter's) cost per million tokens at the served load
and at capacity, output tokens/s per MW, and the token volumes where owning breaks even with the API or a
migration pays back."""

from __future__ import annotations

from dataclasses import dataclass

from inferplan.economics import money
from inferplan.economics.operating import Costs
from inferplan.economics.plan_inputs import MoneyRates
from inferplan.economics.scenario import MoneyInputs
from inferplan.economics.sizing import Sizing
from inferplan.economics.workloads import WorkloadProfile


@dataclass(frozen=True)
class PerToken:
    """Owner cost per million tokens (rented: the renter's), tokens per MW, and the volumes where
    owning breaks even."""

    owner_usd_per_mtok: float | None  # at the served load
    owner_usd_per_mtok_at_capacity: float | None
    owner_usd_per_output_mtok_at_capacity: float | None
    output_tokens_per_s_per_mw: float | None
    api_break_even_tokens_per_month: float | None
    capacity_tokens_per_month: float
    migration_break_even_tokens: float | None
    rent_usd_per_mtok: float | None = None  # the rent route's month at the served load


def at_capacity_output_tokens_per_s(size: Sizing) -> float:
    """Output tokens/s of the replica cells run at capacity, the share of it the prefill pool's prompts allow."""
    decode_users = size.loadouts_run * size.users_per_loadout
    share = size.capacity_users / decode_users if decode_users else 1.0
    return size.loadouts_run * size.capacity.output_tokens_per_s * share


def per_token(w: WorkloadProfile, size: Sizing, rates: MoneyRates, costs: Costs, alternative_api_usd: float | None,
              m: MoneyInputs, rent_usd_per_month: float | None, capacity_users: float) -> PerToken:
    """The deployment's month (``costs``) and rent per million tokens at the served load and at ``capacity_users``,
    its output tokens/s per MW, and the volumes where it breaks even with the API compared with
    (``alternative_api_usd`` per user-month) and with a migration."""
    monthly_tokens = size.served_users * w.monthly_tokens
    rent_mtok = rent_usd_per_month / (monthly_tokens / 1e6) if rent_usd_per_month is not None and monthly_tokens else None
    # the tokens the replica cells run carry at capacity: the users their tightest limit (or the prefill
    # pool's) allows (input tokens included), each with the workload's month
    capacity_tokens = capacity_users * w.monthly_tokens
    owner_month = costs.usd_per_month  # owned: operating + amortized capex; rented: the rent (+ software, staff)
    if owner_month is None:  # not owned, not rented: no owner cost
        return PerToken(None, None, None, None, None, capacity_tokens, None, rent_mtok)
    mw = costs.power_w * rates.pue / 1e6
    alt_user = alternative_api_usd
    blended_api = (alt_user / w.monthly_tokens * 1e6) if alt_user is not None else None  # USD per Mtok
    own_mtok = owner_month / (monthly_tokens / 1e6) if monthly_tokens else None
    migration = None
    if m.migration_cost_usd is not None and m.migration_target_usd_per_mtok is not None and own_mtok is not None:
        migration = money.migration_break_even_tokens(m.migration_cost_usd, own_mtok, m.migration_target_usd_per_mtok)
    return PerToken(
        owner_usd_per_mtok=own_mtok,
        owner_usd_per_mtok_at_capacity=owner_month / (capacity_tokens / 1e6) if capacity_tokens else None,
        owner_usd_per_output_mtok_at_capacity=(owner_month / (capacity_tokens * w.output_share / 1e6)
                                               if capacity_tokens else None),
        output_tokens_per_s_per_mw=at_capacity_output_tokens_per_s(size) / mw if mw else None,
        api_break_even_tokens_per_month=(owner_month / blended_api * 1e6 if blended_api else None),
        capacity_tokens_per_month=capacity_tokens,
        migration_break_even_tokens=migration,
        rent_usd_per_mtok=rent_mtok,
    )
