"""``inferplan validate --memory``: predicted vs measured engine start-up memory.

For every measured point the same deployment is planned with ``memory.fit`` and the predicted
weights per GPU, KV cache per GPU and fit/no-fit are compared with what the engine logged.
Nothing is dropped: points whose logged parts do not add up are still scored and their caveats
printed.
"""

from __future__ import annotations

import statistics

from pydantic import BaseModel, ConfigDict

from inferplan.catalog.loader import Catalog, load_catalog
from inferplan.catalog.schema import MemoryPoint
from inferplan.inputs.deployment import Deployment
from inferplan.memory.fit import fit


class MemoryCheck(BaseModel):
    model_config = ConfigDict(frozen=True)

    id: str
    measured_weights_bytes: float
    predicted_weights_bytes: float
    weights_error: float  # relative, signed: (predicted - measured) / measured
    measured_kv_bytes: float | None
    predicted_kv_bytes: float
    kv_error: float | None
    measured_fits: bool
    predicted_fits: bool
    caveats: tuple[str, ...]


class MemoryValidation(BaseModel):
    model_config = ConfigDict(frozen=True)

    checks: tuple[MemoryCheck, ...]
    median_abs_weights_error: float
    median_abs_kv_error: float
    fit_agreement: float  # share of points whose fit/no-fit verdict matches


def deployment_for(point: MemoryPoint) -> Deployment:
    s = point.settings
    return Deployment(
        model=point.model,
        gpu=point.accelerator,
        tensor_parallel_size=point.tensor_parallel_size,
        gpu_memory_utilization=s.gpu_memory_utilization,
        max_model_len=s.max_model_len,
        max_num_batched_tokens=s.max_num_batched_tokens,
        kv_cache_dtype=point.kv_cache_dtype,
        quantization=point.quantization,
        engine=point.engine,
    )


def check_point(point: MemoryPoint, catalog: Catalog) -> MemoryCheck:
    result = fit(deployment_for(point), catalog)
    m = point.measured
    mw = m.weights_bytes_per_gpu.value
    mkv = m.kv_cache_bytes_per_gpu.value if m.kv_cache_bytes_per_gpu else None
    return MemoryCheck(
        id=point.id,
        measured_weights_bytes=mw,
        predicted_weights_bytes=result.weights_bytes_per_gpu,
        weights_error=(result.weights_bytes_per_gpu - mw) / mw,
        measured_kv_bytes=mkv,
        predicted_kv_bytes=result.kv_cache_bytes_per_gpu,
        kv_error=(result.kv_cache_bytes_per_gpu - mkv) / mkv if mkv else None,
        measured_fits=m.fits,
        predicted_fits=result.fits,
        caveats=point.caveats,
    )


def validate_memory(catalog: Catalog | None = None) -> MemoryValidation:
    catalog = catalog or load_catalog()
    checks = tuple(check_point(p, catalog) for p in catalog.memory_points)
    kv_errors = [abs(c.kv_error) for c in checks if c.kv_error is not None]
    return MemoryValidation(
        checks=checks,
        median_abs_weights_error=statistics.median(abs(c.weights_error) for c in checks),
        median_abs_kv_error=statistics.median(kv_errors),
        fit_agreement=sum(c.measured_fits == c.predicted_fits for c in checks) / len(checks),
    )
