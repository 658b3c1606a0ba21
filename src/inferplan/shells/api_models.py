"""The bodies of the core HTTP routes (speed, frontier, saved scenarios) and the replies that are no one
library model (a comparison of two plans, the validation of both kinds)."""

from __future__ import annotations

from pydantic import BaseModel, Field, field_validator

from inferplan.economics.scenario import Scenario
from inferplan.inputs import Input
from inferplan.inputs.deployment import Deployment
from inferplan.inputs.workload import Workload
from inferplan.report.views import PlanView
from inferplan.validation.memory import MemoryValidation
from inferplan.validation.speed import SpeedValidation


class PerfRequest(Input):
    deployment: Deployment
    workload: Workload = Workload()

    @field_validator("deployment")
    @classmethod
    def _no_fit_concurrency(cls, value: Deployment) -> Deployment:
        if value.concurrency is not None:
            raise ValueError("deployment.concurrency belongs to /api/fit; a speed request takes workload.concurrency")
        return value


class FrontierRequest(PerfRequest):
    points: int = Field(24, ge=2, le=256)

    @field_validator("workload")
    @classmethod
    def _sweeps_concurrency(cls, value: Workload) -> Workload:
        if "concurrency" in value.model_fields_set:
            raise ValueError("the frontier sweeps concurrency itself: leave workload.concurrency out (points sets how many levels)")
        return value


class SaveScenarioRequest(Input):
    name: str = Field(min_length=1, max_length=200)
    scenario: Scenario
    replace: bool = Field(False, description="replace a scenario saved under this name (else 409)")


class RenameRequest(Input):
    name: str = Field(min_length=1, max_length=200)


class Comparison(BaseModel):
    a: PlanView
    b: PlanView


class Validation(BaseModel):
    memory: MemoryValidation | None = None
    speed: SpeedValidation | None = None
