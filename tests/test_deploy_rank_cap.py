"""The running-sequence cap under data parallelism: the plan's cap is each data-parallel rank's, as perf
and simulate run it; an engine that applies its flag to each rank (vLLM's engine cores, TensorRT-LLM's
attention-DP ranks, SGLang's whole copies) is given it as it is; SGLang under DP attention takes the total,
the cap times the ranks (``FlagRule.data_parallel`` in engine_flags.yaml, with its source)."""

from __future__ import annotations

import pytest
import yaml

from inferplan.catalog.flags_schema import EngineFlags
from inferplan.deploy import launch_command
from inferplan.deploy.command import engine_flags
from inferplan.inputs.deployment import Deployment

MOE = dict(model="qwen3-235b-a22b", gpu="h200-sxm", quantization="fp8-block")


def _value(argv: tuple[str, ...], flag: str) -> str | None:
    return argv[argv.index(flag) + 1] if flag in argv else None


@pytest.mark.parametrize("engine, extra, dp, flag, expected", [
    ("vllm", {"enable_expert_parallel": True}, 8, "--max-num-seqs", "32"),  # per engine core
    ("vllm", {}, 2, "--max-num-seqs", "32"),
    ("trtllm", {"enable_expert_parallel": True}, 8, "--max_batch_size", "32"),  # per attention-DP rank
    ("sglang", {"enable_expert_parallel": True}, 8, "--max-running-requests", "256"),  # global under DP attention
    ("sglang", {}, 2, "--max-running-requests", "32"),  # --dp-size alone: whole copies, each its own cap
])
def test_the_running_cap_flag_is_per_rank_where_the_engine_applies_it_per_rank(catalog, engine, extra, dp, flag,
                                                                                  expected):
    d = Deployment(**MOE, engine=engine, gpus=dp, data_parallel_size=dp, max_num_seqs=32, **extra)
    assert _value(launch_command(d, catalog).argv, flag) == expected


@pytest.mark.parametrize("engine", ["vllm", "sglang", "trtllm"])
def test_without_data_parallelism_the_cap_is_given_as_planned(catalog, engine):
    d = Deployment(**MOE, engine=engine, gpus=4, tensor_parallel_size=4, max_num_seqs=250)
    flag = engine_flags(catalog, engine).settings["max_num_seqs"].flags[0]
    assert _value(launch_command(d, catalog).argv, flag) == "250"


def test_every_engine_taking_data_parallelism_states_the_scope_of_its_cap_with_a_source(catalog):
    scoped = [f for f in catalog.engine_flags if f.takes_data_parallel() and "max_num_seqs" in f.settings]
    assert {f.engine for f in scoped} >= {"vllm", "sglang", "trtllm"}
    for flags in scoped:
        scope = flags.settings["max_num_seqs"].data_parallel
        assert scope is not None and scope.source in catalog.sources


def test_a_record_without_the_scope_is_refused(catalog):
    raw = yaml.safe_load(engine_flags(catalog, "vllm").model_dump_json())
    raw["settings"]["max_num_seqs"]["data_parallel"] = None
    with pytest.raises(ValueError, match="data_parallel"):
        EngineFlags.model_validate(raw)


def test_perf_simulate_and_deploy_read_the_cap_alike(catalog):
    """The same flags: perf runs 100 per rank, and the launch opens 100 on each of vLLM's 2 engine cores."""
    from inferplan.inputs.workload import Workload
    from inferplan.performance.serving import estimate

    d = Deployment(model="qwen3-30b-a3b", gpu="h100", gpus=2, data_parallel_size=2, max_num_seqs=100, max_model_len=8192)
    e = estimate(d, Workload(input_len=1000, output_len=200, concurrency="max"), catalog, use_profiles=False)
    assert e.concurrency == 200 and e.running_per_instance == 100
    assert _value(launch_command(d, catalog).argv, "--max-num-seqs") == "100"
