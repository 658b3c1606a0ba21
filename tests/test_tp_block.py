"""Tensor-parallel sizes for block-quantized weights: vLLM and SGLang need each rank's share of the
MLP widths to be whole blocks of a block-FP8 checkpoint (quantizations.yaml fp8-block weight_block,
128; engines.yaml tensor_parallel_splits weight_block). Qwen3-235B-A22B's experts are 1,536 wide:
12 blocks, which TP 8 cannot split (192 per rank, vllm#17569). TensorRT-LLM's block-FP8 fused MoE
needs the same of the routed experts' width only (expert_weight_block, TensorRT-LLM PR #14613)."""

from __future__ import annotations

import pytest

from inferplan.errors import InvalidScenarioError
from inferplan.inputs.deployment import Deployment
from inferplan.memory.fit import fit
from inferplan.memory.resolve import resolve_model
from inferplan.memory.tp_split import allowed_tp_sizes, tp_refusal
from inferplan.search.request import SearchRequest
from inferplan.search.space import build_space

Q235_FP8 = dict(model="qwen3-235b-a22b", gpu="h100", quantization="fp8-block")


def test_fp8_block_weights_are_quantized_in_128_wide_blocks(catalog):
    assert catalog.quantization("fp8-block").weight_block.value == 128
    assert catalog.quantization("fp8").weight_block is None


@pytest.mark.parametrize("engine", ["vllm", "sglang", "trtllm"])
def test_a_block_fp8_expert_width_narrower_than_a_block_per_rank_is_refused(catalog, engine):
    spec, quant = resolve_model(catalog, "qwen3-235b-a22b"), catalog.quantization("fp8-block")
    refused = tp_refusal(spec, catalog.engine(engine), 8, quant=quant)
    assert refused is not None and refused.count == 12  # 1536 / 128
    assert tp_refusal(spec, catalog.engine(engine), 8) is None  # bf16: 192 per rank divides
    assert tp_refusal(spec, catalog.engine(engine), 8, quant=quant, expert_parallel=True) is None  # experts whole
    assert allowed_tp_sizes(spec, catalog.engine(engine), quant=quant) == [1, 2, 4]


def test_deepseek_r1s_dense_width_at_tp32_is_refused(catalog):
    """sglang#3345: DeepSeek-R1's dense intermediate 18,432 / 32 = 576, not whole 128 blocks."""
    spec = resolve_model(catalog, "deepseek-v3")
    refused = tp_refusal(spec, catalog.engine("sglang"), 32, quant=catalog.quantization("fp8-block"),
                         expert_parallel=True)
    assert refused is not None and "dense" in refused.what and refused.count == 144


def test_a_stated_tp8_fp8_block_qwen3_235b_is_refused_naming_the_sizes(catalog):
    with pytest.raises(InvalidScenarioError) as e:
        fit(Deployment(**Q235_FP8, tensor_parallel_size=8), catalog)
    assert e.value.field == "tensor_parallel_size"
    assert e.value.allowed == "1, 2, 4"


def test_eight_gpus_without_a_layout_run_tp4_pp2_for_fp8_block(catalog):
    r = fit(Deployment(**Q235_FP8, gpus=8), catalog)
    assert (r.parallel.tensor_parallel_size, r.parallel.pipeline_parallel_size) == (4, 2)
    assert r.fits


def test_the_search_offers_no_tp8_for_fp8_block_qwen3_235b(catalog):
    req = SearchRequest(models=("qwen3-235b-a22b",), request_rate_per_s=1, input_len=1000, output_len=100,
                        systems=("hgx-h100",), engines=("vllm",), quantizations=("fp8-block",), speculative=False)
    cells = build_space(catalog, req, input_len=1000, output_len=100).cells
    sizes = {c.tensor_parallel_size for c in cells if not c.expert_parallel}
    assert sizes and 8 not in sizes


def test_trtllm_checks_blocks_of_the_routed_experts_only(catalog):
    """DeepSeek-V3's dense width 18,432 at TP 32 is 4.5 blocks a rank: TensorRT-LLM's rule covers the
    fused-MoE experts, so expert parallelism leaves it nothing to refuse there."""
    spec, quant = resolve_model(catalog, "deepseek-v3"), catalog.quantization("fp8-block")
    assert tp_refusal(spec, catalog.engine("trtllm"), 32, quant=quant, expert_parallel=True) is None


def test_the_search_offers_trtllm_tp8_qwen3_235b_fp8_block_only_with_expert_parallelism(catalog):
    req = SearchRequest(models=("qwen3-235b-a22b",), request_rate_per_s=1, input_len=1000, output_len=100,
                        systems=("hgx-h200",), engines=("trtllm",), quantizations=("fp8-block",), speculative=False)
    cells = build_space(catalog, req, input_len=1000, output_len=100).cells
    sizes = {c.tensor_parallel_size for c in cells if not c.expert_parallel}
    assert 4 in sizes and 8 not in sizes
    assert any(c.expert_parallel and c.gpus == 8 for c in cells)


def test_vllm_data_parallel_without_expert_parallelism_splits_the_expert_blocks_over_tp_times_dp(catalog):
    """vLLM's MoE layers without expert parallelism run one tensor-parallel group of TP x DP GPUs
    (eng-moe-tp-dp-vllm), and its block-FP8 MoE method checks each GPU's expert width against the block
    (fp8.py create_weights): TP 4 x DP 2 leaves 1536 / 8 = 192, not whole blocks, where TP 4 alone starts."""
    spec, quant = resolve_model(catalog, "qwen3-235b-a22b"), catalog.quantization("fp8-block")
    refused = tp_refusal(spec, catalog.engine("vllm"), 4, quant=quant, expert_tp=8)
    assert refused is not None and refused.experts and refused.count == 12
    assert tp_refusal(spec, catalog.engine("vllm"), 4, quant=quant) is None
    with pytest.raises(InvalidScenarioError) as e:
        fit(Deployment(**Q235_FP8, engine="vllm", tensor_parallel_size=4, data_parallel_size=2), catalog)
    assert e.value.field == "data_parallel_size" and "8 GPUs" in str(e.value)
    assert e.value.allowed.startswith("TP x DP one of 1, 2, 3, 4, 6, 12")


@pytest.mark.parametrize("engine, tp, dp, ep", [("vllm", 2, 2, False), ("vllm", 4, 2, True), ("sglang", 4, 2, False)])
def test_layouts_whose_experts_split_into_whole_blocks_start(catalog, engine, tp, dp, ep):
    """TP 2 x DP 2 leaves 384 (three blocks); expert parallelism keeps the experts whole; SGLang's
    data-parallel ranks without it are copies, each with its own TP-4 split."""
    r = fit(Deployment(**Q235_FP8, engine=engine, tensor_parallel_size=tp, data_parallel_size=dp,
                       enable_expert_parallel=ep), catalog)
    assert r.parallel.data_parallel_size == dp
