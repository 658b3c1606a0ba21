"""``inferplan validate --memory``: predicted vs measured engine start-up memory.

For every measured point the same deployment is planned with ``memory.fit`` and the predicted
weights per GPU, KV cache per GPU and fit/no-fit are compared with what the engine logged.
Nothing is dropped: points whose logged parts do not add up are still scored and their caveats
printed, and a point the planner refuses is kept with the refusal.

The points come in three splits (``MemoryPoint.split``): ``calibration`` (memory.yaml, the records
the vLLM constants are fitted on; the headline medians are over these, as before), and the field
set (memory_field*.yaml) of ``development`` and ``holdout`` records, the held-out ones declared
before predicting. Each split, each engine release and each memory rule is summarised separately.
An engine that prints no start-up split but the peak of its allocator over a run (mlx-lm) is scored
on that peak: the planned weights, KV cache for the run's context and activations.

Each record is planned with the memory-budgeting rule of the engine build it ran
(``engine_memory_rules.yaml``): its ``engine_release`` (with the V0/V1 named in its
``engine_version`` text), else a release number the ``engine_version`` text names, else the
engine's default rule; ``MemoryCheck.rule_basis`` says which.
"""

from __future__ import annotations

import re
import statistics
from typing import Literal

from pydantic import BaseModel, ConfigDict

from inferplan.catalog.loader import Catalog, load_catalog
from inferplan.catalog.memory_rules import (current_release, memory_rule, parse_engine_version, release_key,
                                            unversioned_release)
from inferplan.catalog.points_schema import MemoryPoint
from inferplan.errors import InferplanError
from inferplan.inputs.deployment import Deployment
from inferplan.memory.fit import fit


class MemoryCheck(BaseModel):
    model_config = ConfigDict(frozen=True, defer_build=True)

    id: str
    split: str
    engine: str
    engine_version: str
    accelerator: str
    measured_weights_bytes: float | None
    predicted_weights_bytes: float | None
    weights_error: float | None  # relative, signed: (predicted - measured) / measured
    measured_kv_bytes: float | None
    predicted_kv_bytes: float | None
    kv_error: float | None
    measured_fits: bool
    predicted_fits: bool | None  # None when the planner refused the deployment (see ``refused``)
    caveats: tuple[str, ...]
    refused: str | None = None
    memory_rule: str = ""  # the label of the engine rule the record was planned with
    rule_basis: Literal["engine_release", "engine_version text", "default"] = "default"
    # llama.cpp's printed compute buffer against the planned activation memory (None: not printed)
    measured_compute_buffer_bytes: float | None = None
    predicted_compute_buffer_bytes: float | None = None
    compute_buffer_error: float | None = None
    # the allocator peak an engine printed over a run (mlx-lm "Peak memory") against the planned weights,
    # KV cache for the run's context and activations; the runtime's own overhead is outside that allocator
    measured_peak_bytes: float | None = None
    predicted_peak_bytes: float | None = None
    peak_error: float | None = None
    # the engine's printed maximum concurrency of max_model_len requests against the planned one
    measured_concurrency: float | None = None
    predicted_concurrency: float | None = None
    concurrency_error: float | None = None
    # what one max_model_len request takes of the pool: the printed "KV cache is needed", else the
    # measured pool over the printed concurrency; planned: the start-up check's need, else the planned
    # pool over the planned concurrency (scores the per-request charge apart from the pool's error)
    measured_request_bytes: float | None = None
    predicted_request_bytes: float | None = None
    request_error: float | None = None


class SplitSummary(BaseModel):
    """Scores over a group of checks; ``None`` where the group has nothing of that kind to score."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    label: str
    points: int
    kv_points: int
    median_abs_kv_error: float | None
    worst_abs_kv_error: float | None
    weights_points: int
    median_abs_weights_error: float | None
    fit_agreement: float | None  # share of planned points whose fit/no-fit verdict matches
    refused: int


class MemoryValidation(BaseModel):
    model_config = ConfigDict(frozen=True, defer_build=True)

    checks: tuple[MemoryCheck, ...]
    # the calibration records (memory.yaml)
    median_abs_weights_error: float
    median_abs_kv_error: float
    fit_agreement: float  # share of points whose fit/no-fit verdict matches
    holdout: SplitSummary
    field: SplitSummary  # development + holdout
    by_engine_version: tuple[SplitSummary, ...]  # field records, one row per engine release
    by_rule: tuple[SplitSummary, ...] = ()  # field records, one row per memory rule applied


_VARIANT = re.compile(r"^\s*(V\d+)\b")


def record_engine_version(point: MemoryPoint) -> tuple[str | None, str]:
    """The engine_version a record is planned with, and where it came from: the record's
    engine_release (with a leading "V0"/"V1" of its engine_version text), else the release number
    that text names, else None (the engine's default rule)."""
    variant = _VARIANT.match(point.engine_version)
    if point.engine_release:
        return point.engine_release + (f" {variant.group(1)}" if variant else ""), "engine_release"
    for token in re.findall(r"v?\d+(?:\.\d+)+", point.engine_version):
        try:
            parse_engine_version(token)
        except ValueError:
            continue
        return token.lstrip("v") + (f" {variant.group(1)}" if variant else ""), "engine_version text"
    return None, "default"


def planned_record_release(point: MemoryPoint, catalog: Catalog) -> str | None:
    """The release a record is planned at: the one it states, else the release the engine's current_release
    names for records that state none or a number past the current release (vLLM: 0.11.0, not the current
    release), else None (the default rule)."""
    version, basis = record_engine_version(point)
    current = current_release(catalog, point.engine)
    if version and basis == "engine_version text" and current is not None and \
            release_key(parse_engine_version(version)[0]) > release_key(current.release):
        version = None  # a number past the engine's releases is another product's (NVIDIA's container "25.09")
    return version or unversioned_release(catalog, point.engine)


def deployment_for(point: MemoryPoint, catalog: Catalog | None = None) -> Deployment:
    s = point.settings
    return Deployment(
        model=point.model,
        gpu=point.accelerator,
        tensor_parallel_size=point.tensor_parallel_size,
        pipeline_parallel_size=point.pipeline_parallel_size,
        data_parallel_size=point.data_parallel_size if point.data_parallel_size > 1 else None,
        enable_expert_parallel=point.enable_expert_parallel,
        gpu_memory_utilization=s.gpu_memory_utilization,
        max_model_len=s.max_model_len,
        max_num_batched_tokens=s.max_num_batched_tokens,
        kv_cache_dtype=point.kv_cache_dtype,
        quantization=point.quantization,
        engine=point.engine,
        engine_version=planned_record_release(point, catalog or load_catalog()),
        max_num_seqs=s.max_num_seqs,
        ubatch_size=s.n_ubatch,
        flash_attention=s.flash_attention,
        moe_kernel=s.moe_kernel,
        topk_topp_sampler=s.topk_topp_sampler,
        mtp_draft=s.mtp_draft,
        enforce_eager=bool(s.enforce_eager),
    )


def _rel(predicted: float | None, measured: float | None) -> float | None:
    return None if predicted is None or not measured else (predicted - measured) / measured


def check_point(point: MemoryPoint, catalog: Catalog) -> MemoryCheck:
    m = point.measured
    mw = m.weights_bytes_per_gpu.value if m.weights_bytes_per_gpu else None
    mkv = m.kv_cache_bytes_per_gpu.value if m.kv_cache_bytes_per_gpu else None
    mcb = m.compute_buffer_bytes_per_gpu.value if m.compute_buffer_bytes_per_gpu else None
    mpk = m.peak_bytes_per_gpu.value if m.peak_bytes_per_gpu else None
    version, basis = record_engine_version(point)
    common = dict(id=point.id, split=point.split, engine=point.engine, engine_version=point.engine_version,
                  accelerator=point.accelerator, measured_weights_bytes=mw, measured_kv_bytes=mkv,
                  measured_fits=m.fits, caveats=point.caveats, rule_basis=basis, measured_compute_buffer_bytes=mcb,
                  measured_peak_bytes=mpk)
    try:
        common["memory_rule"] = memory_rule(catalog, point.engine, planned_record_release(point, catalog)).label
        result = fit(deployment_for(point, catalog), catalog)
    except InferplanError as e:
        return MemoryCheck(**common, predicted_weights_bytes=None, weights_error=None, predicted_kv_bytes=None,
                           kv_error=None, predicted_fits=None, refused=str(e))
    if point.log_rank is not None and m.kv_cache_tokens:
        # the printed room is a rank that did not size the pool; the engine's token count is the pool's
        mkv = common["measured_kv_bytes"] = m.kv_cache_tokens.value * result.sequence_bytes_per_gpu / result.max_model_len
    # llama.cpp and MLX print the cache they allocate for the context; the others the room they give it
    kv = result.kv_cache_allocated_bytes_per_gpu or result.kv_cache_bytes_per_gpu
    peak = result.weights_bytes_per_gpu + kv + result.activation_bytes_per_gpu if mpk else None
    return MemoryCheck(
        **_request_charge(point, result),
        **common,
        predicted_weights_bytes=result.weights_bytes_per_gpu,
        weights_error=_rel(result.weights_bytes_per_gpu, mw),
        predicted_kv_bytes=kv,
        kv_error=_rel(kv, mkv),
        predicted_fits=result.fits,
        predicted_compute_buffer_bytes=result.activation_bytes_per_gpu if mcb else None,
        compute_buffer_error=_rel(result.activation_bytes_per_gpu, mcb),
        predicted_peak_bytes=peak,
        peak_error=_rel(peak, mpk),
    )


def _request_charge(point: MemoryPoint, result) -> dict:
    """The printed concurrency and per-request need against the planned ones (empty when not printed)."""
    m = point.measured
    conc = m.max_concurrency.value if m.max_concurrency else None
    if m.kv_cache_needed_bytes_per_gpu:
        measured, predicted = m.kv_cache_needed_bytes_per_gpu.value, result.kv_cache_needed_bytes_per_gpu
    elif conc and m.kv_cache_bytes_per_gpu:
        measured = m.kv_cache_bytes_per_gpu.value / conc
        predicted = result.kv_cache_bytes_per_gpu / result.max_concurrency if result.max_concurrency else None
    else:
        measured = predicted = None
    return dict(measured_concurrency=conc, predicted_concurrency=result.max_concurrency if conc else None,
                concurrency_error=_rel(result.max_concurrency, conc), measured_request_bytes=measured,
                predicted_request_bytes=predicted, request_error=_rel(predicted, measured))


def summarise(label: str, checks: list[MemoryCheck]) -> SplitSummary:
    kv = [abs(c.kv_error) for c in checks if c.kv_error is not None]
    w = [abs(c.weights_error) for c in checks if c.weights_error is not None]
    planned = [c for c in checks if c.predicted_fits is not None]
    return SplitSummary(
        label=label,
        points=len(checks),
        kv_points=len(kv),
        median_abs_kv_error=statistics.median(kv) if kv else None,
        worst_abs_kv_error=max(kv) if kv else None,
        weights_points=len(w),
        median_abs_weights_error=statistics.median(w) if w else None,
        fit_agreement=sum(c.measured_fits == c.predicted_fits for c in planned) / len(planned) if planned else None,
        refused=len(checks) - len(planned),
    )


def release(check: MemoryCheck) -> str:
    """The engine release a check is grouped under: its engine and version, without the note."""
    return f"{check.engine} {check.engine_version.split(' (')[0]}"


def rule_group(check: MemoryCheck) -> str:
    """The memory rule a check is grouped under (a release no rule covers is its own group)."""
    return check.memory_rule or f"{check.engine}: no rule covers the release"


def validate_memory(catalog: Catalog | None = None) -> MemoryValidation:
    catalog = catalog or load_catalog()
    checks = tuple(check_point(p, catalog) for p in catalog.memory_points)
    calibration = summarise("calibration", [c for c in checks if c.split == "calibration"])
    field = [c for c in checks if c.split != "calibration"]
    releases = sorted({release(c) for c in field})
    rules = sorted({rule_group(c) for c in field})
    return MemoryValidation(
        checks=checks,
        median_abs_weights_error=calibration.median_abs_weights_error,
        median_abs_kv_error=calibration.median_abs_kv_error,
        fit_agreement=calibration.fit_agreement,
        holdout=summarise("holdout", [c for c in field if c.split == "holdout"]),
        field=summarise("field (development + holdout)", field),
        by_engine_version=tuple(summarise(r, [c for c in field if release(c) == r]) for r in releases),
        by_rule=tuple(summarise(r, [c for c in field if rule_group(c) == r]) for r in rules),
    )
