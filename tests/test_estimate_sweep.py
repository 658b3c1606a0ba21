"""EstimateSweep reuses one deployment's serving context across workloads: every answer must be the one
``estimate`` gives for the same deployment and workload, and every refusal the same refusal."""

import pytest

from inferplan.catalog.loader import load_catalog
from inferplan.errors import InvalidScenarioError
from inferplan.inputs.deployment import Deployment
from inferplan.inputs.workload import Workload
from inferplan.performance.serving import EstimateSweep, estimate

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
