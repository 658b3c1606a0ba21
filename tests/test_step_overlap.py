"""How a step's memory and compute time combine (docs/speed.md §1, Step time): their power mean of
a fitted order, which is the plain roofline (the larger) far from the ridge and more than either
near it."""

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

import inferplan.validation.calibrate_speed as cs
from inferplan.catalog.loader import load_catalog
from inferplan.errors import InferplanError
from inferplan.inputs.deployment import Deployment
from inferplan.inputs.workload import Workload
from inferplan.performance.context import ServingContext
from inferplan.performance.phases import StepTime, overlapped
from inferplan.performance.serving import estimate_at
from inferplan.validation.overlap_grid import scan, with_exponent

from catalog_edits import with_constants

CATALOG = load_catalog()
times = st.floats(min_value=0.0, max_value=10.0, allow_nan=False)
exponents = st.floats(min_value=1.0, max_value=64.0)


def test_an_infinite_exponent_is_the_plain_roofline():
    assert overlapped(3e-3, 1e-3, math.inf) == 3e-3
    assert overlapped(1e-3, 3e-3, math.inf) == 3e-3


def test_order_two_at_the_ridge_and_far_from_it():
    assert overlapped(1.0, 1.0, 2.0) == pytest.approx(math.sqrt(2))  # alike: 41 % more than either
    assert overlapped(1.0, 0.1, 2.0) == pytest.approx(math.sqrt(1.01))  # a tenth: half a per cent more
    assert overlapped(0.0, 2.0, 2.0) == 2.0 and overlapped(2.0, 0.0, 2.0) == 2.0


@given(times, times, exponents)
def test_the_mean_lies_between_the_larger_and_the_sum(memory_s, compute_s, p):
    t = overlapped(memory_s, compute_s, p)
    assert max(memory_s, compute_s) <= t * (1 + 1e-12)
    assert t <= (memory_s + compute_s) * (1 + 1e-12)
    assert t == pytest.approx(overlapped(compute_s, memory_s, p))


@given(times, times, st.floats(min_value=0.0, max_value=1.0), exponents)
def test_more_of_either_never_takes_less_time(memory_s, compute_s, extra, p):
    t = overlapped(memory_s, compute_s, p)
    assert overlapped(memory_s + extra, compute_s, p) >= t * (1 - 1e-12)
    assert overlapped(memory_s, compute_s + extra, p) >= t * (1 - 1e-12)


def test_the_step_uses_the_shipped_exponent():
    p = CATALOG.constant("roofline-overlap-exponent")
    assert 1.0 <= p < math.inf
    ctx = ServingContext(CATALOG, Deployment(model="llama-3.1-8b", gpu="h100-sxm", quantization="bf16"),
                   Workload(input_len=1024, output_len=256))
    assert ctx.rates.overlap_exponent == p
    step = StepTime(memory_s=2e-3, compute_s=1e-3, comm_s=1e-4, overhead_s=5e-4, overlap_exponent=p)
    assert step.seconds == pytest.approx(overlapped(2e-3, 1e-3, p) + 6e-4)
    assert step.bound == "memory"
    assert any(f"power mean of order {p:g}" in a for a in estimate_at(ctx, 1).assumptions)  # the estimate says so


def test_decode_steps_and_prompts_combine_by_the_shipped_exponent():
    from inferplan.performance.phases import decode_step, prefill

    ctx = ServingContext(CATALOG, Deployment(model="llama-3.1-70b", gpu="h100-sxm", quantization="fp8", gpus=2,
                                       tensor_parallel_size=2), Workload(input_len=1024, output_len=256))
    p = CATALOG.constant("roofline-overlap-exponent")
    step = decode_step(ctx.work, ctx.mp.layout, ctx.rates, batch=256, context=1500)
    chunk = prefill(ctx.work, ctx.mp.layout, ctx.rates, tokens=512)
    for s in (step, chunk):
        assert s.overlap_exponent == p
        assert s.seconds == pytest.approx(overlapped(s.memory_s, s.compute_s, p) + s.comm_s + s.overhead_s)
    # near the ridge the step costs more than the larger part, and its bound names the larger one
    assert step.seconds > max(step.memory_s, step.compute_s) + step.comm_s + step.overhead_s
    assert step.bound == ("memory" if step.memory_s >= step.compute_s else "compute")


def test_an_exponent_below_one_is_refused_with_the_constant_named():
    from inferplan.errors import CatalogError
    from inferplan.performance.rates import overlap_exponent

    with pytest.raises(CatalogError) as refused:
        overlap_exponent(with_constants(CATALOG, {"roofline-overlap-exponent": 0.5}))
    assert "roofline-overlap-exponent" in refused.value.describe() and "allowed" in refused.value.describe()


# ---- the grid the order is chosen on (validation/overlap_grid.py) ----

def _few_fit_points():
    return [p for p in cs.prepare(CATALOG, "fit")[0] if p.family == "sglang"][:6]


def test_the_grid_moves_copies_and_leaves_the_points_it_was_given():
    points = _few_fit_points()
    shipped = CATALOG.constant("roofline-overlap-exponent")
    moved = with_exponent(points, 3.0)
    assert [p.ctx.rates.overlap_exponent for p in moved] == [3.0] * len(points)
    assert [p.ctx.rates.overlap_exponent for p in points] == [shipped] * len(points)


def test_the_grid_refuses_an_order_below_one():
    with pytest.raises(InferplanError) as err:
        with_exponent(_few_fit_points(), 0.5)
    assert err.value.field == "p"


def test_the_grid_scores_each_order_after_its_own_refit():
    points = _few_fit_points()
    scores = scan((1.0, math.inf), points=points)
    assert list(scores) == [1.0, math.inf]
    assert all(0 <= v < 1 for v in scores.values())
    assert scores[1.0] != scores[math.inf]  # the order reaches the predictions
    # each score comes after a refit: no worse than the fixed start's constants at that order
    for p, score in scores.items():
        assert score <= cs.objective(with_exponent(points, p), cs.START) + 1e-12
