"""``POST /api/simulate``: the body is ``SimulationQuery`` (deployment, workload, one load) with an
optional inline trace; the answer is ``SimulationReport``."""

from __future__ import annotations

from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict, Field

from inferplan.errors import InferplanError, InvalidScenarioError
from inferplan.inputs.deployment import Deployment
from inferplan.inputs.workload import Workload
from inferplan.search.simulation import SimulationQuery, SimulationReport, simulate_deployment
from inferplan.search.trace import Trace

MAX_TRACE_ROWS = 100_000
MAX_API_REQUESTS = 200_000  # simulated requests one call may ask for (about 2 s of the server's time)

router = APIRouter()


class TraceRow(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    arrival_s: float = Field(ge=0)
    input_tokens: int = Field(ge=1)
    output_tokens: int = Field(ge=1)


class SimulateRequest(SimulationQuery):
    requests: int = Field(20_000, ge=1, le=MAX_API_REQUESTS)
    trace: list[TraceRow] | None = Field(None, max_length=MAX_TRACE_ROWS, description="requests to replay, in time order")


def _trace(rows: list[TraceRow]) -> Trace:
    for i in range(1, len(rows)):
        if rows[i].arrival_s < rows[i - 1].arrival_s:
            raise InvalidScenarioError(f"trace row {i + 1}: arrival_s {rows[i].arrival_s:g} is earlier than the row before",
                                 field=f"trace.{i}.arrival_s", allowed="arrival times that do not decrease")
    start = rows[0].arrival_s if rows else 0.0
    return Trace(arrival_s=tuple(r.arrival_s - start for r in rows), input_tokens=tuple(r.input_tokens for r in rows),
                 output_tokens=tuple(r.output_tokens for r in rows))


@router.post("/api/simulate", tags=["speed"])
def simulate_route(r: SimulateRequest) -> SimulationReport:
    query = SimulationQuery(**{k: getattr(r, k) for k in SimulationQuery.model_fields})
    try:
        return simulate_deployment(query, trace=_trace(r.trace) if r.trace else None)
    except InferplanError as exc:
        raise _addressed(exc) from None


def _addressed(exc: InferplanError) -> InferplanError:
    """The library names a deployment or workload field (or its flag): address it in this body."""
    key = (exc.field or "").lstrip("-").replace("-", "_")
    for prefix, model in (("deployment", Deployment), ("workload", Workload)):
        if key and key.split(".")[0] in model.model_fields:
            exc.field = f"{prefix}.{key}"
    return exc
