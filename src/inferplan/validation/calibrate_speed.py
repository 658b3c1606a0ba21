"""Fit the speed model's per-engine constants on the ``fit`` speed points; score the rest.

Per engine family (``vllm``, ``sglang``, ``trtllm``, ``llamacpp-<back end>``, ``mlx``) seven
constants: achievable share of peak bandwidth (decode), of peak FLOP/s (prefill), a fixed
per-step overhead, a per-layer overhead, an extra overhead per mixture-of-experts layer and a
per-sequence overhead. The pooled fit over all families comes first; each family's constants then
minimise the mean absolute log error over the family's fit points plus a penalty on their
distance from the pooled values (``PRIOR_WEIGHT``, in units of each constant's bounds), by
coordinate descent within physical bounds. So a constant the family's points do not pin down
(SGLang's prefill efficiency, with few prefill points) keeps the pooled value instead of drifting
to a bound. A family with fewer than ``MIN_POINTS`` fit points takes the pooled fit (never a fit
to one point).

``python -m inferplan.validation.calibrate_speed`` prints the constants and the errors.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import operator
import statistics
from collections.abc import Callable
from dataclasses import dataclass

from inferplan.catalog.loader import Catalog, load_catalog
from inferplan.catalog.points_schema import SpeedPoint
from inferplan.errors import InferplanError
from inferplan.performance.context import ServingContext
from inferplan.performance.estimate import ServingEstimate
from inferplan.performance.rates import PIPELINE_HOP_CONSTANT, calibration_family
from inferplan.performance.serving import concurrency_for, estimate_at
from inferplan.validation.fit_stamp import GENERATED_NAME, inputs_sha256, stamped
from inferplan.validation.speed import PROFILE_METRICS, metric_value, point_scenario, profile_scenario

MIN_POINTS = 10  # fewer fit points than this: the family takes the pooled fit
MAX_SWEEPS, CONVERGED = 20, 1e-5  # coordinate descent stops when a sweep gains less than this
# A family's achievable share of peak bandwidth or FLOP/s is fitted only when at least MIN_RESPONDING
# of its points respond to it; else it keeps the pooled share (one TTFT point with an unmodelled
# fixed delay set SGLang's compute share to 0.15), and so is the per-request cost before the first
# token (one TTFT point would set it). The per-step, -layer and -sequence overheads are not guarded:
# at batch 1 they trade off, and fixing one at the pooled value distorts the other.
MIN_RESPONDING = 3
GUARDED = ("bandwidth_efficiency", "compute_efficiency", "unpack_flops_per_weight", "request_overhead_s")
RESPONSE = 0.01  # |change of log prediction| that counts as responding (see ``responding``)
# Weight of the pull towards the pooled fit: 0.05 costs as much as a 5 % mean |log error| when a
# constant sits a whole bound width away from its pooled value. Tried 0.05 and 0.5 (docs/speed.md).
PRIOR_WEIGHT = 0.05
FAMILIES = ("vllm", "sglang", "trtllm", "vllm-rocm", "sglang-rocm", "sglang-rocm-cdna4", "llamacpp", "llamacpp-cuda", "llamacpp-cuda-dc", "llamacpp-cuda-hbm",
            "llamacpp-metal", "llamacpp-vulkan", "llamacpp-rocm", "mlx", "mlx-apple-m1")
BOUNDS = {
    "bandwidth_efficiency": (0.2, 0.92),  # STREAM-like tests reach ~90% of peak HBM/GDDR bandwidth
    "compute_efficiency": (0.05, 0.95),
    "step_overhead_s": (0.0, 0.02),
    "layer_overhead_s": (0.0, 2e-4),
    "moe_layer_overhead_s": (0.0, 2e-4),
    "seq_overhead_s": (0.0, 1e-4),
    "unpack_flops_per_weight": (0.0, 40.0),  # K-quant unpacking: a few dozen integer and float ops per weight at most
    "request_overhead_s": (0.0, 0.3),  # per request before its first token: serving front ends take tens of ms
}
CONSTANT_IDS = {
    "bandwidth_efficiency": "decode-bandwidth-efficiency-{}",
    "compute_efficiency": "prefill-compute-efficiency-{}",
    "step_overhead_s": "decode-step-overhead-s-{}",
    "layer_overhead_s": "decode-layer-overhead-s-{}",
    "moe_layer_overhead_s": "decode-moe-layer-overhead-s-{}",
    "seq_overhead_s": "decode-seq-overhead-s-{}",
    "unpack_flops_per_weight": "unpack-flops-per-weight-{}",
    "request_overhead_s": "ttft-request-overhead-s-{}",
}


@dataclass
class Prepared:
    id: str
    family: str
    ctx: ServingContext
    concurrency: int
    measured: float
    metric: Callable[[ServingEstimate], float]


def _family(ctx: ServingContext, engine: str, backend: str | None) -> str:
    return calibration_family(ctx.catalog.engine(engine), backend, ctx.mp.accelerator)


def pipeline_engines(catalog: Catalog) -> tuple[str, ...]:
    """The engines with a fitted per-request cost at pipeline stage boundaries (calibration.yaml
    pipeline-hop-s-per-request-<engine>): their points with pipeline stages calibrate that cost
    (calibrate_pipeline.py) and not the family's constants, so neither fit waits on the other."""
    return tuple(e.id for e in catalog.engines if PIPELINE_HOP_CONSTANT.format(e.id) in catalog.calibration.records)


def calibrates_pipeline(point: SpeedPoint, catalog: Catalog) -> bool:
    return point.pipeline_parallel_size > 1 and point.engine in pipeline_engines(catalog)


def prepare(catalog: Catalog, split: str | None = "fit",
            pipeline: bool = False) -> tuple[list[Prepared], list[tuple[str, str]]]:
    """Speed points and profile points of ``split``, each with its planned context: those that
    calibrate the family constants, or with ``pipeline`` those that calibrate the stage-boundary
    cost (``calibrates_pipeline``; no profile sweep runs pipeline stages). Offload points calibrate no
    GPU constant."""
    ready, skipped = [], []
    for point in catalog.speed_points:
        if (split and point.split != split) or not point.cuda_graphs:  # eager runs: not modelled
            continue
        if point.offloaded:  # weights in host RAM: they set offload constants only (validation/offload_fit.py)
            continue
        if calibrates_pipeline(point, catalog) != pipeline:
            continue
        try:
            d, w = point_scenario(point, catalog)
            ctx = ServingContext(catalog, d, w)
            if point.concurrency and point.concurrency > ctx.max_concurrency():
                raise InferplanError("concurrency beyond the KV cache", field="concurrency")
        except InferplanError as exc:
            skipped.append((point.id, exc.describe()))
            continue
        ready.append(Prepared(point.id, _family(ctx, point.engine, point.backend), ctx, concurrency_for(ctx, w),
                              point.measured.value, functools.partial(metric_value, point)))
    for profile in catalog.serving_profiles:
        if pipeline or (split and profile.split != split):
            continue
        for pt in profile.points:
            d, w = profile_scenario(profile, pt.concurrency)
            try:
                ctx = ServingContext(catalog, d, w)
                if pt.concurrency > ctx.max_concurrency():
                    raise InferplanError("concurrency beyond the KV cache", field="concurrency")
            except InferplanError as exc:
                skipped.append((f"{profile.id}@{pt.concurrency}", exc.describe()))
                continue
            family = _family(ctx, profile.engine, None)
            for metric in PROFILE_METRICS:
                ready.append(Prepared(f"{profile.id}@{pt.concurrency}:{metric}", family, ctx, pt.concurrency,
                                      getattr(pt, metric).value, operator.attrgetter(metric)))
    return ready, skipped


def log_error(p: Prepared, params: dict[str, float]) -> float:
    p.ctx.rates = dataclasses.replace(p.ctx.rates, **params)
    return math.log(p.metric(estimate_at(p.ctx, p.concurrency)) / p.measured)


def objective(points: list[Prepared], params: dict[str, float], prior: dict[str, float] | None = None) -> float:
    error = statistics.fmean(abs(log_error(p, params)) for p in points)
    if prior is None:
        return error
    return error + PRIOR_WEIGHT * sum(((params[n] - prior[n]) / (hi - lo)) ** 2 for n, (lo, hi) in BOUNDS.items())


def golden_section_minimum(f, lo: float, hi: float, iterations: int = 40) -> float:
    """Where in ``lo``..``hi`` the one-argument function ``f`` is least (one minimum there), by ``iterations``
    steps of golden-section search."""
    g = (math.sqrt(5) - 1) / 2
    a, b = lo, hi
    c, d = b - g * (b - a), a + g * (b - a)
    fc, fd = f(c), f(d)
    for _ in range(iterations):
        if fc < fd:
            b, d, fd = d, c, fc
            c = b - g * (b - a)
            fc = f(c)
        else:
            a, c, fc = c, d, fd
            d = a + g * (b - a)
            fd = f(d)
    return (a + b) / 2


def fit_params(points: list[Prepared], start: dict[str, float], prior: dict[str, float] | None = None,
               free: tuple[str, ...] = tuple(BOUNDS)) -> dict[str, float]:
    """Coordinate descent (a golden-section search per constant) until a sweep gains less than
    ``CONVERGED`` (at most ``MAX_SWEEPS``): a fixed four sweeps stopped short on collinear constants."""
    params = dict(start)
    best = objective(points, params, prior)
    for _ in range(MAX_SWEEPS):
        for name in free:
            lo, hi = BOUNDS[name]
            params[name] = golden_section_minimum(lambda v: objective(points, {**params, name: v}, prior), lo, hi)
        now = objective(points, params, prior)
        if best - now < CONVERGED:
            break
        best = now
    return params


def responding(points: list[Prepared], params: dict[str, float], name: str) -> int:
    """How many of ``points`` respond to constant ``name``: moving it by a tenth of its bound width
    changes the prediction by more than ``RESPONSE``."""
    lo, hi = BOUNDS[name]
    step = (hi - lo) / 10
    moved = {**params, name: params[name] + step if params[name] + step <= hi else params[name] - step}
    return sum(abs(log_error(p, moved) - log_error(p, params)) > RESPONSE for p in points)


def responders(points: list[Prepared], pooled: dict[str, float], name: str) -> int:
    """How many of ``points`` respond to constant ``name`` at the pooled values or with that
    constant at its fixed start: where it sits in the pooled fit must not hide the points it
    would bind at a value of its own (DGX Spark's gpt-oss-20b prompt is memory-bound at the pooled
    share of peak FLOP/s read per 512-token micro-batch, compute-bound at the family's own)."""
    return max(responding(points, pooled, name), responding(points, {**pooled, name: START[name]}, name))


def best_of_starts(points: list[Prepared], pooled: dict[str, float], free: tuple[str, ...]) -> dict[str, float]:
    """A family's constants from several starts — the pooled fit, the fixed START for the constants
    it may fit, and that with a grid of fixed costs — keeping the lowest objective. Coordinate
    descent from one start can stop in a far worse local optimum (``OVERHEAD_GRID``)."""
    base = {**pooled, **{n: START[n] for n in free}}
    starts = [pooled, base, *({**base, **dict(zip(FIXED_COSTS, grid))} for grid in OVERHEAD_GRID)]
    fits = [fit_params(points, start, prior=pooled, free=free) for start in starts]
    return min(fits, key=lambda params: objective(points, params, pooled))


# More starts for the three fixed costs, which trade off against each other at batch 1: from the
# pooled start alone MLX on M1 stopped at mean |log error| 0.216 (a 4 ms step cost), from these at
# 0.153 (a per-MoE-layer cost of 170 µs).
FIXED_COSTS = ("step_overhead_s", "layer_overhead_s", "moe_layer_overhead_s")
OVERHEAD_GRID = tuple((step, 1e-4, moe) for step in (0.0, 5e-3) for moe in (1e-5, 1.5e-4))


# Fixed starting point, so a refit does not depend on the constants currently shipped.
START = {"bandwidth_efficiency": 0.7, "compute_efficiency": 0.4, "step_overhead_s": 1e-3, "layer_overhead_s": 2e-5,
         "moe_layer_overhead_s": 1e-5, "seq_overhead_s": 5e-6, "unpack_flops_per_weight": 0.0, "request_overhead_s": 0.0}


@dataclass(frozen=True)
class FamilyFit:
    family: str
    params: dict[str, float]
    points: tuple[str, ...]
    pooled: bool
    mean_abs_log_error: float
    kept_pooled: tuple[str, ...] = ()  # constants too few of the family's points respond to: pooled value kept


def fit_points(points: list[Prepared], progress: Callable[[str], None] | None = None) -> list[FamilyFit]:
    """The pooled fit over ``points``, then each family's own where it has ``MIN_POINTS``."""
    if not points:
        return []
    pooled = fit_params(points, START)
    fits = []
    families = sorted({p.family for p in points} | set(FAMILIES))
    for family in families:
        if progress:
            progress(family)
        own = [p for p in points if p.family == family]
        if len(own) >= MIN_POINTS:
            free = tuple(n for n in BOUNDS if n not in GUARDED or responders(own, pooled, n) >= MIN_RESPONDING)
            params = best_of_starts(own, pooled, free)
            fits.append(FamilyFit(family, params, tuple(p.id for p in own), False, objective(own, params),
                                  tuple(n for n in BOUNDS if n not in free)))
        else:
            err = objective(own, pooled) if own else float("nan")
            fits.append(FamilyFit(family, pooled, tuple(p.id for p in points), True, err))
    return fits


def fit_speed(catalog: Catalog) -> list[FamilyFit]:
    return fit_points(prepare(catalog, "fit")[0])


def to_yaml(fits: list[FamilyFit]) -> str:
    """The generated ``calibration_speed.yaml``: every family's eight constants with provenance."""
    lines = [
        "# GENERATED by `python -m inferplan.validation.calibrate_speed --write`: do not edit by hand.",
        "# Per-engine-family speed constants fitted on the `fit` speed points and profile sweeps",
        f"# (docs/speed.md). Families with fewer than {MIN_POINTS} fit points carry the pooled fit over all points.",
        "calibration:",
    ]
    for f in fits:
        how = (f"pooled fit over all {len(f.points)} fit points (this family has fewer than {MIN_POINTS})"
               if f.pooled else f"fitted on this family's {len(f.points)} fit points")
        prior = "" if f.pooled else f" + {PRIOR_WEIGHT} x squared distance from the pooled fit in bound widths"
        error = "no own points" if math.isnan(f.mean_abs_log_error) else f"mean |log error| {f.mean_abs_log_error:.3f} on its own points"
        for name, value in f.params.items():
            method = (f"pooled value kept: fewer than {MIN_RESPONDING} of this family's {len(f.points)} fit points respond to it"
                      if name in f.kept_pooled else
                      f"{how}: coordinate descent minimising mean |log(predicted / measured)|{prior}, bounds {BOUNDS[name]}")
            lines += [
                f"  - id: {CONSTANT_IDS[name].format(f.family)}",
                f"    value: {yaml_number(value)}",
                f"    unit: {UNITS[name]}",
                "    kind: fitted",
                f"    fitted_on: []  # {how}",
                f"    method: \"{method}\"",
                f"    error: \"{error}\"",
            ]
    return "\n".join(lines) + "\n"


def yaml_number(value: float) -> str:
    """``value`` to six significant digits as YAML reads a float: ``1e-05`` is a string to PyYAML
    (YAML 1.1 wants a dot in the mantissa), ``1.0e-05`` a number."""
    text = f"{value:.6g}"
    mantissa, e, exponent = text.partition("e")
    return f"{mantissa}.0e{exponent}" if e and "." not in mantissa else text


UNITS = {
    "bandwidth_efficiency": "fraction of peak memory bandwidth achieved",
    "compute_efficiency": "fraction of dense peak FLOP/s achieved",
    "step_overhead_s": "seconds per forward step",
    "layer_overhead_s": "seconds per decoder layer per step",
    "moe_layer_overhead_s": "seconds more per mixture-of-experts layer per step",
    "seq_overhead_s": "seconds per running sequence per step",
    "unpack_flops_per_weight": "FLOP-equivalents of ALU work per super-block (K-quant) weight read",
    "request_overhead_s": "seconds per request before its first token",
}


def main() -> None:  # pragma: no cover - a maintenance script
    import sys

    catalog = load_catalog()
    fits = fit_speed(catalog)
    if "--write" in sys.argv:
        text = stamped(to_yaml(fits), inputs_sha256(catalog.data_dir))
        (catalog.data_dir / GENERATED_NAME).write_text(text, encoding="utf-8")
    for f in fits:
        kind = f"pooled over {len(f.points)} points" if f.pooled else f"{len(f.points)} own points"
        print(f"{f.family:16s} ({kind}; mean |log error| {f.mean_abs_log_error:.3f})")
        for name, value in f.params.items():
            kept = "  (pooled: too few points respond)" if name in f.kept_pooled else ""
            print(f"    {CONSTANT_IDS[name].format(f.family)} = {value:.6g}{kept}")


if __name__ == "__main__":  # pragma: no cover
    main()
