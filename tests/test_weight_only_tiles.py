"""Weight-only GEMMs padded to their own kernels' row blocks (docs/speed.md §1): vLLM and SGLang run
4-bit weights beside 16-bit activations through Marlin on CUDA (8 rows at 1-8, 16-row blocks above;
vLLM's Machete on Hopper, 16), read from their source in engines.yaml, while every other weight GEMM
(and the 16-bit lm_head beside the 4-bit layers) keeps the calibrated ``gemm-min-rows`` tile."""

import dataclasses

import pytest

from inferplan.catalog.loader import load_catalog
from inferplan.errors import InferplanError
from inferplan.inputs.deployment import Deployment
from inferplan.inputs.workload import Workload
from inferplan.performance.context import ServingContext
from inferplan.performance.phases import decode_step
from inferplan.performance.rates import weight_gemm_row_blocks
from inferplan.performance.serving import estimate_at

from catalog_edits import with_record

CATALOG = load_catalog()
ROWS = CATALOG.constant("gemm-min-rows")
MARLIN = CATALOG.engine("vllm").weight_only_gemm_row_blocks


def _ctx(model="qwen3-32b", gpu="rtx-4090", engine="vllm", quantization="int4-awq", **kw):
    return ServingContext(CATALOG, Deployment(model=model, gpu=gpu, engine=engine, quantization=quantization, **kw),
                          Workload(input_len=2000, output_len=500))


def test_the_blocks_come_from_the_engine_data_for_4_bit_weights_on_cuda_only():
    assert MARLIN and MARLIN[0] < ROWS  # Marlin's smallest block is below the calibrated tile
    assert _ctx().rates.weight_gemm_row_blocks == MARLIN
    assert _ctx(model="qwen3-14b", gpu="a100-80gb", quantization="int4-gptq").rates.weight_gemm_row_blocks == MARLIN
    assert _ctx(model="qwen3-8b", gpu="h20", engine="sglang").rates.weight_gemm_row_blocks == (
        CATALOG.engine("sglang").weight_only_gemm_row_blocks)
    hopper = CATALOG.engine("vllm").weight_only_gemm_row_blocks_by_architecture["hopper"]
    assert _ctx(model="qwen3-8b", gpu="h100-sxm").rates.weight_gemm_row_blocks == hopper != MARLIN
    # 16-bit and FP8 weights, ROCm, and the engines whose small batches run vector kernels keep no blocks
    assert _ctx(model="qwen3-8b", quantization="bf16").rates.weight_gemm_row_blocks == ()
    assert _ctx(model="qwen3-8b", gpu="h100-sxm", quantization="fp8").rates.weight_gemm_row_blocks == ()
    assert _ctx(model="qwen3-8b", gpu="mi300x").rates.weight_gemm_row_blocks == ()
    assert _ctx(model="qwen3-8b", engine="trtllm").rates.weight_gemm_row_blocks == ()


def test_other_blocks_in_the_data_are_the_ones_the_rates_take():
    other = with_record(CATALOG, "engines", "vllm", weight_only_gemm_row_blocks=(4.0, 12.0))
    rtx = CATALOG.accelerator("rtx-4090")
    awq = CATALOG.quantization("int4-awq")
    assert weight_gemm_row_blocks(other, "vllm", rtx, awq, "bf16") == (4.0, 12.0)
    assert weight_gemm_row_blocks(other, "vllm", rtx, awq, "int8") == ()  # not a 16-bit activation kernel


def test_blocks_out_of_order_are_refused_with_the_field_named():
    reversed_blocks = with_record(CATALOG, "engines", "sglang", weight_only_gemm_row_blocks=(16.0, 8.0))
    with pytest.raises(InferplanError) as err:
        weight_gemm_row_blocks(reversed_blocks, "sglang", CATALOG.accelerator("rtx-4090"),
                               CATALOG.quantization("int4-awq"), "fp16")
    assert err.value.field == "engines.yaml sglang weight_only_gemm_row_blocks" and "smallest first" in err.value.describe()


def test_a_step_pads_its_4_bit_layers_to_the_smallest_block_and_the_lm_head_to_the_tile():
    work = _ctx().work
    body = (work.active_params - work.lm_head_params) / (work.tp * work.pp)
    head = work.lm_head_params / (work.tp * work.pp)
    small, large = MARLIN
    assert work.padding_flops_per_gpu(1, ROWS, MARLIN) == pytest.approx(2 * (body * (small - 1) + head * (ROWS - 1)))
    rows = small + 1  # past the small block: the next one
    assert work.padding_flops_per_gpu(rows, ROWS, MARLIN) == pytest.approx(
        2 * (body * (large - rows) + head * (ROWS - rows)))
    assert work.padding_flops_per_gpu(large + 1, ROWS, MARLIN) == pytest.approx(2 * head * (ROWS - large - 1))
    assert work.padding_flops_per_gpu(1, ROWS, MARLIN) < work.padding_flops_per_gpu(1, ROWS) / 3


def test_an_expert_pads_its_routed_tokens_to_the_smallest_block_that_holds_them():
    work = _ctx(model="qwen3-30b-a3b", gpu="a100-80gb").work
    small = MARLIN[0]
    dense = (work.active_params - work.routed_active_params - work.lm_head_params) / (work.tp * work.pp)
    head = work.lm_head_params / (work.tp * work.pp)
    touched = work.experts_per_token / work.num_experts  # one token reaches k experts, one row each
    assert work.padding_flops_per_gpu(1, ROWS, MARLIN) == pytest.approx(
        2 * (dense * (small - 1) + head * (ROWS - 1) + work.expert_params_per_gpu * touched * (small - 1)))


def test_qwen3_32b_awq_on_one_rtx_4090_is_bound_by_memory_at_one_request():
    ctx = _ctx()
    step = decode_step(ctx.work, ctx.mp.layout, ctx.rates, **ctx._step_shape(1, 0.0))
    expected = ctx.work.padding_flops_per_gpu(1, ROWS, MARLIN) / ctx.rates.achievable_flop_per_s
    assert step.padding_s == pytest.approx(expected)
    assert step.compute_s < step.memory_s  # padded to the calibrated tile the compute was above the memory time
    tiled = decode_step(ctx.work, ctx.mp.layout, dataclasses.replace(ctx.rates, weight_gemm_row_blocks=()),
                        **ctx._step_shape(1, 0.0))
    assert tiled.compute_s > tiled.memory_s
    note = next(a for a in estimate_at(ctx, 1).assumptions if "tensor-core tiles" in a)
    assert f"{MARLIN[0]:g} or {MARLIN[1]:g} rows for the int4-awq weights" in note
    assert f"at least {ROWS:g} for the 16-bit lm_head" in note
