"""``inferplan validate --speed``: predicted vs measured speed, point by point.

Every speed point in the catalogue is planned with the same deployment and workload and the
predicted metric compared with the measured one. Points are split into ``fit`` (may calibrate
constants) and ``holdout`` (only scored); medians are reported for each split and by kind
(single-stream decode, per-user decode under concurrent load, prefill, serving throughput). Points the model cannot plan (does not fit,
unknown architecture) are reported with the reason, never dropped silently. Points measured with
CUDA graphs off are predicted and printed with their error but not scored: the planner models
graph-mode serving only (``NOT_MODELLED``).
"""

from __future__ import annotations

import statistics

from pydantic import BaseModel, ConfigDict

from inferplan.catalog.engine_support import loading_release
from inferplan.catalog.loader import Catalog, load_catalog
from inferplan.catalog.memory_rules import unversioned_release
from inferplan.catalog.points_schema import ServingProfile, SpeedAccuracy, SpeedMetric, SpeedPoint
from inferplan.errors import InferplanError
from inferplan.inputs.deployment import Deployment
from inferplan.inputs.workload import Workload
from inferplan.memory.precision import planned_quantization
from inferplan.memory.resolve import resolve_model
from inferplan.performance.estimate import ServingEstimate
from inferplan.performance.measured import point_value
from inferplan.performance.rates import calibration_family
from inferplan.performance.serving import estimate
from inferplan.validation.bench_limits import TOOL as BENCH_TOOL, BenchLimits, trtllm_bench_limits
from inferplan.units import GB

KIND = {
    SpeedMetric.DECODE_TOKENS_PER_S_PER_USER: "decode",
    SpeedMetric.TPOT_S: "decode",
    SpeedMetric.PREFILL_TOKENS_PER_S: "prefill",
    SpeedMetric.TTFT_S: "prefill",
    SpeedMetric.OUTPUT_TOKENS_PER_S_TOTAL: "throughput",
    SpeedMetric.DECODE_TOKENS_PER_S_TOTAL: "throughput",
    SpeedMetric.TOTAL_TOKENS_PER_S: "throughput",
}
CONCURRENT_DECODE = "decode-concurrent"  # per-user decode or TPOT with other requests in the batch
OFFLOAD = "offload"  # weights in host RAM (-ngl, --n-cpu-moe, --cpu-offload-gb, KTransformers): scored apart, their own track record
KINDS = ("decode", CONCURRENT_DECODE, "prefill", "throughput", "profile", f"{OFFLOAD}-decode", f"{OFFLOAD}-prefill")


def kind_of(point: SpeedPoint) -> str:
    """Validation kind: a per-user decode figure is single-stream only at concurrency 1."""
    kind = KIND[point.metric]
    if point.offloaded:
        return f"{OFFLOAD}-{kind}"
    if kind == "decode" and point.concurrency != 1:
        return CONCURRENT_DECODE
    return kind


TIME_METRICS = frozenset({SpeedMetric.TTFT_S.value, SpeedMetric.TPOT_S.value})  # seconds: larger is slower


class SpeedCheck(BaseModel):
    model_config = ConfigDict(frozen=True, defer_build=True)

    id: str
    kind: str  # decode (concurrency 1) | decode-concurrent | prefill | throughput | profile
    split: str
    metric: str
    measured: float
    predicted: float | None
    error: float | None  # (predicted − measured) / measured
    bound: str | None
    note: str | None  # why it could not be predicted, or the point's first caveat
    scored: bool = True  # False: a configuration the planner does not model (shown with its error)
    engine_build: str | None = None  # when the measured engine build was made (catalog engine_builds), if dated
    family: str = ""  # the calibration family whose constants predicted it
    concurrency: int | None = None  # requests in flight (None: as many as fit, a max-throughput run)
    model: str = ""  # the catalogue model measured

    @property
    def speed_bias(self) -> float | None:
        """How much faster than measured the prediction runs (negative: slower), whatever the metric:
        a time (TPOT, TTFT) is inverted first."""
        if self.error is None:
            return None
        return 1 / (1 + self.error) - 1 if self.metric in TIME_METRICS else self.error


class BuildYear(BaseModel):
    """Single-stream decode error of the points measured on one year's engine builds."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    year: str  # "2025", or "undated"
    points: int
    median_abs_error: float
    beyond_30_percent: int


class SpeedValidation(BaseModel):
    model_config = ConfigDict(frozen=True, defer_build=True)

    checks: tuple[SpeedCheck, ...]
    medians: dict[str, float]  # "<kind>/<split>" and "all/<split>" -> median |error|
    worst: dict[str, float]
    decode_by_build_year: tuple[BuildYear, ...] = ()  # one set of constants serves every build
    by_family: tuple[SpeedAccuracy, ...] = ()  # the track record each estimate quotes (accuracy_records)


NOT_MODELLED = "CUDA graphs off (--enforce-eager): the planner models graph-mode serving, so this point is shown, not scored"


def point_scenario(point: SpeedPoint, catalog: Catalog) -> tuple[Deployment, Workload]:
    """``scenario`` with what the catalogue adds: the model's context, the batch limits the benchmark
    tool chose where the run states none, and the engine release its memory is planned at."""
    limits = trtllm_bench_limits(catalog, point) if point.batch_limits_by == BENCH_TOOL else None
    d, w = scenario(point, context_of(catalog, point.model), limits)
    # the memory rule of the line the speed constants were fitted with, as for memory records that state no
    # release (current_release's records_without_release), not the current release nor the point's own; a
    # model that line cannot load (DeepSeek-V4 on vLLM) at the first release that loads it
    spec = resolve_model(catalog, d.model)
    arch = spec.architecture.hf_architecture if spec.architecture else None
    release = loading_release(catalog, point.engine, unversioned_release(catalog, point.engine), arch,
                              planned_quantization(catalog, d, spec, point.engine))
    return d.model_copy(update={"engine_version": release}), w


def scenario(point: SpeedPoint, context_tokens: int | None = None,
             limits: BenchLimits | None = None) -> tuple[Deployment, Workload]:
    """The deployment and workload a point measured. A prompt-only (pp) or generation-only (tg) run
    is planned with one token on its empty side; at the model's full context (llama-bench pp8192 on
    an 8k model) that token comes off the other side, as the engine would size it. ``limits``: the
    batch limits a benchmark tool chose (per pipeline micro-batch, as TensorRT-LLM applies them)."""
    i, o = max(point.input_tokens, 1), max(point.output_tokens, 1)
    if context_tokens and i + o > context_tokens and 0 in (point.input_tokens, point.output_tokens):
        i, o = (context_tokens - 1, 1) if point.output_tokens == 0 else (1, context_tokens - 1)
    d = Deployment(
        model=point.model, gpu=point.accelerator, gpus=point.gpus,
        tensor_parallel_size=point.tensor_parallel_size, pipeline_parallel_size=point.pipeline_parallel_size,
        engine=point.engine, quantization=point.quantization, kv_cache_dtype=point.kv_cache_dtype,
        max_model_len=max(i + o, 256), enable_expert_parallel=point.expert_parallel,
        moe_runner_backend=point.moe_runner_backend,
        max_num_seqs=limits.max_batch_size if limits else point.max_num_seqs,
        max_num_batched_tokens=limits.max_num_tokens if limits else None,
        n_gpu_layers=point.n_gpu_layers, n_cpu_moe=point.n_cpu_moe, cpu_offload_gb=point.cpu_offload_gb,
        kt_num_gpu_experts=point.kt_num_gpu_experts, host_memory_gb=point.host_memory_gb,
        kt_release=point.kt_release, kt_method=point.kt_method, host_sockets=point.host_sockets,
        host_memory_bandwidth_gb_per_s=(point.host_memory_bandwidth_bytes_per_s.value / GB
                                        if point.host_memory_bandwidth_bytes_per_s else None),
    )
    generation_only = point.metric is SpeedMetric.DECODE_TOKENS_PER_S_TOTAL
    w = Workload(input_len=i, output_len=o, concurrency=point.concurrency or "max",
                 speculative_tokens=point.speculative_tokens, backend=point.backend,
                 **({} if point.acceptance_rate is None else {"acceptance_rate": point.acceptance_rate}),
                 prefix_cache_hit_rate=1.0 if generation_only else point.prefix_cache_hit_rate)  # 1.0: no prefill in the timed phase
    return d, w


def context_of(catalog: Catalog, model: str) -> int | None:
    """The catalogue model's context in tokens, if its card states one."""
    card = catalog.models.records.get(model)
    return int(card.context_tokens.value) if card is not None and card.context_tokens else None


def metric_value(point: SpeedPoint, est: ServingEstimate) -> float:
    return point_value(point, est)


def check_point(point: SpeedPoint, catalog: Catalog) -> SpeedCheck:
    measured = point.measured.value
    build = catalog.engine_build(point.engine, point.engine_version)
    base = dict(id=point.id, kind=kind_of(point), split=point.split, metric=point.metric.value, measured=measured,
                engine_build=build.date if build else None,
                family=calibration_family(catalog.engine(point.engine), point.backend, catalog.accelerator(point.accelerator)),
                concurrency=point.concurrency, model=point.model)
    try:
        d, w = point_scenario(point, catalog)
        est = estimate(d, w, catalog, use_profiles=False)
    except InferplanError as exc:
        return SpeedCheck(**base, predicted=None, error=None, bound=None, note=exc.describe())
    predicted = metric_value(point, est)
    note = NOT_MODELLED if not point.cuda_graphs else (point.caveats[0] if point.caveats else None)
    return SpeedCheck(**base, predicted=predicted, error=(predicted - measured) / measured, bound=est.bound,
                      note=note, scored=point.cuda_graphs)


def summarise(checks: tuple[SpeedCheck, ...]) -> tuple[dict[str, float], dict[str, float]]:
    groups: dict[str, list[float]] = {}
    for c in checks:
        if c.error is None or not c.scored:
            continue
        apart = c.kind.startswith(OFFLOAD)  # offload points are scored on their own lines, not in all/*
        for key in (f"{c.kind}/{c.split}", f"{c.kind}/all", *(() if apart else (f"all/{c.split}", "all/all"))):
            groups.setdefault(key, []).append(abs(c.error))
    return ({k: statistics.median(v) for k, v in sorted(groups.items())},
            {k: max(v) for k, v in sorted(groups.items())})


def by_build_year(checks: tuple[SpeedCheck, ...]) -> tuple[BuildYear, ...]:
    """Scored single-stream decode errors grouped by the year of the engine build measured."""
    groups: dict[str, list[float]] = {}
    for c in checks:
        if c.kind == "decode" and c.scored and c.error is not None:
            groups.setdefault(c.engine_build[:4] if c.engine_build else "undated", []).append(abs(c.error))
    return tuple(BuildYear(year=year, points=len(errors), median_abs_error=statistics.median(errors),
                           beyond_30_percent=sum(e > 0.30 for e in errors))
                 for year, errors in sorted(groups.items()))


# the kinds of figure an estimate gives (with weights in host RAM: the offload kinds)
ACCURACY_KINDS = ("decode", CONCURRENT_DECODE, "prefill", "throughput", f"{OFFLOAD}-decode", f"{OFFLOAD}-prefill")


def estimate_kind(check: SpeedCheck) -> str | None:
    """The kind of figure a check scores, as an estimate gives it: a measured sweep's per-user rate
    is per-user decode at its concurrency, its per-GPU rate aggregate throughput."""
    if check.kind != "profile":
        return check.kind if check.kind in ACCURACY_KINDS else None
    if check.metric == "output_tokens_per_s_per_gpu":
        return "throughput"
    return "decode" if check.concurrency == 1 else CONCURRENT_DECODE


# a model's own track record is quoted once it has this many scored points of a kind in a family
MODEL_RECORD_POINTS = 3


def accuracy_records(checks: tuple[SpeedCheck, ...]) -> tuple[SpeedAccuracy, ...]:
    """Scored checks grouped by (calibration family, kind of figure), and by (family, kind, model)
    where a model has at least ``MODEL_RECORD_POINTS`` of them: how many, median |error| overall and
    held out, how many beyond 30 %, the worst signed error, and the median speed bias."""
    groups: dict[tuple[str, str, str | None], list[SpeedCheck]] = {}
    for c in checks:
        kind = estimate_kind(c)
        if c.scored and c.error is not None and kind:
            groups.setdefault((c.family, kind, None), []).append(c)
            groups.setdefault((c.family, kind, c.model), []).append(c)
    records = []
    for (family, kind, model), group in sorted(groups.items(), key=lambda g: (g[0][0], g[0][1], g[0][2] or "")):
        if model is not None and len(group) < MODEL_RECORD_POINTS:
            continue
        held = [abs(c.error) for c in group if c.split == "holdout"]
        worst = max(group, key=lambda c: abs(c.error))
        records.append(SpeedAccuracy(
            family=family, kind=kind, model=model, points=len(group),
            median_abs_error=round(statistics.median(abs(c.error) for c in group), 4),
            holdout_points=len(held),
            holdout_median_abs_error=round(statistics.median(held), 4) if held else None,
            beyond_30_percent=sum(abs(c.error) > 0.30 for c in group),
            worst_error=round(worst.error, 4),
            worst_speed_bias=round(worst.speed_bias, 4),
            median_speed_bias=round(statistics.median(c.speed_bias for c in group), 4),
        ))
    return tuple(records)


PROFILE_METRICS = ("output_tokens_per_s_per_user", "output_tokens_per_s_per_gpu")


def profile_scenario(profile: ServingProfile, concurrency: int) -> tuple[Deployment, Workload]:
    d = Deployment(model=profile.model, gpu=profile.accelerator, gpus=profile.gpus,
                   tensor_parallel_size=min(profile.gpus, 8), engine=profile.engine,
                   quantization=profile.quantization, max_model_len=profile.input_tokens + profile.output_tokens)
    w = Workload(input_len=profile.input_tokens, output_len=profile.output_tokens, concurrency=concurrency,
                 speculative_tokens=1 if profile.speculative else 0)
    return d, w


def profile_checks(profile: ServingProfile, catalog: Catalog) -> list[SpeedCheck]:
    """The calibrated model (profiles switched off) against each point of a measured sweep."""
    checks = []
    family = calibration_family(catalog.engine(profile.engine), None, catalog.accelerator(profile.accelerator))
    for pt in profile.points:
        d, w = profile_scenario(profile, pt.concurrency)
        for metric in PROFILE_METRICS:
            measured = getattr(pt, metric).value
            base = dict(id=f"{profile.id}@{pt.concurrency}", kind="profile", split=profile.split, metric=metric,
                        measured=measured, family=family, concurrency=pt.concurrency, model=profile.model)
            try:
                est = estimate(d, w, catalog, use_profiles=False)
            except InferplanError as exc:
                checks.append(SpeedCheck(**base, predicted=None, error=None, bound=None, note=exc.describe()))
                continue
            predicted = getattr(est, metric)
            checks.append(SpeedCheck(**base, predicted=predicted, error=(predicted - measured) / measured,
                                     bound=est.bound, note=profile.caveats[0] if profile.caveats else None))
    return checks


def validate_speed(catalog: Catalog | None = None) -> SpeedValidation:
    catalog = catalog or load_catalog()
    checks = tuple(check_point(p, catalog) for p in catalog.speed_points) + tuple(
        c for profile in catalog.serving_profiles for c in profile_checks(profile, catalog)
    )
    medians, worst = summarise(checks)
    return SpeedValidation(checks=checks, medians=medians, worst=worst, decode_by_build_year=by_build_year(checks),
                           by_family=accuracy_records(checks))
