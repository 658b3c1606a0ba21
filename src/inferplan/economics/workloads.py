"""A workload profile: a catalogue preset with a scenario's overrides, and the rates it implies."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from inferplan.catalog.loader import Catalog
from inferplan.errors import InvalidScenarioError
from inferplan.inputs import Input
from inferplan.units import SECONDS_PER_MONTH


class WorkloadOverrides(Input):
    """What a scenario may change on a preset (every field optional)."""

    preset: str = "chat-seat"
    monthly_tokens: float | None = Field(None, ge=1, le=1e13)
    output_share: float | None = Field(None, gt=0, lt=1)
    cache_hit_rate: float | None = Field(None, ge=0, le=1)
    peak_to_average: float | None = Field(None, ge=1, le=100)
    target_output_tokens_per_s: float | None = Field(None, gt=0, le=10_000)
    input_tokens_per_request: int | None = Field(None, ge=1, le=10_000_000)
    output_tokens_per_request: int | None = Field(None, ge=1, le=10_000_000)


class WorkloadProfile(BaseModel):
    model_config = ConfigDict(frozen=True, defer_build=True)

    preset: str
    name: str
    monthly_tokens: float
    output_share: float
    cache_hit_rate: float
    peak_to_average: float
    target_output_tokens_per_s: float
    input_tokens_per_request: int
    output_tokens_per_request: int
    speculative_tokens: int = 0  # draft tokens per step in the serving replicas (the scenario's `speculative`)
    acceptance_rate: float | None = None  # per draft token (None: as the estimate resolves it, performance.drafts)

    @property
    def monthly_output_tokens(self) -> float:
        return self.monthly_tokens * self.output_share

    @property
    def monthly_input_tokens(self) -> float:
        return self.monthly_tokens * (1 - self.output_share)

    @property
    def peak_output_tokens_per_s(self) -> float:
        """Output tokens/s one user generates in the busiest hour."""
        return self.monthly_output_tokens / SECONDS_PER_MONTH * self.peak_to_average

    @property
    def peak_input_tokens_per_s(self) -> float:
        """Input tokens/s one user sends in the busiest hour (cached ones included)."""
        return self.monthly_input_tokens / SECONDS_PER_MONTH * self.peak_to_average


def resolve_workload(catalog: Catalog, o: WorkloadOverrides) -> WorkloadProfile:
    try:
        p = catalog.workload_presets.get(o.preset, field_name="workload.preset", error=InvalidScenarioError)
    except InvalidScenarioError as exc:
        raise InvalidScenarioError(
            str(exc), field="workload.preset", allowed=", ".join(r.id for r in catalog.workload_presets)
        ) from None

    def pick(override, sourced):
        return override if override is not None else sourced.value

    return WorkloadProfile(
        preset=p.id,
        name=p.name,
        monthly_tokens=pick(o.monthly_tokens, p.monthly_tokens),
        output_share=pick(o.output_share, p.output_share),
        cache_hit_rate=pick(o.cache_hit_rate, p.cache_hit_rate),
        peak_to_average=pick(o.peak_to_average, p.peak_to_average),
        target_output_tokens_per_s=pick(o.target_output_tokens_per_s, p.target_output_tokens_per_s),
        input_tokens_per_request=int(pick(o.input_tokens_per_request, p.input_tokens_per_request)),
        output_tokens_per_request=int(pick(o.output_tokens_per_request, p.output_tokens_per_request)),
    )
