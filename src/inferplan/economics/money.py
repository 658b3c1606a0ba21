"""Money: capex, monthly operating cost, API costs and the prices that follow from them.

Every amount is USD inside (``*_usd``); EUR is rendered with the catalogue's FX rate. The seed's
two thresholds are kept apart on purpose: *operating cash* is private billing minus the recurring
costs entered here (power, colocation, software, support, staff — or, rented, the rent with the
software and staff); the *capital-recovery target*
also asks billing to return the capex within the chosen number of years.
"""

from __future__ import annotations

import math

from pydantic import BaseModel, ConfigDict

from inferplan.catalog.economics_schema import ApiPrice
from inferplan.economics.workloads import WorkloadProfile
from inferplan.units import HOURS_PER_MONTH

QUOTE_STEP = 0.25  # the seed's quote-multiplier slider step


class MonthlyCosts(BaseModel):
    model_config = ConfigDict(frozen=True, defer_build=True)

    power_usd: float
    colocation_usd: float
    software_usd: float
    support_usd: float
    staff_usd: float
    rent_usd: float = 0.0  # a rented deployment's rent: the provider's price, power and hosting included

    @property
    def operating_usd(self) -> float:
        return self.power_usd + self.colocation_usd + self.software_usd + self.support_usd + self.staff_usd + self.rent_usd


def power_cost_usd(system_power_w: float, *, utilization: float, pue: float, usd_per_kwh: float) -> float:
    """Monthly electricity: average draw (utilization of the system maximum) × PUE × price."""
    return system_power_w / 1000 * utilization * pue * HOURS_PER_MONTH * usd_per_kwh


def colocation_cost_usd(system_power_w: float, usd_per_kw_month: float) -> float:
    """Colocation is contracted on the IT load the rack may draw (its maximum)."""
    return system_power_w / 1000 * usd_per_kw_month


def software_cost_usd(gpus: int, option: str, amounts: dict[str, float], amortization_years: float) -> float:
    """NVIDIA AI Enterprise per GPU, per month: 1-year list price / 12, the 5-year subscription / 60,
    or the perpetual licence spread over the amortization period."""
    if option == "none":
        return 0.0
    per_gpu = amounts[option]
    months = {"nvaie-1-year": 12, "nvaie-5-year": 60}.get(option, amortization_years * 12)
    return gpus * per_gpu / months


def api_cost_per_user_usd(w: WorkloadProfile, price: ApiPrice) -> float:
    """What one user's monthly tokens cost at an API: uncached input, cached input and output."""
    cached_price = price.cached_input_usd_per_mtok or price.input_usd_per_mtok
    return api_cost_per_user_at(w, price.input_usd_per_mtok.value, cached_price.value, price.output_usd_per_mtok.value)


def api_cost_per_user_at(w: WorkloadProfile, input_usd_per_mtok: float, cached_input_usd_per_mtok: float,
                         output_usd_per_mtok: float) -> float:
    """One user's monthly tokens at these prices per million tokens."""
    inp = w.monthly_input_tokens
    return (inp * (1 - w.cache_hit_rate) * input_usd_per_mtok + inp * w.cache_hit_rate * cached_input_usd_per_mtok
            + w.monthly_output_tokens * output_usd_per_mtok) / 1e6


def payback_months(capex_usd: float, operating_cash_usd: float) -> float | None:
    """Simple capex payback; None ("never") when operating cash is not positive."""
    if operating_cash_usd <= 0:
        return None
    return capex_usd / operating_cash_usd


def required_multiplier(target_price_usd: float, api_price_usd: float) -> float | None:
    """The quote multiplier on the same-model API price that reaches ``target_price_usd``, rounded up
    to the next 0.25 step so the recommendation never understates the target."""
    if api_price_usd <= 0:
        return None
    raw = target_price_usd / api_price_usd
    return max(QUOTE_STEP, math.ceil(raw / QUOTE_STEP - 1e-9) * QUOTE_STEP)


def migration_break_even_tokens(migration_cost_usd: float, current_usd_per_mtok: float, new_usd_per_mtok: float) -> float | None:
    """Tokens after which moving to a cheaper stack pays back its one-off porting cost (seed 003's
    Trainium arithmetic). None when the new stack is not cheaper."""
    saving = current_usd_per_mtok - new_usd_per_mtok
    if saving <= 0:
        return None
    return migration_cost_usd / saving * 1e6
