"""Pipeline stage boundaries: TensorRT-LLM's pipeline loop does its per-request host work between
micro-batches, so each of a micro-batch's pp − 1 boundary crossings costs a fitted time per request
(calibration.yaml pipeline-hop-s-per-request-trtllm; docs/speed.md §2)."""

import dataclasses
import statistics

import pytest

from inferplan.catalog.loader import load_catalog
from inferplan.catalog.registry import Registry
from inferplan.inputs.deployment import Deployment
from inferplan.inputs.workload import Workload
from inferplan.performance.context import ServingContext
from inferplan.performance.serving import estimate_at
from inferplan.validation.calibrate_pipeline import CONSTANT_ID, FIELD, fit_pipeline
from inferplan.validation.calibrate_speed import calibrates_pipeline, log_error, pipeline_engines, prepare

CATALOG = load_catalog()


def context(pp: int, engine: str = "trtllm", concurrency: int | str = "max") -> ServingContext:
    d = Deployment(model="llama-3.3-70b", gpu="rtx-pro-6000-blackwell", gpus=pp, pipeline_parallel_size=pp,
                   engine=engine, quantization="nvfp4", kv_cache_dtype="fp8", max_model_len=2000)
    return ServingContext(CATALOG, d, Workload(input_len=1000, output_len=1000, concurrency=concurrency))


def test_a_round_pays_every_boundary_once_per_request_of_its_micro_batch():
    ctx = context(4)
    hop = ctx.rates.pipeline_hop_s_per_request
    assert hop > 0 and ctx.rates.pipeline_hop_fitted
    step, with_hops = ctx.iteration(400, 0.0)
    ctx.rates = dataclasses.replace(ctx.rates, pipeline_hop_s_per_request=0.0)
    _, without = ctx.iteration(400, 0.0)  # the longer of 4 stage times and the last stage's 4 micro-batches
    # a micro-batch's trip: 4 stage times and 3 boundaries with 100 requests each
    assert with_hops == pytest.approx(max(4 * step.seconds + 3 * hop * 100, without))
    assert with_hops > without
    # fewer running sequences than stages: one micro-batch of one request makes the trip
    ctx.rates = dataclasses.replace(ctx.rates, pipeline_hop_s_per_request=hop)
    lone_step, lone = ctx.iteration(1, 0.0)
    assert lone == pytest.approx(4 * lone_step.seconds + 3 * hop)


def test_one_stage_has_no_boundary_and_the_estimate_says_what_the_boundaries_cost():
    single = context(1)
    assert single.boundary_host_s(500) == 0.0
    est = estimate_at(context(8), context(8).max_concurrency())
    note = next(a for a in est.assumptions if a.startswith("pipeline stage boundaries"))
    assert "µs per request" in note and "7 boundaries" in note
    assert not any(a.startswith("pipeline stage boundaries") for a in estimate_at(single, 8).assumptions)


def test_an_engine_without_a_fitted_boundary_cost_says_so():
    ctx = context(2, engine="vllm")
    assert ctx.rates.pipeline_hop_s_per_request == 0.0 and not ctx.rates.pipeline_hop_fitted
    est = estimate_at(ctx, 4)
    assert any("no host cost per request for vllm" in a for a in est.assumptions)


def test_more_stages_never_shorten_a_round_at_the_same_micro_batch():
    rounds = []
    for pp in (2, 4, 8):
        ctx = context(pp)
        rounds.append(ctx.boundary_host_s(100))
    assert rounds[0] < rounds[1] < rounds[2] and rounds[0] > 0


@pytest.mark.parametrize("engine", ["trtllm", "vllm"])
def test_a_second_request_never_shortens_ttft_through_pipeline_stages(engine):
    """The new request's prompt chunk rides one micro-batch: its first token waits for that
    micro-batch's trip through all eight stages (spread over eight micro-batches it would come out
    4x short beside one other request)."""
    ctx = context(8, engine=engine)
    ttfts = [estimate_at(ctx, c).ttft_s for c in (1, 2, 4, 16, 64)]
    assert all(a <= b * (1 + 1e-9) for a, b in zip(ttfts, ttfts[1:])), ttfts


def test_a_lone_prompt_crosses_the_boundaries_with_its_one_request():
    ctx = context(4, concurrency=1)
    hop = ctx.rates.pipeline_hop_s_per_request
    with_hops = estimate_at(ctx, 1).ttft_s
    ctx.rates = dataclasses.replace(ctx.rates, pipeline_hop_s_per_request=0.0)
    assert with_hops - estimate_at(ctx, 1).ttft_s == pytest.approx(3 * hop)  # one 1,000-token chunk, 3 boundaries


def test_pipeline_points_calibrate_the_boundary_cost_and_not_the_family_constants(catalog):
    family = {p.id for p in prepare(catalog, "fit")[0]}
    pipeline = {p.id for p in prepare(catalog, "fit", pipeline=True)[0]}
    routed = {p.id for p in catalog.speed_points if p.split == "fit" and calibrates_pipeline(p, catalog)}
    assert routed and pipeline == routed and not family & routed
    # llama.cpp's layer split at batch 1 stays with its family (no fitted boundary cost)
    assert any(p.pipeline_parallel_size > 1 and p.engine == "llamacpp" and p.id in family for p in catalog.speed_points)


def test_the_engines_whose_pipeline_points_fit_a_boundary_cost_are_those_the_calibration_gives_one():
    assert pipeline_engines(CATALOG) == ("trtllm",)
    records = dict(CATALOG.calibration.records)
    records[CONSTANT_ID.format("vllm")] = records[CONSTANT_ID.format("trtllm")]
    with_vllm = dataclasses.replace(CATALOG, calibration=Registry("calibration", records))
    assert set(pipeline_engines(with_vllm)) == {"trtllm", "vllm"}
    trtllm = next(p for p in CATALOG.speed_points if p.engine == "trtllm" and p.pipeline_parallel_size > 1)
    vllm = trtllm.model_copy(update={"engine": "vllm"})
    assert calibrates_pipeline(vllm, with_vllm) and not calibrates_pipeline(vllm, CATALOG)


def test_shipped_boundary_cost_equals_the_fit(catalog):
    fit = fit_pipeline(catalog, "trtllm")
    assert len(fit.points) >= 10
    assert catalog.constant(CONSTANT_ID.format("trtllm")) == pytest.approx(fit.value_s, rel=5e-3)
    assert fit.mean_abs_log_error < statistics.fmean(abs(e) for e in fit.log_errors_without)


def test_the_fit_on_two_and_four_stages_carries_to_eight_held_out(catalog):
    """Fitted on PP2 and PP4 rows only; every PP8 row of the same tables is held out. The cost must
    lower their error against planning them with no boundary cost (it was 51 % median at 1000/1000
    and the like: the planner ran eight stages as if crossing them were free)."""
    held = [p for p in prepare(catalog, "holdout", pipeline=True)[0] if p.ctx.pp == 8]
    assert len(held) >= 10
    value = catalog.constant(CONSTANT_ID.format("trtllm"))
    with_cost = statistics.median(abs(log_error(p, {FIELD: value})) for p in held)
    without = statistics.median(abs(log_error(p, {FIELD: 0.0})) for p in held)
    # 0.114 with the cost (33.9 us), 0.191 without
    assert with_cost < 0.12 and with_cost < 0.65 * without


@pytest.mark.slow
def test_cross_validation_fits_the_boundary_cost_without_the_fold_it_scores(catalog):
    """Every pipeline point comes from one source, so its fold leaves no pipeline point to fit the cost
    on: each is scored with no boundary cost and that fold's family constants, never with the shipped
    cost, which was fitted on them."""
    from inferplan.validation.calibrate_speed import fit_points
    from inferplan.validation.crossval import held_out_errors, source_folds

    points = [p for p in prepare(catalog, "fit")[0] if p.family == "mlx"][:12]
    pipeline = prepare(catalog, "fit", pipeline=True)[0]
    folds = set(source_folds(catalog, pipeline).values())
    assert len(folds) == 1
    errors = held_out_errors(catalog, points, prior_weight=0.05, pipeline=pipeline)
    assert {p.id for p in pipeline} <= set(errors)
    fold = source_folds(catalog, points)
    fits = fit_points([p for p in points if fold[p.id] not in folds])  # what that fold's fit saw
    own = next(f.params for f in fits if f.family == "trtllm")
    value = catalog.constant(CONSTANT_ID.format("trtllm"))
    for p in pipeline:
        assert errors[p.id] == pytest.approx(log_error(p, {**own, FIELD: 0.0}), abs=1e-9)
        assert errors[p.id] > log_error(p, {**own, FIELD: value})
