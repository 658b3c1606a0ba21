"""A stated data-parallel size is the GPUs over TP x PP: one the GPUs contradict is refused naming it, since a run's
record and its export take the copies from the GPUs."""

from __future__ import annotations

from pathlib import Path

import pytest

from inferplan.errors import InvalidScenarioError
from inferplan.measurements.records import RunProvenance, read_runs

DATA = Path(__file__).parent / "data" / "measurements"


@pytest.mark.parametrize(("gpus", "allowed"), [(8, "4 (the 8 GPUs over TP x PP 2)"), (6, "3 (the 6 GPUs")])
def test_a_data_parallel_size_the_gpus_contradict_is_refused(catalog, gpus, allowed):
    f = DATA / "vllm_bench_serve_c8.json"
    given = RunProvenance(model="llama-3.1-8b", gpu="h100", gpus=gpus, tensor_parallel_size=2, data_parallel_size=2)
    with pytest.raises(InvalidScenarioError) as e:
        read_runs(catalog, [(f.name, f.read_bytes())], given)
    assert e.value.field == "data_parallel_size" and allowed in e.value.allowed, e.value.allowed


def test_a_data_parallel_size_the_gpus_agree_with_is_kept(catalog):
    f = DATA / "vllm_bench_serve_c8.json"
    given = RunProvenance(model="llama-3.1-8b", gpu="h100", gpus=4, tensor_parallel_size=2, data_parallel_size=2)
    (run,) = read_runs(catalog, [(f.name, f.read_bytes())], given)
    assert (run.gpus, run.data_parallel_size) == (4, 2)
