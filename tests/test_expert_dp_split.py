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


def test_vllm_pads_each_gpus_share_of_an_expert_split_over_tp_times_dp():
    """Marlin pads each GPU's expert width to its tiles: gpt-oss-120b's 2,880 over TP 2 x DP 8 is 180, padded
    to 256, where a TP-2 copy's 1,440 pads to 1,536 (the hidden 2,880 to 3,072 in both)."""
    common = dict(model="gpt-oss-120b", gpu="h100-sxm", engine="vllm", moe_kernel="marlin", tensor_parallel_size=2)
    shared = plan_memory(Deployment(**common, gpus=16, data_parallel_size=8)).result.assumptions
    copy = plan_memory(Deployment(**common)).result.assumptions
    assert any(f"experts padded x{3072 / 2880 * 256 / 180:.4f}" in a for a in shared)
    assert any(f"experts padded x{3072 / 2880 * 1536 / 1440:.4f}" in a for a in copy)


def test_copies_the_planner_lays_out_gather_no_tokens_into_the_moe_workspace():
    """DeepSeek-V4-Flash's Marlin workspace holds the batch the kernel gets: every stated DP rank's tokens,
    all-gathered; a copy launched apart gets its own."""
    def activation(**kw) -> float:
        d = Deployment(model="deepseek-v4-flash", gpu="h100-sxm", engine="vllm", tensor_parallel_size=2,
                       engine_version="0.31.0", **kw)  # Marlin (Humming from 0.32.0)
        return plan_memory(d).result.activation_bytes_per_gpu

    alone, copies, ranks = activation(), activation(gpus=4), activation(data_parallel_size=2)
    assert copies == pytest.approx(alone) and ranks > alone
