"""``POST /api/simulate``: the body is ``SimulationQuery`` (deployment, workload, one load) with an
optional inline trace; the answer is ``SimulationReport``."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Request, Response
from pydantic import ConfigDict, Field, field_validator, model_validator

from inferplan.errors import InferplanError
from inferplan.inputs.deployment import Deployment
from inferplan.inputs.workload import Workload
from inferplan.search.budget import Budget
from inferplan.search.simulation import SimulationQuery, SimulationReport, simulate_deployment
from inferplan.search.trace import MAX_TRACE_ROWS, TraceFile, as_trace_file, trace_of
from inferplan.shells.api_guard import refuse_server_path, refuse_trace_path
from inferplan.shells.api_keys import preset_in_workload
from inferplan.shells.api_work import LONG_RESPONSES, long_json

# simulated requests one call may ask for: about 1.5 s of one core on one engine; over many engines the
# simulation's own cap of requests × engines (search/simulate.py) holds a run to about 11 s (4,096 replicas)
MAX_API_REQUESTS = 200_000

router = APIRouter()


def _workload_or_preset(schema: dict[str, Any]) -> None:
    """``workload`` as the body takes it: the lengths, or a preset's id (``_preset_as_search_names_it``)."""
    field = schema["properties"]["workload"]
    lengths = {"$ref": field.pop("$ref")}
    field["anyOf"] = [lengths, {"type": "string", "description": "a workload preset id (chat-seat, agent-worker ...), "
                                                                 "as workload_preset"}]


class SimulateRequest(SimulationQuery):
    model_config = ConfigDict(json_schema_extra=_workload_or_preset)

    requests: int = Field(20_000, ge=1, le=MAX_API_REQUESTS, description="requests simulated")
    trace: TraceFile | Annotated[list[Any], Field(max_length=MAX_TRACE_ROWS)] | None = Field(
        None, description="requests to replay, in time order: objects of arrival_s (or timestamp), input_tokens, "
        "output_tokens; or a trace file's {name, text, encoding} (CSV, or JSONL when the name ends in .jsonl or .json; "
        "encoding base64: text is its bytes base64-encoded, compressed or not)")

    @field_validator("trace", mode="before")
    @classmethod
    def _trace_file(cls, value: object) -> object:
        refuse_trace_path(value)
        return as_trace_file(value)  # its own errors, not the union's

    @model_validator(mode="before")
    @classmethod
    def _preset_as_search_names_it(cls, data: Any) -> Any:
        return preset_in_workload(data)  # "workload": "chat-seat", as /api/search takes it


@router.post("/api/simulate", tags=["speed"], summary="Tail latency of one deployment under a load",
             response_model=SimulationReport, responses=LONG_RESPONSES)
async def simulate_route(r: SimulateRequest, http: Request) -> Response:
    """p50/p95/p99 TTFT, TPOT and end-to-end latency: the discrete-event simulation beside the queueing
    approximation the search ranks by (docs/search.md). Run as a long request (``api_work``), stopped when its
    client goes."""
    refuse_server_path(r.deployment.model, "deployment.model")

    def work(budget: Budget) -> SimulationReport:
        try:
            query = SimulationQuery(**{k: getattr(r, k) for k in SimulationQuery.model_fields})
            return simulate_deployment(query, trace=trace_of(r.trace) if r.trace is not None else None,
                                       check=budget.check_cancelled)  # stops within milliseconds once the client goes
        except InferplanError as exc:
            raise _addressed(exc) from None

    return await long_json(http, work)


def _addressed(exc: InferplanError) -> InferplanError:
    """The library names a deployment or workload field (or its flag): address it in this body."""
    key = (exc.field or "").lstrip("-").replace("-", "_")
    for prefix, model in (("deployment", Deployment), ("workload", Workload)):
        if key and key.split(".")[0] in model.model_fields:
            exc.field = f"{prefix}.{key}"
    return exc
