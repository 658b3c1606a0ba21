"""OLLAMA_NUM_PARALLEL against the slots of the llama-server build an Ollama release starts: Ollama bounds it by
nothing of its own and passes it as -np, so a count past that build's LLAMA_MAX_SEQ is refused naming the field."""

import pytest

from inferplan.errors import InvalidScenarioError
from inferplan.inputs.deployment import Deployment
from inferplan.memory.fit import fit


def test_ollama_release_records_the_llama_cpp_build_it_starts(catalog):
    launch = catalog.ollama_runners.records["ollama"].launch
    assert (launch.release, launch.llamacpp_build) == ("0.32.15", "b10488")


def test_num_parallel_past_the_builds_slots_is_refused_naming_ollamas_variable(catalog):
    with pytest.raises(InvalidScenarioError) as err:
        fit(Deployment(model="qwen3:8b", gpu="rtx-4090", max_num_seqs=300), catalog)
    assert err.value.field == "max_num_seqs" and err.value.allowed == "1 to 256"
    assert "OLLAMA_NUM_PARALLEL" in str(err.value) and "llama-server b10488" in str(err.value)


def test_num_parallel_within_the_builds_slots_plans(catalog):
    assert fit(Deployment(model="qwen3:8b", gpu="rtx-4090", max_num_seqs=4, max_model_len=4096), catalog).fits
