"""The most slots a context-per-slot engine starts with is the largest count whose plan fits, whatever the
first guess it brackets the answer with: checked against every count up to the limit."""

import pytest

from inferplan.catalog.loader import load_catalog
from inferplan.errors import InferplanError
from inferplan.inputs.deployment import Deployment
from inferplan.memory.fit import memory_fits
from inferplan.memory.slots import most_slots

CATALOG = load_catalog()
LIMIT = 32

DEPLOYMENTS = [
    Deployment(model="qwen3-32b", gpu="rtx-4090", engine="llamacpp", quantization="q4_k_m", max_model_len=2500),
    Deployment(model="qwen3-32b", gpu="rtx-4090", engine="llamacpp", quantization="q4_k_m", max_model_len=9000),
    Deployment(model="llama-3.1-8b", gpu="rtx-4090", engine="llamacpp", quantization="q4_0", max_model_len=4096),
    Deployment(model="llama-3.1-8b", gpu="rtx-4090", engine="llamacpp", quantization="q4_0", max_model_len=131072),
    Deployment(model="qwen3-32b", gpu="rtx-3090", engine="llamacpp", quantization="q8_0", max_model_len=4096),
]


def _fits(d: Deployment, slots: int) -> bool:
    try:
        return memory_fits(d.model_copy(update={"max_num_seqs": slots}), CATALOG)
    except InferplanError:
        return False


@pytest.mark.parametrize("d", DEPLOYMENTS, ids=lambda d: f"{d.model}-{d.gpu}-{d.quantization}-{d.max_model_len}")
def test_most_slots_is_the_largest_count_that_fits(d):
    fitting = [n for n in range(1, LIMIT + 1) if _fits(d, n)]
    assert fitting == list(range(1, len(fitting) + 1))  # a count fits when a larger one does
    assert most_slots(d, CATALOG, LIMIT) == len(fitting)
    assert most_slots(d, CATALOG, 3) == min(len(fitting), 3)  # the limit caps it, below the first guess too


def test_the_deployments_cover_each_side():
    """None fits, a few fit, the limit is reached: the bracket's every branch is taken."""
    counts = {most_slots(d, CATALOG, LIMIT) for d in DEPLOYMENTS}
    assert 0 in counts and LIMIT in counts and counts - {0, LIMIT}
