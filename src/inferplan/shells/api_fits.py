"""POST /api/fits: the what-fits matrix, every model × hardware × quantization cell (``memory.matrix``).

A request larger than the library's bound (``memory.matrix.MAX_FITS_CELLS``, ``check_size``) is refused
before it waits for a turn or any cell is computed, naming the longest list to shorten; the rest runs as
a long request (``api_work``).
"""

from __future__ import annotations

from fastapi import APIRouter, Request, Response

from inferplan.catalog.loader import load_catalog
from inferplan.inputs.deployment import Deployment
from inferplan.memory.matrix import FitsMatrix, FitsRequest, check_size, fits_matrix
from inferplan.shells.api_guard import refuse_server_path
from inferplan.shells.api_work import LONG_RESPONSES, long_json

router = APIRouter()


@router.post("/api/fits", summary="What fits: each model on each GPU or system, requests at once",
             tags=["memory"], response_model=FitsMatrix, responses=LONG_RESPONSES)
async def fits_route(r: FitsRequest, http: Request) -> Response:
    """The memory fit of each model × hardware × quantization cell, at most ``memory.matrix.MAX_FITS_CELLS`` of them."""
    for i, model in enumerate(r.models):
        refuse_server_path(model, f"models.{i}")
    check_size(load_catalog(), models=r.models, gpus=r.gpus, systems=r.systems, quantizations=r.quantizations,
               all_models=r.all_models, engine=r.engine)

    def work(_budget: object) -> FitsMatrix:
        matrix = fits_matrix(models=r.models or None, gpus=r.gpus or None, systems=r.systems or None,
                             quantizations=r.quantizations or None, engine=r.engine, max_model_len=r.max_model_len,
                             kv_cache_dtype=r.kv_cache_dtype, gpu_count=r.gpu_count, all_models=r.all_models,
                             size_checked=True)  # checked above, before any work
        return matrix.model_copy(update={"cells": tuple(_addressed(c) for c in matrix.cells)})

    return await long_json(http, work)


def _addressed(cell):
    """A cell's error names a request key, or none where the matrix chose the input."""
    key = cell.error_field
    if key not in Deployment.model_fields or key in FitsRequest.model_fields:
        return cell
    # a layout the matrix chose (TP across a system's GPUs): no key to name
    return cell.model_copy(update={"error_field": None, "error": cell.error.removeprefix(f"{key}: ")})
