"""vLLM with data parallelism and no expert parallelism (``-dp N`` without ``--enable-expert-parallel``)
shards the routed experts over one tensor-parallel group of TP x DP GPUs (engines.yaml
``moe_tp_spans_data_parallel``, eng-moe-tp-dp-vllm: FusedMoEParallelConfig.make flattens TP across
DP), so each GPU holds a quarter of them at TP 2 DP 2, not the half a TP-2 copy would hold. Copies the
planner lays out itself are launched apart, and SGLang's data-parallel copies keep their own TP split."""

import pytest

from inferplan.inputs.deployment import Deployment
from inferplan.memory.fit import plan_memory


def _experts_per_gpu(model: str, engine: str, dp: int) -> tuple[float, float]:
    plan = plan_memory(Deployment(model=model, gpu="h100-sxm", gpus=2 * dp, engine=engine, tensor_parallel_size=2,
                                  data_parallel_size=dp))
    return plan.stage_weights[0].expert_bytes_per_gpu, plan.weights.expert_bytes


@pytest.mark.parametrize("model", ["qwen3-30b-a3b", "deepseek-v4-flash"])
def test_vllm_data_parallel_shards_experts_over_tp_times_dp(model):
    per_gpu, whole = _experts_per_gpu(model, "vllm", dp=2)
    assert per_gpu == pytest.approx(whole / 4)


def test_vllm_without_data_parallel_splits_experts_over_tp():
    per_gpu, whole = _experts_per_gpu("qwen3-30b-a3b", "vllm", dp=1)
    assert per_gpu == pytest.approx(whole / 2)


def test_sglang_data_parallel_copies_keep_a_tp_split_each():
    per_gpu, whole = _experts_per_gpu("qwen3-30b-a3b", "sglang", dp=2)
    assert per_gpu == pytest.approx(whole / 2)


def test_copies_the_planner_lays_out_are_launched_apart_with_a_tp_split_each():
    """No data-parallel size given: the copies are separate launches, each holding its own TP-split experts."""
    plan = plan_memory(Deployment(model="qwen3-30b-a3b", gpu="h100-sxm", gpus=4, engine="vllm", tensor_parallel_size=2))
    assert plan.result.parallel.data_parallel_size == 2
    assert plan.stage_weights[0].expert_bytes_per_gpu == pytest.approx(plan.weights.expert_bytes / 2)
