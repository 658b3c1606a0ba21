"""SGLang divides its chunk (chunked_prefill_size, default or stated) for each DP attention rank
(engines.yaml attention_dp_chunk, eng-sglang-wheels-dp-attention-chunk): // 2 in 0.3.6-0.4.4, // the DP size from
0.4.5 (0.5.6 server_args.py line 1499, 0.5.23 parallel_hook.py line 331). The fraction it picks is from the chunk
before the division; each rank's step, which the memory peak and the speed model read, is after it."""

import pytest

from inferplan.inputs.deployment import Deployment
from inferplan.inputs.workload import Workload
from inferplan.memory.fit import plan_memory
from inferplan.search.service import service_curve


def _dp(release: str | None, ranks: int, **stated) -> Deployment:
    return Deployment(model="qwen3-30b-a3b", gpu="h100-sxm", gpus=8, engine="sglang", engine_version=release,
                      data_parallel_size=ranks, enable_expert_parallel=True, tensor_parallel_size=1, **stated)


@pytest.mark.parametrize(("release", "chunk"), [("0.4.1", 4096), ("0.4.4", 4096), ("0.4.5", 1024), ("0.5.6", 1024),
                                                 (None, 1024)])
def test_each_dp_attention_rank_takes_the_releases_share_of_the_chunk(catalog, release, chunk):
    assert plan_memory(_dp(release, 8), catalog).settings.max_num_batched_tokens == chunk


def test_a_stated_chunk_is_divided_too(catalog):
    assert plan_memory(_dp("0.5.6", 8, max_num_batched_tokens=16384), catalog).settings.max_num_batched_tokens == 2048
    whole = Deployment(model="qwen3-30b-a3b", gpu="h100-sxm", engine="sglang", engine_version="0.5.6")
    assert plan_memory(whole, catalog).settings.max_num_batched_tokens == 8192  # one rank: no division


def test_the_speed_models_budget_is_the_ranks_shares_summed(catalog):
    curve = service_curve(_dp("0.5.6", 8), Workload(input_len=1000, output_len=100), catalog, points=2)
    assert curve.data_parallel == 8 and curve.token_budget == 8 * 1024
