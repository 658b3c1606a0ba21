"""Catalogue entities for the economics layer: rental prices, API prices, workload presets,
cost defaults and the seed's tokens-per-MW / cost-per-token tables."""

from datetime import date
from typing import Literal

from pydantic import Field, model_validator

from inferplan.catalog.provenance import EUR, USD, Count, Ratio, UsdPerEur, Watts
from inferplan.catalog.schema import SLUG, Frozen


class RentalPrice(Frozen):
    """A cloud instance's price per GPU-hour (ex VAT), as the provider lists it."""

    id: str = Field(pattern=SLUG)
    provider: str
    region: str
    instance: str
    accelerator: str  # accelerator id
    gpus_per_instance: int = Field(ge=1)
    on_demand_usd_per_gpu_hour: USD | None = None
    on_demand_eur_per_gpu_hour: EUR | None = None
    reserved_usd_per_gpu_hour: USD | None = None
    reserved_eur_per_gpu_hour: EUR | None = None
    reserved_term: str | None = None  # e.g. "1 year", "3 years"
    spot_usd_per_gpu_hour: USD | None = None
    spot_eur_per_gpu_hour: EUR | None = None
    # the fewest instances one rental takes, rented in whole multiples of it (a rack's trays); None: one
    min_instances: Count | None = None
    # one NVLink domain spans each set of ``min_instances`` (an engine instance may span its instances' GPUs)
    nvlink_spans_rental: bool = False
    nvlink_spans_rental_source: str | None = None  # the source id that states it
    # instances of a set the provider may hold down at once for maintenance, which workloads should tolerate
    unavailable_instances_per_set: Count | None = None
    notes: tuple[str, ...] = ()

    @model_validator(mode="after")
    def _whole_sets(self) -> "RentalPrice":
        n = self.min_instances
        if n is not None and (n.value < 1 or not float(n.value).is_integer()):
            raise ValueError(f"min_instances: {n.value} is not a whole number of instances at least 1")
        if self.nvlink_spans_rental and self.set_instances < 2:
            raise ValueError("nvlink_spans_rental needs min_instances of at least 2: the domain spans that set")
        if self.nvlink_spans_rental != (self.nvlink_spans_rental_source is not None):
            raise ValueError("nvlink_spans_rental and nvlink_spans_rental_source go together: the span and its source")
        down = self.unavailable_instances_per_set
        if down is not None and not (0 <= down.value < self.set_instances and float(down.value).is_integer()):
            raise ValueError(f"unavailable_instances_per_set: {down.value} is not a whole number below min_instances")
        return self

    @property
    def set_instances(self) -> int:
        """Instances one rental takes at least, and in whole multiples of."""
        return int(self.min_instances.value) if self.min_instances is not None else 1

    @property
    def host_gpus(self) -> int:
        """The widest engine instance it hosts: a set's GPUs where one NVLink domain spans it, else an instance's."""
        return self.gpus_per_instance * (self.set_instances if self.nvlink_spans_rental else 1)

    @model_validator(mode="after")
    def _has_a_price(self) -> "RentalPrice":
        if not (self.on_demand_usd_per_gpu_hour or self.on_demand_eur_per_gpu_hour
                or self.reserved_usd_per_gpu_hour or self.reserved_eur_per_gpu_hour
                or self.spot_usd_per_gpu_hour or self.spot_eur_per_gpu_hour):
            raise ValueError("a rental price needs at least one price")
        return self


class ApiPrice(Frozen):
    """An API's list price per million tokens for one model (ex VAT)."""

    id: str = Field(pattern=SLUG)
    model: str  # model id
    provider: str  # "openrouter" (the same-model market anchor) or a direct provider
    input_usd_per_mtok: USD  # uncached input
    cached_input_usd_per_mtok: USD | None = None
    output_usd_per_mtok: USD
    # the last day the list price was in force, as its source dates it (None: in force when checked);
    # a price past it is history, left out of comparisons unless named
    valid_until: date | None = None
    valid_until_source: str | None = None  # the source id that dates it
    notes: tuple[str, ...] = ()

    @model_validator(mode="after")
    def _dated_by_a_source(self) -> "ApiPrice":
        if (self.valid_until is None) != (self.valid_until_source is None):
            raise ValueError("valid_until and valid_until_source go together: a date and the source that states it")
        return self

    @property
    def superseded(self) -> bool:
        return self.valid_until is not None

    @property
    def validity_label(self) -> str | None:
        """How a superseded price is labelled wherever it is shown."""
        return f"list price until {self.valid_until.isoformat()}" if self.valid_until else None


class WorkloadPreset(Frozen):
    """A user or agent profile: how many tokens a month, in what mix, at what speed."""

    id: str = Field(pattern=SLUG)
    name: str
    kind: Literal["human", "agent"]
    monthly_tokens: Count  # input + output, per user (or per agent-worker equivalent)
    output_share: Ratio  # share of monthly tokens that are output (≥ 0.2 in the seed's presets)
    cache_hit_rate: Ratio  # share of input tokens served from the prefix cache
    peak_to_average: Ratio  # busiest-hour load over the monthly average (≥ 1)
    target_output_tokens_per_s: Count  # per-user service target (15 background, 30/70 parity, 100 fast)
    input_tokens_per_request: Count
    output_tokens_per_request: Count
    notes: tuple[str, ...] = ()

    @model_validator(mode="after")
    def _ranges(self) -> "WorkloadPreset":
        if not 0 < self.output_share.value < 1:
            raise ValueError("output_share must be between 0 and 1")
        if self.cache_hit_rate.value > 1:
            raise ValueError("cache_hit_rate must be at most 1")
        if self.peak_to_average.value < 1:
            raise ValueError("peak_to_average must be at least 1")
        return self


class CostDefault(Frozen):
    """A named money or facility default (electricity price, PUE, colocation, licence, FX …)."""

    id: str = Field(pattern=SLUG)
    description: str
    usd: USD | None = None
    eur: EUR | None = None
    ratio: Ratio | None = None
    count: Count | None = None
    watts: Watts | None = None
    usd_per_eur: UsdPerEur | None = None
    per: str | None = None  # what the amount is per: "kWh", "kW-month", "GPU-year", "GPU" …
    notes: tuple[str, ...] = ()


class TokensPerMwPoint(Frozen):
    interactivity_tokens_per_s: int = Field(ge=1)  # output tokens/s per user
    output_tokens_per_s_per_mw: Count | None = None  # None: not feasible at this interactivity
    owner_cost_usd_per_mtok: USD | None = None


class RackEfficiencyProfile(Frozen):
    """A published output-tokens-per-MW and owner-cost-per-Mtok curve for one rack recipe."""

    id: str = Field(pattern=SLUG)
    name: str
    system: str  # system id
    model: str  # model id
    input_tokens: int
    output_tokens: int
    power_per_gpu_w: Watts | None = None  # all-in power input of the source's model
    points: tuple[TokensPerMwPoint, ...]
    notes: tuple[str, ...] = ()
