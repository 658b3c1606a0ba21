"""The user's own measured runs, planned on: where a run of the same deployment (model, accelerator,
GPUs, tensor parallel size, pipeline stages, expert parallelism as the engine runs it, engine, weight format, CUDA
graphs, what it was launched to keep in host RAM, and the engine settings it ran with; ``launch_match``) was
measured without speculative decoding, its figures replace the model's.
A run of the same deployment launched with other engine settings is used only nearly matching: the
model at the run's own launch is scaled to it, and the estimate says which settings differ.

The runs come in as data (the shells read them from the store and pass them here). At the asked
input/output lengths a run is interpolated across concurrency (linear in log concurrency, as the
shipped profiles are, ``profiles.py``); outside its concurrency range, or at other lengths, the
calibrated model's estimate is scaled by measured/model at the nearest measured point, and the
estimate says what differs. As measured profiles (``as_profiles``, which ``plan`` and ``search`` interpolate) the
runs state their launch, and apply only to a deployment launched the same way (``launch_match.launch_differs``).
The run records are ``run_record.py``'s.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Callable

from inferplan.catalog.points_schema import ProfileLaunch, ProfilePoint, ServingProfile
from inferplan.inputs.deployment import Deployment
from inferplan.performance.launch_match import differ_words, launched_settings, layout_differs, run_release, settings_differ
from inferplan.performance.run_record import LAUNCH_OFFLOAD, RUN_DRAFTS, MeasuredPoint, UserRun, run_deployment

if TYPE_CHECKING:  # pragma: no cover
    from inferplan.catalog.loader import Catalog
    from inferplan.memory.layout import ParallelPlan
    from inferplan.performance.estimate import ServingEstimate

SOURCE = "measured-local"


def matching_runs(catalog: "Catalog", runs: tuple[UserRun, ...], est: "ServingEstimate", d: Deployment, tp: int,
                  parallel: "ParallelPlan | None" = None) -> list[UserRun]:
    """The runs of ``est``'s deployment ``d``: its model, GPUs, engine and weight format, laid out and offloaded as
    ``d`` at tensor parallel size ``tp`` and layout ``parallel`` (``layout_differs``), without speculative decoding (an estimate with
    drafts plans on no run)."""
    return [r for r in runs if (r.model, r.accelerator, r.gpus, r.engine, r.quantization)
            == (est.model, est.accelerator, est.gpus, est.engine, est.quantization) and not layout_differs(catalog, r, d, tp, parallel)
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
    """The matching runs as one: every load level measured (concurrency, lengths and request rate, as the import
    tells levels apart), the newest run's where two measured the same one; named by the newest run (its id and
    date)."""
    newest_first = sorted(found, key=lambda r: (r.measured_on, r.id), reverse=True)
    points: dict[tuple[int, int, int, float | None], MeasuredPoint] = {}
    for run in newest_first:
        for p in run.points:
            points.setdefault((p.concurrency, p.input_tokens, p.output_tokens, p.request_rate_per_s), p)
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


def with_user_runs(catalog: "Catalog", est: "ServingEstimate", runs: tuple[UserRun, ...], *, d: Deployment, tp: int,
                   input_len: int, output_len: int, model_at: ModelAt,
                   differ: Callable[[UserRun], dict[str, tuple]] = lambda run: {},
                   parallel: "ParallelPlan | None" = None) -> "ServingEstimate":
    """``est`` (of deployment ``d``, at tensor parallel size ``tp``) from the newest matching run (``matching_runs``)
    launched with the same engine settings (``differ`` gives the ones a run ran with that ``est``'s deployment is not
    planned with, ``settings_differ``): interpolated at the asked lengths
    inside its concurrency range, else the model scaled by measured/model at the nearest measured point
    (``model_at`` gives the model's estimate at a measured point's workload, on the run's own launch). Where
    every matching run ran with other settings, the newest of them (pooled with those ``differ`` finds launched as it
    was) is used nearly matching, scaled at its nearest point, and the estimate names the settings that differ."""
    found = matching_runs(catalog, runs, est, d, tp, parallel)
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
    return ProfileLaunch(tensor_parallel_size=run.tensor_parallel_size, pipeline_parallel_size=run.pipeline_parallel_size,
                         enable_expert_parallel=run.enable_expert_parallel, enforce_eager=run.enforce_eager,
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
    newest run. A run with speculative decoding makes one that states its drafts (``speculative``), pooled only with
    runs of the same drafts, which ``find_profile`` names as not used: a profile states no acceptance rate to plan
    drafts on."""
    groups: list[list[UserRun]] = []
    for r in sorted(runs, key=lambda r: (r.measured_on, r.id), reverse=True):
        group = next((g for g in groups if (g[0].model, g[0].accelerator, g[0].gpus, g[0].engine, g[0].quantization)
                      == (r.model, r.accelerator, r.gpus, r.engine, r.quantization) and _drafts(g[0]) == _drafts(r)
                      and not layout_differs(catalog, r, run_deployment(g[0]), g[0].tensor_parallel_size)
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
                speculative=_drafts_words(run),
                caveats=(f"{_label(run)}: {run.engine} {run.engine_version}",), launch=run_as_launched(run),
                points=tuple(ProfilePoint(
                    concurrency=p.concurrency,
                    output_tokens_per_s_per_user={"value": 1 / p.tpot_s, **source},
                    output_tokens_per_s_per_gpu={"value": p.output_tokens_per_s_total / run.gpus, **source},
                    ttft_s={"value": p.ttft_s, **source} if p.ttft_s else None) for p in points)))
    return profiles


def _drafts(run: UserRun) -> tuple:
    return tuple(getattr(run, f) for f in RUN_DRAFTS) if run.speculative_tokens else ()


def _drafts_words(run: UserRun) -> str | None:
    """The drafts ``run`` ran with, as its profile states them (None: none)."""
    if not run.speculative_tokens:
        return None
    how = f", {run.speculative_method}" if run.speculative_method else ""
    return f"{run.speculative_tokens} draft tokens a step{how}"
