"""Measured serving profiles beat estimates: match a deployment to a measured sweep and
interpolate it (linear in log concurrency), saying so. Outside the measured concurrency range
the calibrated model's estimate stands, and says that instead. A profile that states how it was
launched (the user's runs, ``local_runs.as_profiles``) matches only a deployment launched the same way."""

from __future__ import annotations

from typing import TYPE_CHECKING

from inferplan.catalog.points_schema import ServingProfile
from inferplan.performance.launch_match import differ_words, launch_differs
from inferplan.performance.local_runs import interp_log

if TYPE_CHECKING:
    from inferplan.inputs.deployment import Deployment
    from inferplan.performance.context import ServingContext
    from inferplan.inputs.workload import Workload
    from inferplan.performance.estimate import ServingEstimate


def find_profile(ctx: "ServingContext",
                 stated: "Deployment | None" = None) -> tuple[ServingProfile | None, tuple[str, ...]]:
    """The first measured profile of ``ctx``'s deployment (model, accelerator, GPU count, engine, weight format) at
    its workload's lengths, launched as the deployment is planned (``launch_match.launch_differs``, its engine settings
    compared with ``stated``'s, the deployment as asked; a profile that states no launch, as shipped ones, matches
    any) and reaching a concurrency its KV cache holds (``beyond_cache``), and a note for each profile of the user's
    runs (one that states its launch) of the same deployment that is not used: one that ran with drafts, launched
    otherwise, measured at other request lengths, planned drafting, prefix-cache hits, or only above what the cache
    holds."""
    fit, w = ctx.mp.result, ctx.w
    tp = fit.parallel.tensor_parallel_size
    notes: list[str] = []
    for profile in ctx.catalog.serving_profiles:
        if (profile.model, profile.accelerator, profile.gpus, profile.engine, profile.quantization) != (
                fit.model, fit.accelerator, fit.parallel.gpus, fit.engine, fit.quantization):
            continue
        if profile.launch is not None and profile.speculative is not None:  # a stored run that drafted
            notes.append(f"measured profile {profile.id} is not used: it ran with drafts ({profile.speculative}), "
                         "which plan and search do not take as a profile (it states no acceptance rate to plan on)")
            continue
        other_workload = workload_differs(profile, w)
        if other_workload:
            if profile.launch is not None:  # a stored run of this deployment: say why it does not size it
                notes.append(f"measured profile {profile.id} is not used: {other_workload}")
            continue
        differs = (launch_differs(ctx.catalog, ctx.d, profile.launch, tp, stated=stated, parallel=fit.parallel)
                   if profile.launch else {})
        if differs:
            notes.append(f"measured profile {profile.id} is not used, being of another launch: "
                         f"{'; '.join(differ_words(differs))}")
        elif beyond_cache(ctx, profile):
            if profile.launch is not None:
                notes.append(f"measured profile {profile.id} is not used: {beyond_cache_words(ctx, profile)}")
        else:
            return profile, tuple(notes)
    return None, tuple(notes)


def beyond_cache(ctx: "ServingContext", profile: ServingProfile) -> bool:
    """Whether even ``profile``'s lowest measured concurrency is more than ``ctx``'s KV cache holds at its lengths: it
    then answers no concurrency the deployment reaches (``serving.with_profile`` scales the model below a profile's
    range only to a measured point the cache holds)."""
    return profile_range(profile)[0] > ctx.max_concurrency()


def beyond_cache_words(ctx: "ServingContext", profile: ServingProfile) -> str:
    lo, hi = profile_range(profile)
    levels = f"{lo}" if lo == hi else f"{lo}–{hi}"
    return (f"measured at {levels} requests at once, above the {ctx.max_concurrency():,} the KV cache holds at "
            f"{ctx.w.input_len:,}/{ctx.w.output_len:,} tokens a request")


def own_runs(ctx: "ServingContext", stated: "Deployment | None" = None) -> tuple[str, ...]:
    """What the user's stored runs of ``ctx``'s deployment say of its speed: the run it comes from, or why each
    run of that deployment is not used (``find_profile``); nothing where none is stored."""
    return own_run_words(*find_profile(ctx, stated))


def own_run_words(profile: ServingProfile | None, skipped: tuple[str, ...]) -> tuple[str, ...]:
    """``find_profile``'s answer in words for the user: the notes on runs not used, and the run used, if one is."""
    if profile is None or profile.launch is None:  # a shipped profile is no stored run
        return skipped
    lo, hi = profile_range(profile)
    levels = f"concurrency {lo}" if lo == hi else f"concurrency {lo}–{hi}"
    return (*skipped, f"speed from your stored run: measured profile {profile.id}, {levels} (beyond it the "
                      "calibrated model scaled to its nearest measured point)")


def workload_differs(profile: ServingProfile, w: "Workload") -> str:
    """Why ``profile`` does not answer workload ``w`` of its own deployment, in words ('' where it does): a profile
    holds at its own request lengths, with or without drafts as it ran, and with no prefix-cache hits (no
    measured sweep records its hits) and its prompts prefilled on the instance (not a decode pool's)."""
    why = []
    if (profile.input_tokens, profile.output_tokens) != (w.input_len, w.output_len):
        why.append(f"measured at {profile.input_tokens:,}/{profile.output_tokens:,} tokens a request, planned at "
                   f"{w.input_len:,}/{w.output_len:,} (a run is planned on only at its own lengths)")
    if (profile.speculative is None) != (w.speculative_tokens == 0):
        why.append(f"planned with {w.speculative_tokens} draft tokens a step, measured without"
                   if profile.speculative is None else f"measured with {profile.speculative} drafts, planned without")
    if w.prompt_from_prefill_pool:  # a decode pool's prompts are the prefill pool's work, not cache hits
        why.append("planned as a decode pool's instance, whose prompts the prefill pool prefills and hands over as KV "
                   "cache, and the run prefilled its own")
    elif w.prefix_cache_hit_rate:
        why.append(f"planned with {w.prefix_cache_hit_rate:.0%} of prompt tokens from the prefix cache, which no "
                   "run records (a prefix-cache hit rate of 0 plans on the run)")
    return "; ".join(why)


def anchor(profile: ServingProfile, est: "ServingEstimate", edge: "ServingEstimate") -> "ServingEstimate":
    """Outside the measured range: the model's estimate scaled by measured/model at the nearest
    measured point (``edge`` is the model's estimate there), so the curve stays continuous."""
    points = sorted(profile.points, key=lambda p: p.concurrency)
    near = points[0] if est.concurrency < points[0].concurrency else points[-1]
    user = near.output_tokens_per_s_per_user.value / edge.output_tokens_per_s_per_user
    gpu = near.output_tokens_per_s_per_gpu.value / edge.output_tokens_per_s_per_gpu
    per_user = est.output_tokens_per_s_per_user * user
    total = est.output_tokens_per_s_total * gpu
    ttft = est.ttft_s * (near.ttft_s.value / edge.ttft_s if near.ttft_s and edge.ttft_s else 1.0)
    return est.model_copy(update={
        "ttft_s": ttft,
        "prefill_s": ttft * est.prefill_s / est.ttft_s,  # the measured TTFT, shared out as the model shares its own
        "tpot_s": 1 / per_user,
        "output_tokens_per_s_per_user": per_user,
        "output_tokens_per_s_total": total,
        "output_tokens_per_s_per_gpu": total / est.gpus,
        "input_tokens_per_s_total": est.input_tokens_per_s_total * gpu,
        "assumptions": (*est.assumptions, (
            f"measured profile {profile.id} covers concurrency {points[0].concurrency}–{points[-1].concurrency}; "
            f"outside it the calibrated model is scaled by measured/model at concurrency {near.concurrency} "
            f"(×{user:.2f} per user, ×{gpu:.2f} per GPU)")),
    })


def profile_range(profile: ServingProfile) -> tuple[int, int]:
    cs = [p.concurrency for p in profile.points]
    return min(cs), max(cs)


def interpolate(profile: ServingProfile, est: "ServingEstimate") -> "ServingEstimate":
    points = sorted(profile.points, key=lambda p: p.concurrency)
    xs = [float(p.concurrency) for p in points]
    c = float(est.concurrency)
    if not xs[0] <= c <= xs[-1]:
        return est.model_copy(update={"assumptions": (*est.assumptions, (
            f"measured profile {profile.id} covers concurrency {xs[0]:g}–{xs[-1]:g}; at {c:g} the calibrated "
            "model is used, scaled to meet the profile's nearest measured point"))})
    per_user = interp_log(xs, [p.output_tokens_per_s_per_user.value for p in points], c)
    per_gpu = interp_log(xs, [p.output_tokens_per_s_per_gpu.value for p in points], c)
    ttfts = [p.ttft_s.value if p.ttft_s else None for p in points]
    ttft = interp_log(xs, ttfts, c) if all(t is not None for t in ttfts) else est.ttft_s
    total = per_gpu * est.gpus
    return est.model_copy(update={
        "tpot_s": 1 / per_user,
        "output_tokens_per_s_per_user": per_user,
        "output_tokens_per_s_per_gpu": per_gpu,
        "output_tokens_per_s_total": total,
        "input_tokens_per_s_total": total * profile.input_tokens / profile.output_tokens,
        "ttft_s": ttft,
        "prefill_s": ttft * est.prefill_s / est.ttft_s,  # the measured TTFT, shared out as the model shares its own
        "bound": "measured",
        "source": "measured",
        "assumptions": (*est.assumptions, f"interpolated from measured profile {profile.id} "
                        f"({profile.engine}, {profile.input_tokens}/{profile.output_tokens} tokens)"),
    })
