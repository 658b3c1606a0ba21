"""EstimateSweep reuses one deployment's serving context across workloads: every answer must be the one
``estimate`` gives for the same deployment and workload, and every refusal the same refusal."""

import pytest

from inferplan.catalog.loader import load_catalog
from inferplan.errors import InvalidScenarioError
from inferplan.inputs.deployment import Deployment
from inferplan.inputs.workload import Workload
from inferplan.performance.context import ServingContext
from inferplan.performance.serving import EstimateSweep, Figures, estimate, estimate_at

CATALOG = load_catalog()

DEPLOYMENTS = [
    Deployment(model="qwen3-8b", gpu="h100", max_model_len=4096),
    Deployment(model="llama-3.3-70b", gpu="h100", gpus=4, quantization="fp8"),  # sized for each request
    Deployment(model="llama-3.1-8b", gpu="rtx-4090", engine="llamacpp", quantization="q4_0", max_model_len=4096),
    Deployment(model="llama-3.1-8b", gpu="h100", gpus=2, pipeline_parallel_size=2, engine="trtllm", max_model_len=4096),
]

# a service curve's workloads: one request shape at several concurrencies, with every prompt token cached,
# lone prompts of other lengths, then another request length and a drafting workload on the same sweep
BASE = Workload(input_len=1000, output_len=200)
WORKLOADS = [
    *(BASE.model_copy(update={"concurrency": c}) for c in ("max", 1, 7, 64)),
    *(BASE.model_copy(update={"concurrency": c, "prefix_cache_hit_rate": 1.0}) for c in (1, 7)),
    *(BASE.model_copy(update={"input_len": n, "output_len": 1, "concurrency": 1}) for n in (1, 37, 2048)),
    Workload(input_len=3000, output_len=500, concurrency=3),
    BASE.model_copy(update={"speculative_tokens": 2, "acceptance_rate": 0.7, "concurrency": 4}),
]


def _answer(call):
    try:
        return call()
    except InvalidScenarioError as exc:
        return type(exc), str(exc), exc.field


@pytest.mark.parametrize("d", DEPLOYMENTS, ids=lambda d: f"{d.model}-{d.gpu}-{d.engine}")
def test_sweep_answers_as_estimate(d):
    sweep = EstimateSweep(CATALOG)
    for w in WORKLOADS:
        assert _answer(lambda: sweep.at(d, w)) == _answer(lambda: estimate(d, w, CATALOG)), w


@pytest.mark.parametrize("d", DEPLOYMENTS, ids=lambda d: f"{d.model}-{d.gpu}-{d.engine}")
def test_sweep_figures_are_estimates_numbers(d):
    """The figures alone are the estimate's numbers, each float the same, asked twice and in any order ('max'
    first, then the number it comes to), and every refusal the estimate's."""
    sweep = EstimateSweep(CATALOG)
    for w in [*WORKLOADS, *reversed(WORKLOADS)]:
        expected = _answer(lambda: Figures.of(estimate(d, w, CATALOG)))
        assert _answer(lambda: sweep.figures(d, w)) == expected, w
        if w.concurrency == 1:  # a lone request: its prompt alone timed
            assert _answer(lambda: sweep.lone_prefill_s(d, w)) == (expected if isinstance(expected, tuple) else
                                                                  expected.prefill_s), w


def test_sweep_figures_from_a_measured_profile():
    """Where a measured profile of the deployment answers, the figures are the profile's, not the model's."""
    d = Deployment(model="deepseek-r1", gpu="b200", gpus=8, engine="sglang", quantization="fp8-block")
    w = Workload(input_len=1024, output_len=1024, concurrency=16)
    est = estimate(d, w, CATALOG)
    assert est.source == "measured"
    assert EstimateSweep(CATALOG).figures(d, w) == Figures.of(est)
    lone = w.model_copy(update={"concurrency": 1})
    assert EstimateSweep(CATALOG).lone_prefill_s(d, lone) == estimate(d, lone, CATALOG).prefill_s


def test_remembered_steps_are_the_steps():
    """A context that keeps its iterations answers each as one that times it afresh, across workloads made of it."""
    d = DEPLOYMENTS[3]  # pipeline parallel: the round is more than one stage's step
    fresh = ServingContext(CATALOG, d, BASE)
    kept = ServingContext(CATALOG, d, BASE).remember_steps()
    for w in (BASE, BASE.model_copy(update={"prefix_cache_hit_rate": 1.0}), BASE.model_copy(update={"output_len": 100})):
        for c in (1, 3, 8, 3):
            assert estimate_at(kept.with_workload(w), c) == estimate_at(fresh.with_workload(w), c), (w, c)
    assert kept._steps and fresh._steps is None


def test_sweep_refuses_as_estimate():
    """A request longer than the context the deployment states is refused in the same words after the
    sweep has built the deployment's context for a shorter one."""
    d = DEPLOYMENTS[0]
    sweep = EstimateSweep(CATALOG)
    sweep.at(d, BASE)
    long = Workload(input_len=4000, output_len=500)
    refusal = _answer(lambda: estimate(d, long, CATALOG))
    assert isinstance(refusal, tuple)
    assert _answer(lambda: sweep.at(d, long)) == refusal


def test_a_decode_pools_shape_is_not_answered_from_the_same_numbers_stated(monkeypatch):
    """A decode pool's shape and the same fields stated as a workload are two workloads: each figured on its own."""
    import inferplan.performance.serving as serving
    from inferplan.economics.capacity import decode_pool_shape
    figured = []
    real = serving.figures_at
    monkeypatch.setattr(serving, "figures_at", lambda ctx, c: figured.append(type(ctx.w)) or real(ctx, c))
    sweep, stated = EstimateSweep(CATALOG, use_profiles=False), BASE.model_copy(update={"prefix_cache_hit_rate": 1.0})
    for w in (stated, decode_pool_shape(stated), stated):
        sweep.figures(DEPLOYMENTS[0], w)
    assert [t.__name__ for t in figured] == ["Workload", "DecodePoolWorkload"]
