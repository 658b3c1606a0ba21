"""POST /api/fits: the what-fits matrix, every model × hardware × quantization cell (``memory.matrix``).

Each cell is a memory fit (about 3 ms on the 2-core machine) and 3 KB of answer, and the lists a
request may name (60 models, 60 GPUs, 30 systems, 10 quantizations) multiply to 54,000 cells: 143 s
of one core and a 159 MB reply from a 1.4 KB body. So a request is refused, before any cell is
computed, above ``MAX_FITS_CELLS`` — the default grid of every catalogue model on its four GPUs is
about 240 — naming the longest list to shorten; and it runs as a long request (``api_work``).
"""

from __future__ import annotations

from fastapi import APIRouter, Request, Response

from inferplan.catalog.loader import load_catalog
from inferplan.errors import InvalidScenarioError
from inferplan.inputs.deployment import Deployment
from inferplan.memory.matrix import DEFAULT_GPUS, FitsMatrix, FitsRequest, fits_matrix
from inferplan.shells.api_guard import refuse_server_path
from inferplan.shells.api_work import LONG_RESPONSES, long_json

MAX_FITS_CELLS = 1_000  # about 3 s of one core and a 3 MB answer

router = APIRouter()


def check_cells(r: FitsRequest) -> None:
    """Refuse a matrix of more than ``MAX_FITS_CELLS`` cells, counted from the request alone (no
    ``models``: every catalogue model, the most the default grid or ``all_models`` takes; no
    ``quantizations``: one build per model)."""
    sizes = {"models": len(r.models) or len(load_catalog().models),
             "gpus": len(r.gpus) + len(r.systems) or len(DEFAULT_GPUS), "quantizations": len(r.quantizations) or 1}
    cells = sizes["models"] * sizes["gpus"] * sizes["quantizations"]
    if cells <= MAX_FITS_CELLS:
        return
    named = {"models": len(r.models), "gpus": len(r.gpus), "systems": len(r.systems), "quantizations": len(r.quantizations)}
    field = max(named, key=named.get) if any(named.values()) else "all_models"
    raise InvalidScenarioError(
        f"{_count(sizes['models'], 'model')} × {_count(sizes['gpus'], 'GPU or system', 'GPUs or systems')} × "
        f"{_count(sizes['quantizations'], 'quantization')} is {cells:,} cells, more than one request computes", field=field,
        allowed=f"at most {MAX_FITS_CELLS:,} cells: name fewer models, gpus, systems or quantizations")


def _count(n: int, one: str, many: str | None = None) -> str:
    return f"{n:,} {one if n == 1 else many or one + 's'}"


@router.post("/api/fits", tags=["memory"], response_model=FitsMatrix, responses=LONG_RESPONSES)
async def fits_route(r: FitsRequest, http: Request) -> Response:
    """The memory fit of each model × hardware × quantization cell, at most ``MAX_FITS_CELLS`` of them."""
    for i, model in enumerate(r.models):
        refuse_server_path(model, f"models.{i}")
    check_cells(r)

    def work(_budget: object) -> FitsMatrix:
        matrix = fits_matrix(models=r.models or None, gpus=r.gpus or None, systems=r.systems or None,
                             quantizations=r.quantizations or None, engine=r.engine, max_model_len=r.max_model_len,
                             kv_cache_dtype=r.kv_cache_dtype, gpu_count=r.gpu_count, all_models=r.all_models)
        return matrix.model_copy(update={"cells": tuple(_addressed(c) for c in matrix.cells)})

    return await long_json(http, work)


def _addressed(cell):
    """A cell's error names a request key, or none where the matrix chose the input."""
    key = cell.error_field
    if key not in Deployment.model_fields or key in FitsRequest.model_fields:
        return cell
    # a layout the matrix chose (TP across a system's GPUs): no key to name
    return cell.model_copy(update={"error_field": None, "error": cell.error.removeprefix(f"{key}: ")})
