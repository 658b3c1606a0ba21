"""The user's own measured runs, planned on: where a run of the same deployment (model, accelerator,
GPUs, tensor parallel size, engine, weight format, what it was launched to keep in host RAM, and the
engine settings it ran with) was measured without speculative decoding, its figures replace the model's.
A run of the same deployment launched with other engine settings is used only nearly matching: the
model at the run's own launch is scaled to it, and the estimate says which settings differ.

The runs come in as data (the shells read them from the store and pass them here). At the asked
input/output lengths a run is interpolated across concurrency (linear in log concurrency, as the
shipped profiles are, ``profiles.py``); outside its concurrency range, or at other lengths, the
calibrated model's estimate is scaled by measured/model at the nearest measured point, and the
estimate says what differs. As measured profiles (``as_profiles``, which ``plan`` and ``search`` interpolate) the
runs state their launch, and apply only to a deployment launched the same way (``launch_differs``).
"""

from __future__ import annotations

import datetime as dt
import math
from typing import TYPE_CHECKING, Callable

from pydantic import BaseModel, ConfigDict, Field

from inferplan.catalog.flags_schema import as_engine_runs, flags_for
from inferplan.catalog.memory_rules import read_release
from inferplan.catalog.points_schema import LaunchFields, ProfileLaunch, ProfilePoint, ServingProfile
from inferplan.errors import InferplanError
from inferplan.inputs.deployment import Deployment
from inferplan.inputs.workload import Workload
from inferplan.memory.fit import MemoryPlan, plan_memory

if TYPE_CHECKING:  # pragma: no cover
    from inferplan.catalog.loader import Catalog
    from inferplan.performance.estimate import ServingEstimate

SOURCE = "measured-local"


class MeasuredPoint(BaseModel):
    """One load level of a benchmark run, in SI units (None: the client did not report it)."""

    model_config = ConfigDict(frozen=True, defer_build=True, extra="forbid", allow_inf_nan=False)

    concurrency: int = Field(ge=1, le=10_000_000)
    input_tokens: int = Field(ge=0, le=100_000_000)
    output_tokens: int = Field(ge=0, le=100_000_000)
    ttft_s: float | None = Field(None, gt=0, le=1e6)
    tpot_s: float | None = Field(None, gt=0, le=1e6)
    output_tokens_per_s_total: float | None = Field(None, gt=0, le=1e12)
    requests_per_s: float | None = Field(None, gt=0, le=1e9)
    prefill_tokens_per_s: float | None = Field(None, gt=0, le=1e12)  # prompt processing alone (llama-bench pp)
    ttft_p50_s: float | None = Field(None, gt=0, le=1e6)
    ttft_p99_s: float | None = Field(None, gt=0, le=1e6)
    tpot_p50_s: float | None = Field(None, gt=0, le=1e6)
    tpot_p99_s: float | None = Field(None, gt=0, le=1e6)
    # the load the client offered: its request rate (None: no rate limit, as with the clients'
    # default "inf") and the run's length in requests; ``requests_per_s`` is what completed
    request_rate_per_s: float | None = Field(None, gt=0, le=1e6)
    requests: int | None = Field(None, ge=1, le=100_000_000)
    # how prompt and output lengths spread, when the file says: uniform, with this squared coefficient
    # of variation (SGLang's random dataset); None: every request the mean length
    lengths_uniform_scv: float | None = Field(None, ge=0, le=1 / 3)
    # requests that failed (an error, or cut off unfinished) where the client counts them (None: it does not say):
    # the figures above are over the requests that completed only
    failed_requests: int | None = Field(None, ge=0, le=100_000_000)


class UserRun(LaunchFields):
    """A stored run as the performance layer sees it: the deployment it measured and its points; how it was launched
    (``LaunchFields``: its TP size, CUDA graphs, offload — RUN_OFFLOAD — and engine settings — RUN_SETTINGS —, None
    where not stated) and the host it ran on."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    id: int
    model: str
    accelerator: str
    gpus: int
    pipeline_parallel_size: int = 1
    data_parallel_size: int | None = None  # None: the GPUs over TP × PP
    enable_expert_parallel: bool = False
    engine: str
    engine_version: str
    quantization: str
    measured_on: dt.date
    points: tuple[MeasuredPoint, ...]
    # the host it ran on (Deployment's fields of these names, RUN_HOST; None: not stated)
    host_sockets: int | None = None
    host_memory_gb: float | None = None
    host_memory_bandwidth_gb_per_s: float | None = None
    # the speculative decoding it ran with, as deploy launches it (0 draft tokens: none); the acceptance rate
    # per draft token it is predicted at (None: the workload's default)
    speculative_tokens: int = 0
    speculative_method: str | None = None  # memory.mtp.SPECULATIVE_METHODS; None: as perf plans a draft
    draft_model: str | None = None
    acceptance_rate: float | None = None


# the Deployment fields a run states of what it kept in host RAM, its KTransformers release and its host
# (``measurements import`` and ``acceptance`` take them by the same flags)
RUN_OFFLOAD = ("n_gpu_layers", "n_cpu_moe", "cpu_offload_gb", "kv_offloading_size", "kv_offloading_backend", "hicache_ratio",
               "hicache_size", "kt_num_gpu_experts", "kt_method", "kt_release", "host_sockets", "host_memory_gb",
               "host_memory_bandwidth_gb_per_s")
# of those, the host the run ran on: planned with, not matched (perf plans on a run of the same launch)
RUN_HOST = ("host_sockets", "host_memory_gb", "host_memory_bandwidth_gb_per_s")
# of those, what a run or profile is matched on (``launched_offload``)
LAUNCH_OFFLOAD = tuple(f for f in RUN_OFFLOAD if f not in RUN_HOST)
# the engine settings a launch command states beyond its layout, context and offload that change the prediction
# (``measurements import`` and ``acceptance`` take them by deploy's and perf's flags)
RUN_SETTINGS = ("kv_cache_dtype", "gpu_memory_utilization", "max_num_seqs", "max_num_batched_tokens", "ubatch_size",
                "moe_runner_backend")
# the speculative decoding a run states (``measurements import`` takes them as deploy and perf name them)
RUN_DRAFTS = ("speculative_tokens", "speculative_method", "draft_model", "acceptance_rate")
# how the memory plan states each of RUN_SETTINGS as the engine runs it (stated, else its default): perf matches a run
# on all of them, since each changes the speed at a concurrency or the concurrency reached — the KV cache dtype the
# bytes a step reads and the sequences the cache holds, the memory fraction the sequences held, the sequence cap and
# the step's token budget the batch and the prompts fused into it, llama.cpp's micro-batch and the MoE runner the
# kernels a step runs
RUN_SETTING_AS_RUN: dict[str, Callable[[MemoryPlan, Deployment], object]] = {
    "kv_cache_dtype": lambda mp, d: mp.kv_dtype.id,
    "gpu_memory_utilization": lambda mp, d: round(mp.settings.memory_fraction, 6),
    "max_num_seqs": lambda mp, d: mp.settings.max_num_seqs,
    "max_num_batched_tokens": lambda mp, d: mp.settings.max_num_batched_tokens,
    "ubatch_size": lambda mp, d: mp.settings.prefill_micro_batch_tokens,
    "moe_runner_backend": lambda mp, d: d.moe_runner_backend,
}


def run_deployment(run: UserRun, **settings) -> Deployment:
    """The deployment ``run`` measured (its GPUs, layout, engine, weight format, offload, host and engine settings;
    its draft tokens per step, drafted with the model's MTP layers where its speculative method is mtp, with its
    EAGLE-3 draft where it is eagle3), with ``settings`` beside."""
    method = run.speculative_method if run.speculative_tokens else None
    mtp = {"mtp_draft": True} if method == "mtp" else {"eagle3_draft": run.draft_model} if method == "eagle3" and run.draft_model else {}
    mtp |= ({"speculative_tokens": run.speculative_tokens, "speculative_method": method} if run.speculative_tokens else {}) | (
        {"enforce_eager": True} if run.enforce_eager else {})
    return Deployment(model=run.model, gpu=run.accelerator, gpus=run.gpus, tensor_parallel_size=run.tensor_parallel_size,
                      pipeline_parallel_size=run.pipeline_parallel_size, data_parallel_size=run.data_parallel_size,
                      enable_expert_parallel=run.enable_expert_parallel, engine=run.engine, quantization=run.quantization,
                      **{f: getattr(run, f) for f in (*RUN_OFFLOAD, *RUN_SETTINGS) if getattr(run, f) is not None}, **mtp,
                      **settings)


def launched_settings(x: "UserRun | ProfileLaunch | Deployment") -> dict[str, object]:
    """The engine settings (``RUN_SETTINGS``) a run or deployment states (a KV cache dtype of auto states none)."""
    return {f: v for f in RUN_SETTINGS if (v := getattr(x, f)) is not None and not (f == "kv_cache_dtype" and v == "auto")}


def run_launch(d: Deployment, run: "UserRun | ProfileLaunch", release: str | None = None, *,
               stated: Deployment | None = None) -> Deployment:
    """``d`` as ``run`` (a run, or a profile's launch) was launched: the engine settings it states where they differ
    from ``stated``'s (the deployment as asked, before the planner filled any in; default ``d``), the engine's default
    where it states none, and its engine release (``run_release``; None: ``d``'s)."""
    ran, asked = launched_settings(run), launched_settings(stated or d)
    update = {f: ran.get(f, Deployment.model_fields[f].default) for f in RUN_SETTINGS if ran.get(f) != asked.get(f)}
    return d.model_copy(update=update | ({"engine_version": release} if release else {}))


def run_release(catalog: "Catalog", d: Deployment, engine_version: str | None) -> str | None:
    """The engine release a run (or a profile's launch) of ``d``'s engine ran, as ``d`` (its deployment, or one planned
    like it) takes it (``release_reading``); None: ``d``'s own release."""
    return release_reading(catalog, d, engine_version)[0]


def release_reading(catalog: "Catalog", d: Deployment, engine_version: str | None) -> tuple[str | None, str | None]:
    """The release ``engine_version`` names where the memory rules plan it (``memory_rules.read_release``) and the
    engine runs ``d``'s model and weight format at it as the catalogue knows, and None; else None and why not: the
    text names no release, no memory rule covers it (the covered ranges named), it has no such variant (V0 named
    on a release without V0), or ``d``'s memory plan is refused at it (a release that predates the model's
    architecture, naming the first that loads it)."""
    release, why = read_release(catalog, d.engine, engine_version) if engine_version else (None, "names no release")
    if release is None:
        return None, why
    try:
        plan_memory(d.model_copy(update={"engine_version": release}), catalog)
    except InferplanError as exc:
        if exc.field == "engine_version":
            return None, str(exc)
    return release, None


def settings_as_run(catalog: "Catalog", d: Deployment) -> dict[str, object] | None:
    """``d``'s engine settings (those of ``RUN_SETTINGS`` its engine's launcher takes, engine_flags.yaml) as the engine
    runs them at its release: stated, else that release's default (``RUN_SETTING_AS_RUN``; a stated value that is the
    engine's own default, ``flags_schema.as_engine_runs``, as none). None: the memory plan of ``d`` is refused."""
    try:
        mp = plan_memory(d, catalog)
    except InferplanError:
        return None
    flags = flags_for(catalog, d.engine)
    return {f: as_engine_runs(catalog, d.engine, f, RUN_SETTING_AS_RUN[f](mp, d)) for f in RUN_SETTINGS
            if flags is None or flags.takes(f)}


def settings_differ(catalog: "Catalog", d: Deployment, run: "UserRun | ProfileLaunch", *,
                    stated: Deployment | None = None) -> dict[str, tuple]:
    """The engine settings ``run`` (a run, or a profile's launch) ran with that ``d`` is not planned with, each as
    (the run's, ``d``'s), as the engine runs them (``settings_as_run``): the run's unstated settings at the defaults
    of its own release (``run_release``), ``d``'s at its own, so a launch is the same whether its defaults are written
    out or not. Where the memory plan of either launch is refused, as stated (None: the engine's default). Empty:
    the same launch. The one comparison of launches: perf's matching and pooling (``with_user_runs``) and the
    profiles' (``as_profiles``, ``profiles.find_profile``) all use it."""
    launch = run_launch(d, run, run_release(catalog, d, run.engine_version), stated=stated)
    mine, planned = settings_as_run(catalog, launch), settings_as_run(catalog, d)
    if mine is None or planned is None:
        ran, asked = launched_settings(run), launched_settings(stated or d)
        mine, planned = ({f: x.get(f) for f in RUN_SETTINGS} for x in (ran, asked))
    return {f: (mine[f], planned[f]) for f in planned if mine[f] != planned[f]}


def run_workload(run: UserRun, p: MeasuredPoint) -> Workload:
    """The workload of one load level of ``run``: its lengths and concurrency, with the run's draft tokens at
    its acceptance rate."""
    rate = {"acceptance_rate": run.acceptance_rate} if run.acceptance_rate is not None else {}
    drafts = {"speculative_tokens": run.speculative_tokens, **rate} if run.speculative_tokens else {}
    return Workload(input_len=max(p.input_tokens, 1), output_len=max(p.output_tokens, 1), concurrency=p.concurrency, **drafts)


def launched_offload(x: "UserRun | ProfileLaunch | Deployment") -> tuple:
    """How a run, profile launch or deployment was launched to use host RAM (``LAUNCH_OFFLOAD``)."""
    return tuple(getattr(x, f) for f in LAUNCH_OFFLOAD)


NO_OFFLOAD = (None,) * len(LAUNCH_OFFLOAD)  # launched_offload of a run or deployment that states none


def layout_differs(x: "UserRun | ProfileLaunch", d: Deployment, tp: int) -> dict[str, tuple]:
    """How ``x`` (a run, or a profile's launch) was laid out and launched to use host RAM where ``d``, planned at
    tensor parallel size ``tp``, is not: its TP size, CUDA graphs (enforce_eager) and offload (``LAUNCH_OFFLOAD``),
    each as (``x``'s, ``d``'s). Empty: the same layout and offload."""
    pairs = {"tensor_parallel_size": (x.tensor_parallel_size, tp), "enforce_eager": (x.enforce_eager, d.enforce_eager),
             **{f: (getattr(x, f), getattr(d, f)) for f in LAUNCH_OFFLOAD}}
    return {f: pair for f, pair in pairs.items() if pair[0] != pair[1]}


def launch_differs(catalog: "Catalog", d: Deployment, x: "UserRun | ProfileLaunch", tp: int, *,
                   stated: Deployment | None = None) -> dict[str, tuple]:
    """Every way ``x`` (a run, or a profile's launch) was launched that ``d`` is not planned with: its layout and
    offload (``layout_differs``), else its engine settings as the engine runs them (``settings_differ``). Empty: the
    same launch."""
    return layout_differs(x, d, tp) or settings_differ(catalog, d, x, stated=stated)


def differ_words(differs: dict[str, tuple]) -> list[str]:
    """``launch_differs``' differences in words ("launched with max_num_seqs 8, planned with 1024")."""
    def said(f: str, value: object) -> str:
        return ("none" if f in LAUNCH_OFFLOAD else "the engine's default") if value is None else str(value)
    return [f"launched with {f} {said(f, ran)}, planned with {said(f, planned)}"
            for f, (ran, planned) in differs.items()]


def matching_runs(runs: tuple[UserRun, ...], est: "ServingEstimate", d: Deployment, tp: int) -> list[UserRun]:
    """The runs of ``est``'s deployment ``d``: its model, GPUs, engine and weight format, laid out and offloaded as
    ``d`` at tensor parallel size ``tp`` (``layout_differs``), without speculative decoding (an estimate with
    drafts plans on no run)."""
    return [r for r in runs if (r.model, r.accelerator, r.gpus, r.engine, r.quantization)
            == (est.model, est.accelerator, est.gpus, est.engine, est.quantization) and not layout_differs(r, d, tp)
            and not r.speculative_tokens and any(p.tpot_s or p.output_tokens_per_s_total for p in r.points)]


def interp_log(xs: list[float], ys: list[float], x: float) -> float:
    """y at ``x``, linear in log x between the measured points ``xs`` (ascending; one point: its y)."""
    if len(xs) == 1:
        return ys[0]
    for (x0, y0), (x1, y1) in zip(zip(xs, ys), zip(xs[1:], ys[1:])):
        if x0 <= x <= x1:
            t = 0.0 if x1 == x0 else (math.log(x) - math.log(x0)) / (math.log(x1) - math.log(x0))
            return y0 + t * (y1 - y0)
    raise ValueError("outside the measured range")


def _pooled(found: list[UserRun]) -> UserRun:
    """The matching runs as one: every load level measured, the newest run's where two measured the
    same one; named by the newest run (its id and date)."""
    newest_first = sorted(found, key=lambda r: (r.measured_on, r.id), reverse=True)
    points: dict[tuple[int, int, int], MeasuredPoint] = {}
    for run in newest_first:
        for p in run.points:
            points.setdefault((p.concurrency, p.input_tokens, p.output_tokens), p)
    return newest_first[0].model_copy(update={"points": tuple(points.values())})


def source_words(est: "ServingEstimate") -> str:
    """Where an estimate's figures come from, in words that start with its ``source``: a published
    profile ("measured"), the user's run interpolated or the model scaled to it ("measured-local: …"),
    or the calibrated model and what bounds it."""
    if est.source == SOURCE:
        how = ("interpolated across your run" if est.bound == "measured"
               else f"the calibrated model ({est.bound}-bound) scaled to your run")
        return f"{SOURCE}: {how} {est.measured_record}"
    if est.source == "measured":
        return "measured"
    return f"calibrated model, {est.bound}-bound"


def _label(run: UserRun) -> str:
    return f"measured (yours, {run.measured_on.isoformat()})"


def _same_lengths(run: UserRun, input_len: int, output_len: int) -> list[MeasuredPoint]:
    return sorted((p for p in run.points if (p.input_tokens, p.output_tokens) == (input_len, output_len)
                   and (p.tpot_s or p.output_tokens_per_s_total)), key=lambda p: p.concurrency)


def _nearest(run: UserRun, est: "ServingEstimate", input_len: int, output_len: int) -> MeasuredPoint:
    def distance(p: MeasuredPoint) -> float:
        return (abs(math.log(max(p.input_tokens, 1) / input_len)) + abs(math.log(max(p.output_tokens, 1) / output_len))
                + abs(math.log(p.concurrency / est.concurrency)))
    return min((p for p in run.points if p.tpot_s or p.output_tokens_per_s_total), key=distance)


ModelAt = Callable[[UserRun, MeasuredPoint], "ServingEstimate | None"]


def with_user_runs(est: "ServingEstimate", runs: tuple[UserRun, ...], *, d: Deployment, tp: int, input_len: int,
                   output_len: int, model_at: ModelAt,
                   differ: Callable[[UserRun], dict[str, tuple]] = lambda run: {}) -> "ServingEstimate":
    """``est`` (of deployment ``d``, at tensor parallel size ``tp``) from the newest matching run (``matching_runs``)
    launched with the same engine settings (``differ`` gives the ones a run ran with that ``est``'s deployment is not
    planned with, ``settings_differ``): interpolated at the asked lengths
    inside its concurrency range, else the model scaled by measured/model at the nearest measured point
    (``model_at`` gives the model's estimate at a measured point's workload, on the run's own launch). Where
    every matching run ran with other settings, the newest of them (pooled with those ``differ`` finds launched as it
    was) is used nearly matching, scaled at its nearest point, and the estimate names the settings that differ."""
    found = matching_runs(runs, est, d, tp)
    if not found:
        return est
    same = [r for r in found if not differ(r)]
    if same:
        run, settings = _pooled(same), {}
    else:
        settings = differ(_pooled(found))  # the newest run's launch: pooled with the runs launched as it was
        run = _pooled([r for r in found if differ(r) == settings])
    points = _same_lengths(run, input_len, output_len)
    if not settings and points and points[0].concurrency <= est.concurrency <= points[-1].concurrency:
        result = _interpolated(est, run, points)
        return result if all(p.ttft_s for p in points) else _with_measured_prefill(result, run, input_len, model_at)
    near = _nearest(run, est, input_len, output_len)
    model = model_at(run, near)
    if model is None:  # the measured workload does not fit this deployment as the model sees it
        return est.model_copy(update={"assumptions": (*est.assumptions, (
            f"your run {run.id} measured this deployment at {near.input_tokens}/{near.output_tokens} tokens, concurrency "
            f"{near.concurrency}, which the model cannot place on it: the calibrated model stands"))})
    result = _scaled(est, run, near, model, input_len, output_len, settings)
    return result if near.ttft_s else _with_measured_prefill(result, run, input_len, model_at)


def _with_measured_prefill(est: "ServingEstimate", run: UserRun, input_len: int, model_at: ModelAt) -> "ServingEstimate":
    """Where the run measured no TTFT but did measure prompt processing alone (llama-bench's pp rows),
    the prompt part of TTFT scaled by measured/model prompt time at the measured prompt length
    nearest the asked one; TTFT moves by the prompt time's change."""
    measured = [p for p in run.points if p.prefill_tokens_per_s and p.input_tokens]
    if not measured:
        return est
    near = min(measured, key=lambda p: (abs(math.log(p.input_tokens / max(input_len, 1))), p.concurrency))
    model = model_at(run, near.model_copy(update={"output_tokens": 1}))
    if model is None or model.prefill_s <= 0:
        return est
    r = near.input_tokens / near.prefill_tokens_per_s / model.prefill_s
    prefill = est.prefill_s * r
    note = (f"{_label(run)}: TTFT's prompt time scaled by measured/model prompt processing (×{r:.2f}) from your run "
            f"{run.id}'s {near.prefill_tokens_per_s:,.0f} prompt tokens/s at {near.input_tokens:,} tokens")
    return est.model_copy(update={"prefill_s": prefill, "ttft_s": est.ttft_s + prefill - est.prefill_s,
                                  "assumptions": (*est.assumptions, note)})


def _interpolated(est: "ServingEstimate", run: UserRun, points: list[MeasuredPoint]) -> "ServingEstimate":
    xs = [float(p.concurrency) for p in points]
    c = float(est.concurrency)
    update: dict = {"source": SOURCE, "bound": "measured", "measured_record": run.id, "measured_label": _label(run)}
    if all(p.tpot_s for p in points):
        tpot = interp_log(xs, [p.tpot_s for p in points], c)
        update |= {"tpot_s": tpot, "output_tokens_per_s_per_user": 1 / tpot}
    if all(p.output_tokens_per_s_total for p in points):
        total = interp_log(xs, [p.output_tokens_per_s_total for p in points], c)
        update |= {"output_tokens_per_s_total": total, "output_tokens_per_s_per_gpu": total / est.gpus,
                   "input_tokens_per_s_total": total * est.input_tokens_per_s_total / est.output_tokens_per_s_total}
    if all(p.ttft_s for p in points):
        ttft = interp_log(xs, [p.ttft_s for p in points], c)
        update |= {"ttft_s": ttft, "prefill_s": ttft * est.prefill_s / est.ttft_s}
    note = (f"{_label(run)}: your run {run.id} ({run.engine} {run.engine_version}), interpolated across its measured "
            f"concurrency {points[0].concurrency}–{points[-1].concurrency} at these lengths; figures it did not "
            "record stay the calibrated model's")
    return est.model_copy(update={**update, "validated": (), "assumptions": (*est.assumptions, note)})


def _scaled(est: "ServingEstimate", run: UserRun, near: MeasuredPoint, model: "ServingEstimate",
            input_len: int, output_len: int, settings: dict[str, tuple] | None = None) -> "ServingEstimate":
    update: dict = {"source": SOURCE, "measured_record": run.id, "measured_label": _label(run)}
    ratios = []
    if near.tpot_s:
        r = near.tpot_s / model.tpot_s
        update |= {"tpot_s": est.tpot_s * r, "output_tokens_per_s_per_user": 1 / (est.tpot_s * r)}
        ratios.append(f"TPOT ×{r:.2f}")
    if near.output_tokens_per_s_total:
        r = near.output_tokens_per_s_total / model.output_tokens_per_s_total
        update |= {"output_tokens_per_s_total": est.output_tokens_per_s_total * r,
                   "output_tokens_per_s_per_gpu": est.output_tokens_per_s_per_gpu * r,
                   "input_tokens_per_s_total": est.input_tokens_per_s_total * r}
        ratios.append(f"throughput ×{r:.2f}")
    if near.ttft_s:
        r = near.ttft_s / model.ttft_s
        update |= {"ttft_s": est.ttft_s * r, "prefill_s": est.prefill_s * r}
        ratios.append(f"TTFT ×{r:.2f}")
    differs = []
    if (near.input_tokens, near.output_tokens) != (input_len, output_len):
        differs.append(f"measured at {near.input_tokens}/{near.output_tokens} tokens, asked {input_len}/{output_len}")
    if near.concurrency != est.concurrency:
        differs.append(f"measured at concurrency {near.concurrency}, asked {est.concurrency}")
    differs += differ_words(settings or {})
    launch = " (the model at your run's launch)" if settings else ""
    note = (f"{_label(run)}, nearly matching: your run {run.id} ({run.engine} {run.engine_version}) {'; '.join(differs)}; "
            f"the calibrated model is scaled by measured/model there{launch} ({', '.join(ratios)})")
    return est.model_copy(update={**update, "assumptions": (*est.assumptions, note)})


def run_as_launched(run: UserRun) -> ProfileLaunch:
    """How ``run`` was launched, as a profile states it (its layout, CUDA graphs, offload, engine settings — a KV
    cache dtype of auto as none stated, ``launched_settings`` — and the engine release it names)."""
    return ProfileLaunch(tensor_parallel_size=run.tensor_parallel_size, enforce_eager=run.enforce_eager,
                         engine_version=run.engine_version, **{f: getattr(run, f) for f in LAUNCH_OFFLOAD},
                         **launched_settings(run))


def run_planned(catalog: "Catalog", run: UserRun) -> Deployment:
    """The deployment ``run`` measured (``run_deployment``) at the engine release it ran where the memory rules plan it
    (``run_release``; else the engine's default)."""
    d = run_deployment(run)
    release = run_release(catalog, d, run.engine_version)
    return d.model_copy(update={"engine_version": release}) if release else d


def as_profiles(runs: tuple[UserRun, ...], catalog: "Catalog") -> list[ServingProfile]:
    """The runs as measured serving profiles, one per deployment, launch and request length (the runs of one
    deployment launched the same way — laid out alike, and no engine setting apart as ``settings_differ`` compares
    them, the comparison ``with_user_runs`` pools with — pooled; the newest launch first), of the load
    levels with TPOT and output tokens/s: what the planner's capacity search (``plan``) and ``search`` interpolate,
    as they do the shipped profiles. Each states its launch (``run_as_launched``), so it applies only to a deployment
    launched the same way (``profiles.find_profile``). Their ids (``user-run-<id>-<input>-<output>``) name the
    newest run. A run with speculative decoding makes none (a profile states no draft tokens or acceptance rate)."""
    groups: list[list[UserRun]] = []
    for r in sorted((r for r in runs if not r.speculative_tokens), key=lambda r: (r.measured_on, r.id), reverse=True):
        group = next((g for g in groups if (g[0].model, g[0].accelerator, g[0].gpus, g[0].engine, g[0].quantization)
                      == (r.model, r.accelerator, r.gpus, r.engine, r.quantization)
                      and not layout_differs(r, run_deployment(g[0]), g[0].tensor_parallel_size)
                      and not settings_differ(catalog, run_planned(catalog, g[0]), r)), None)
        if group is None:
            groups.append([r])
        else:
            group.append(r)
    pooled = [_pooled(group) for group in groups]
    profiles = []
    for run in pooled:  # named by the newest run of each deployment and launch
        source = {"kind": "measured", "source": f"user-run-{run.id}", "checked": run.measured_on}
        lengths = sorted({(p.input_tokens, p.output_tokens) for p in run.points if p.input_tokens and p.output_tokens})
        for inp, out in lengths:
            points = [p for p in _same_lengths(run, inp, out) if p.tpot_s and p.output_tokens_per_s_total]
            if not points:
                continue
            profiles.append(ServingProfile(
                id=f"user-run-{run.id}-{inp}-{out}", model=run.model, accelerator=run.accelerator, gpus=run.gpus,
                engine=run.engine, quantization=run.quantization, input_tokens=inp, output_tokens=out,
                caveats=(f"{_label(run)}: {run.engine} {run.engine_version}",), launch=run_as_launched(run),
                points=tuple(ProfilePoint(
                    concurrency=p.concurrency,
                    output_tokens_per_s_per_user={"value": 1 / p.tpot_s, **source},
                    output_tokens_per_s_per_gpu={"value": p.output_tokens_per_s_total / run.gpus, **source},
                    ttft_s={"value": p.ttft_s, **source} if p.ttft_s else None) for p in points)))
    return profiles
