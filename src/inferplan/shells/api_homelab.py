"""POST /api/views/homelab: which catalogue models run on N GPUs of one kind, and how fast one
request goes (``performance/here.py`` → ``report/homelab_view.py``) — the web page's first question
for a person with a GPU or two."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response
from pydantic import Field, field_validator

from inferplan.inputs import Input, not_blank
from inferplan.report.homelab_view import HomelabView
from inferplan.shells.api_work import LONG_RESPONSES, long_json


class HomelabRequest(Input):
    gpu: str = Field(min_length=1, max_length=200, description="accelerator id or alias (RTX 4090, H100 …)")
    gpus: int = Field(1, ge=1, le=64, description="GPUs of that kind, run as one instance")
    engine: str | None = Field(None, max_length=40, description="default: each model on the best way of the engines "
                                                                "that run on the GPU (docs/api.md)")
    quantization: str | None = Field(None, max_length=40, description="one weight format; default: each model's own")
    all_models: bool = Field(False, description="every catalogue model with a config; default: the what-fits "
                                                "grid's models (the summary names the ones it leaves out)")
    host_memory_gb: float | None = Field(None, gt=0, le=1e6, description="host RAM, GiB (as --host-memory-gb): a model "
                                         "the GPUs do not hold is priced with the weight offload that fits them; "
                                         "default: its row says the host RAM it needs; refused on unified memory")

    @field_validator("gpu", "engine", "quantization", mode="before")
    @classmethod
    def _not_blank(cls, value: object) -> object:
        return not_blank(value)  # "" is refused as on every route, not read as the default


router = APIRouter()


@router.post("/api/views/homelab", summary="What runs on my GPUs: every model, its speed and launch command",
             tags=["views"], response_model=HomelabView, responses=LONG_RESPONSES)
async def homelab_route(r: HomelabRequest, http: Request) -> Response:
    """Run as a long request (``api_work``): every model on the GPUs takes a few seconds."""
    from inferplan.catalog.loader import load_catalog
    from inferplan.performance.here import what_runs_on
    from inferplan.report.homelab_view import homelab_view

    def work(_budget: object) -> HomelabView:
        catalog = load_catalog()
        result = what_runs_on(r.gpu, r.gpus, catalog, engine=r.engine,
                              quantizations=[r.quantization] if r.quantization else None, all_models=r.all_models,
                              host_memory_gb=r.host_memory_gb)
        return homelab_view(result, catalog)

    return await long_json(http, work)
