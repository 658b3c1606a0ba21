"""``POST /api/deploy``: the launch command (and Kubernetes manifest) of a deployment."""

from __future__ import annotations

from typing import Literal

from fastapi import APIRouter

from inferplan.catalog.loader import load_catalog
from inferplan.deploy import LaunchPlan, Speculative, launch_plan
from inferplan.errors import InferplanError
from inferplan.inputs import Input
from inferplan.inputs.deployment import Deployment
from inferplan.shells.api_guard import refuse_server_path

router = APIRouter()


class DeployRequest(Input):
    deployment: Deployment
    format: Literal["shell", "k8s"] = "shell"
    role: Literal["both", "prefill", "decode"] = "both"
    speculative: Speculative | None = None


@router.post("/api/deploy", tags=["deploy"])
def deploy_route(r: DeployRequest) -> LaunchPlan:
    refuse_server_path(r.deployment.model, "deployment.model")
    try:
        return launch_plan(r.deployment, load_catalog(), output_format=r.format, role=r.role, speculative=r.speculative)
    except InferplanError as exc:
        exc.field = _body_field(exc.field, r)
        raise


def _body_field(field: str | None, r: DeployRequest) -> str | None:
    """A library field (kv_cache_dtype, speculative.draft_model, role) as its path in the request body;
    ``mtp_draft`` is the body's speculative.method where the deployment does not state an MTP draft."""
    if not field:
        return field
    if field == "mtp_draft" and not r.deployment.mtp_draft:
        return "speculative.method"
    key = field.lstrip("-").replace("-", "_")
    if key.split(".")[0] in DeployRequest.model_fields:
        return key
    return f"deployment.{key}" if key in Deployment.model_fields else key
