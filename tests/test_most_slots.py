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


@pytest.mark.parametrize(("release", "cap"), [("b5400", 1024), ("b6000", 64), ("b6507", 256), (None, 256)])
def test_most_slots_stops_at_the_slots_the_llamacpp_release_opens(release, cap):
    # llama_context refuses n_seq_max above LLAMA_MAX_SEQ (64 from b5486, 256 from b6507; no check before):
    # a short context on 512 GB would fit thousands of slots, the release opens at most that many
    d = Deployment(model="llama-3.1-8b", gpu="M3 Ultra 512GB", engine="llamacpp", quantization="q4_k_m",
                   max_model_len=1024, engine_version=release)
    assert most_slots(d, CATALOG, 1024) == cap


def test_fit_names_the_slots_that_fit_as_the_flag_takes_them():
    # no thousands separator in the flag's value: llama-server reads --parallel 1,024 as no number
    from typer.testing import CliRunner

    from inferplan.shells.cli import app
    out = CliRunner().invoke(app, ["fit", "--model", "llama-3.1-8b", "--gpu", "M3 Ultra 512GB", "-q", "q4_k_m",
                                   "--engine", "llamacpp", "--engine-version", "b5400", "--max-model-len", "1024"],
                             env={"COLUMNS": "200"}).stdout
    assert "1,024 fit: --max-num-seqs 1024" in " ".join(out.split()), out


@pytest.mark.parametrize(("release", "cap"), [("b6000", 64), ("b6507", 256), (None, 256)])
def test_stated_slots_past_the_llamacpp_release_limit_are_refused(release, cap):
    # llama_context throws "n_seq_max must be <= LLAMA_MAX_SEQ": llama-server started with more does not start
    from inferplan.errors import InvalidScenarioError
    d = Deployment(model="llama-3.1-8b", gpu="M3 Ultra 512GB", engine="llamacpp", quantization="q4_k_m",
                   max_model_len=1024, engine_version=release)
    assert memory_fits(d.model_copy(update={"max_num_seqs": cap}), CATALOG)
    with pytest.raises(InvalidScenarioError) as e:
        memory_fits(d.model_copy(update={"max_num_seqs": cap + 1}), CATALOG)
    assert e.value.field == "max_num_seqs" and e.value.allowed == f"1 to {cap}"
    assert memory_fits(d.model_copy(update={"max_num_seqs": 2000, "engine_version": "b5400"}), CATALOG)
