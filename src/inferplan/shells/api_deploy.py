"""``POST /api/deploy``: the launch command (and Kubernetes manifest) of a deployment."""

from __future__ import annotations

from typing import Literal

from fastapi import APIRouter, Request, Response
from pydantic import Field, model_validator
from starlette.concurrency import run_in_threadpool

from inferplan.catalog.loader import load_catalog
from inferplan.deploy import LaunchPlan, Speculative, launch_plan
from inferplan.deploy.pools_plan import MAX_INSTANCES, PoolsPlan, PrefillLayout, pools_plan
from inferplan.errors import InferplanError, InvalidScenarioError
from inferplan.inputs import Input
from inferplan.inputs.deployment import Deployment
from inferplan.shells.api_guard import refuse_server_path
from inferplan.shells.api_work import LONG_RESPONSES, long_json

router = APIRouter()


def _pool_said(name: str) -> str:
    return f"with prefill_instances: {PrefillLayout.model_fields[name].description}"


class DeployRequest(Input):
    deployment: Deployment = Field(description="the engine instance launched (with prefill_instances: the decode one)")
    format: Literal["shell", "k8s"] = Field("shell", description="the launch command, or with it a Kubernetes "
                                            "Deployment + Service")
    role: Literal["both", "prefill", "decode"] = Field("both", description="one worker of separate pools: prefill or "
                                                       "decode (both: an instance that does both)")
    speculative: Speculative | None = Field(None, description="speculative decoding settings (with prefill_instances: "
                                            "the decode pool's)")
    # separate pools, as POST /api/simulate takes them (deploy.pools_plan.PrefillLayout)
    prefill_instances: int | None = Field(None, ge=1, le=MAX_INSTANCES, description=(
        "separate pools: this many prefill instances ahead of the deployment's decode instances"))
    prefill_tensor_parallel_size: int | None = Field(None, ge=1, le=1024,
                                                     description=_pool_said("prefill_tensor_parallel_size"))
    prefill_pipeline_parallel_size: int | None = Field(None, ge=1, le=1024,
                                                       description=_pool_said("prefill_pipeline_parallel_size"))
    prefill_data_parallel_size: int | None = Field(None, ge=1, le=1024, description=_pool_said("prefill_data_parallel_size"))
    prefill_enable_expert_parallel: bool | None = Field(None, description=_pool_said("prefill_enable_expert_parallel"))
    replicas: int | None = Field(None, ge=1, le=MAX_INSTANCES, description=_pool_said("replicas"))
    host_gpus: int | None = Field(None, ge=1, le=1024, description=_pool_said("host_gpus"))

    @model_validator(mode="after")
    def _pools(self) -> "DeployRequest":
        stated = [k for k in POOL_FIELDS if getattr(self, k) is not None]
        if stated and self.prefill_instances is None:
            raise InvalidScenarioError("a setting of separate pools goes with prefill_instances", field=stated[0],
                                       allowed="leave it out, or give prefill_instances")
        if self.prefill_instances is not None and self.role != "both":
            raise InvalidScenarioError("separate pools start both sides; role prints one worker of a side", field="role",
                                       allowed="both, with prefill_instances")
        return self


POOL_FIELDS = tuple(PrefillLayout.model_fields)


@router.post("/api/deploy", tags=["deploy"], summary="The command (and Kubernetes manifest) that launches a deployment",
             response_model=LaunchPlan | PoolsPlan, responses=LONG_RESPONSES)
async def deploy_route(r: DeployRequest, http: Request) -> Response:
    """Each engine's own flags, checked against its flag list; with prefill_instances, every worker of
    separate prefill and decode pools and their router — up to 1,024 workers' scripts, seconds of work, so
    such a request runs as a long one (``api_work``)."""
    refuse_server_path(r.deployment.model, "deployment.model")

    def work(_budget: object) -> LaunchPlan | PoolsPlan:
        try:
            if r.prefill_instances is not None:
                layout = PrefillLayout(**{k: getattr(r, k) for k in POOL_FIELDS if getattr(r, k) is not None})
                return pools_plan(r.deployment, layout, load_catalog(), output_format=r.format, speculative=r.speculative)
            return launch_plan(r.deployment, load_catalog(), output_format=r.format, role=r.role, speculative=r.speculative)
        except InferplanError as exc:
            exc.field = _body_field(exc.field, r)
            raise

    if r.prefill_instances is not None:
        return await long_json(http, work)
    plan = await run_in_threadpool(lambda: work(None).model_dump_json().encode())  # one instance: milliseconds
    return Response(plan, media_type="application/json")


def _body_field(field: str | None, r: DeployRequest) -> str | None:
    """A library field (kv_cache_dtype, speculative.draft_model, role) as its path in the request body;
    ``mtp_draft`` and ``speculative_method`` are the body's speculative.method, ``speculative_tokens`` its
    speculative.tokens, where the deployment does not state them."""
    if not field:
        return field
    if field in ("mtp_draft", "speculative_method", "speculative_tokens") and not getattr(r.deployment, field):
        return "speculative.tokens" if field == "speculative_tokens" else "speculative.method"
    key = field.lstrip("-").replace("-", "_")
    if key.split(".")[0] in DeployRequest.model_fields:
        return key
    return f"deployment.{key}" if key in Deployment.model_fields else key
