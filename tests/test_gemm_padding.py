"""Weight GEMMs padded to tensor-core tiles (docs/speed.md §1): on engines whose
small-batch kernels run tiles (vLLM, SGLang) a GEMM computes at least ``gemm-min-rows`` rows of
every weight matrix it reads, an expert's rows being the tokens routed to it; vector kernels
(TensorRT-LLM's CUDA-core GEMV, llama.cpp's MMVQ, MLX's qmv) compute only the rows there are."""

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import inferplan.validation.calibrate_speed as cs
from inferplan.catalog.loader import load_catalog
from inferplan.errors import InferplanError
from inferplan.inputs.deployment import Deployment
from inferplan.inputs.workload import Workload
from inferplan.performance.context import ServingContext
from inferplan.performance.phases import decode_step, prefill
from inferplan.performance.rates import gemm_min_rows
from inferplan.performance.serving import estimate_at
from inferplan.performance.work import model_work
from inferplan.validation.overlap_grid import with_rates

from catalog_edits import with_constants

CATALOG = load_catalog()
ROWS = CATALOG.constant("gemm-min-rows")


def _ctx(model="llama-3.1-8b", gpu="h100-sxm", engine="vllm", quantization="bf16", **kw):
    return ServingContext(CATALOG, Deployment(model=model, gpu=gpu, engine=engine, quantization=quantization, **kw),
                    Workload(input_len=128, output_len=128))


def test_the_engines_that_pad_take_the_calibrated_tile_and_the_others_one_row():
    assert ROWS > 1
    h100, m4 = CATALOG.accelerator("h100-sxm"), CATALOG.accelerator("apple-m4-max")
    assert {e: gemm_min_rows(CATALOG, e, h100) for e in ("vllm", "sglang", "trtllm", "llamacpp", "mlx")} == {
        "vllm": ROWS, "sglang": ROWS, "trtllm": 1.0, "llamacpp": 1.0, "mlx": 1.0}
    assert gemm_min_rows(CATALOG, "vllm", m4) == 1.0  # vLLM on an Apple GPU runs MLX's vector kernels
    assert gemm_min_rows(CATALOG, "vllm", CATALOG.accelerator("mi300x")) == ROWS  # ROCm: its own tiles
    assert _ctx().rates.gemm_min_rows == ROWS
    assert _ctx(engine="trtllm", quantization="fp8").rates.gemm_min_rows == 1.0


@pytest.mark.parametrize("model, quantization", [
    ("llama-3.1-8b", "bf16"), ("llama-3.1-8b", "awq"), ("gpt-oss-20b", None), ("qwen3-30b-a3b", "fp8")])
def test_one_row_padded_to_the_tile_costs_a_full_tile_of_rows(model, quantization):
    # counted in weights, not bytes: 16-bit attention or lm_head beside 4-bit experts (gpt-oss's MXFP4)
    # once made a row's padding 2-3x a tile's work; a token reaches each of its k experts alone
    kw = {"quantization": quantization} if quantization else {}
    work = _ctx(model=model, **kw).work
    assert work.padding_flops_per_gpu(1, 16) == pytest.approx(15 * work.linear_flops_per_gpu(1, 1), rel=1e-9)
    assert work.padding_flops_per_gpu(10, 16) > 0
    assert work.padding_flops_per_gpu(1, 1) == 0.0


@pytest.mark.parametrize("model, layout", [
    ("llama-3.1-70b", dict(gpus=4, tensor_parallel_size=2, pipeline_parallel_size=2)),
    ("qwen3-30b-a3b", dict(gpus=4, tensor_parallel_size=2, pipeline_parallel_size=2))])
def test_a_pipeline_stage_pads_its_own_share_and_the_last_stage_its_lm_head(model, layout):
    work = _ctx(model=model, gpu="h100-sxm", **layout).work
    assert work.pp == 2 and work.tp == 2
    assert work.padding_flops_per_gpu(1, 32) == pytest.approx(31 * work.linear_flops_per_gpu(1, 1), rel=1e-9)
    last = work.last_stage()
    extra = last.padding_flops_per_gpu(1, 32) - work.padding_flops_per_gpu(1, 32)
    assert extra == pytest.approx(2 * 31 * work.lm_head_params * (work.pp - 1) / (work.tp * work.pp))
    tp4 = _ctx(model=model, gpu="h100-sxm", gpus=4, tensor_parallel_size=4).work  # a stage's GPU pads a quarter too
    assert work.padding_flops_per_gpu(1, 32) == pytest.approx(tp4.padding_flops_per_gpu(1, 32), rel=1e-6)


def test_a_model_without_a_parameter_count_takes_its_experts_from_their_bytes():
    ctx = _ctx(model="qwen3-30b-a3b", gpu="h100-sxm")
    counted = ctx.work
    proxy = model_work(dataclasses.replace(ctx.mp, spec=dataclasses.replace(ctx.mp.spec, architecture_is_proxy=True)), CATALOG)
    assert proxy.expert_params_per_gpu == pytest.approx(counted.expert_params_per_gpu, rel=0.02)
    assert proxy.routed_active_params == pytest.approx(
        proxy.expert_params_per_gpu * proxy.experts_per_token / proxy.num_experts)
    assert proxy.padding_flops_per_gpu(1, 32) > proxy.padding_flops_per_gpu(1, 16) > 0


def test_a_dense_gemm_pads_its_rows_up_to_the_tile_and_no_further():
    work = _ctx().work
    assert work.padding_flops_per_gpu(10, 16) == pytest.approx(6 / 15 * work.padding_flops_per_gpu(1, 16))
    assert work.padding_flops_per_gpu(16, 16) == 0.0 and work.padding_flops_per_gpu(300, 16) == 0.0
    padded = work.linear_flops_per_gpu(1, 1) + work.padding_flops_per_gpu(1, 16)
    assert padded == pytest.approx(work.linear_flops_per_gpu(16, 16))


def test_an_expert_pads_the_tokens_routed_to_it():
    work = _ctx(model="qwen3-30b-a3b", gpu="h100-sxm").work
    e, k = work.num_experts, work.experts_per_token
    # 64 tokens fill the dense tiles; each touched expert still sees fewer than 16 of them
    touched = 1 - (1 - k / e) ** 64
    per_expert = 64 * k / (e * touched)
    assert 3 < per_expert < 16
    assert work.padding_flops_per_gpu(64, 16) == pytest.approx(
        2 * work.expert_params_per_gpu * touched * (16 - per_expert))
    # under expert parallelism a GPU's experts see the tokens of every data-parallel rank
    ep = _ctx(model="qwen3-30b-a3b", gpu="h100-sxm", gpus=4, data_parallel_size=4, enable_expert_parallel=True).work
    assert ep.expert_parallel == 4 and ep.expert_params_per_gpu == pytest.approx(work.expert_params_per_gpu / 4)
    touched = 1 - (1 - k / e) ** 4  # one token on each of the four ranks
    dense = (ep.active_params - ep.routed_active_params)
    assert ep.padding_flops_per_gpu(1, 16) == pytest.approx(
        2 * (dense * 15 + ep.expert_params_per_gpu * touched * (16 - 4 * k / (e * touched))))


def test_the_step_pays_the_padding_at_its_compute_rate():
    ctx = _ctx(gpu="h20", engine="sglang")
    bare = dataclasses.replace(ctx.rates, gemm_min_rows=1.0)
    padded = decode_step(ctx.work, ctx.mp.layout, ctx.rates, batch=1, context=256.0)
    plain = decode_step(ctx.work, ctx.mp.layout, bare, batch=1, context=256.0)
    expected = ctx.work.padding_flops_per_gpu(1, ROWS) / ctx.rates.achievable_flop_per_s
    assert plain.padding_s == 0.0 and padded.padding_s == pytest.approx(expected)
    assert padded.compute_s - plain.compute_s == pytest.approx(expected)
    assert padded.seconds > plain.seconds * 1.1  # on an H20 it shows: a BF16 8B model at batch 1
    chunk = prefill(ctx.work, ctx.mp.layout, ctx.rates, tokens=4.0)
    assert chunk.padding_s == pytest.approx(ctx.work.padding_flops_per_gpu(4, ROWS) / ctx.rates.achievable_flop_per_s)


def test_the_estimate_says_what_its_own_step_pads_and_a_vector_engine_says_nothing():
    ctx = _ctx(gpu="h20", engine="sglang")
    est = estimate_at(ctx, 1)
    step = decode_step(ctx.work, ctx.mp.layout, ctx.rates, **ctx._step_shape(1, 0.0))
    note = next(a for a in est.assumptions if "tensor-core tiles" in a)
    assert f"{ROWS:g} rows" in note and f"{step.padding_s * 1e3:.2f} ms of padded compute" in note
    assert not any("tensor-core tiles" in a for a in estimate_at(_ctx(engine="trtllm", quantization="fp8"), 1).assumptions)
    # a long prompt beside a few sequences: the step the estimate times fills its tiles, and says nothing
    long = ServingContext(CATALOG, Deployment(model="llama-3.1-8b", gpu="h20", engine="sglang", quantization="bf16"),
                    Workload(input_len=8192, output_len=16))
    assert not any("tensor-core tiles" in a for a in estimate_at(long, 8).assumptions)


@settings(max_examples=40, deadline=None, derandomize=True)
@given(st.floats(min_value=1, max_value=256), st.sampled_from([1.0, 8.0, 16.0, 32.0, 64.0]),
       st.sampled_from(["llama-3.1-8b", "qwen3-30b-a3b"]))
def test_padding_never_shortens_a_step_and_more_sequences_never_shorten_it(batch, rows, model):
    ctx = _ctx(model=model)
    rates = dataclasses.replace(ctx.rates, gemm_min_rows=rows)
    bare = dataclasses.replace(ctx.rates, gemm_min_rows=1.0)
    shape = dict(context=256.0)
    padded = decode_step(ctx.work, ctx.mp.layout, rates, batch=batch, **shape)
    assert padded.seconds >= decode_step(ctx.work, ctx.mp.layout, bare, batch=batch, **shape).seconds * (1 - 1e-12)
    assert decode_step(ctx.work, ctx.mp.layout, rates, batch=batch + 1, **shape).seconds >= padded.seconds * (1 - 1e-12)


def test_a_tile_below_one_row_is_refused_with_the_constant_named():
    half_row = with_constants(CATALOG, {"gemm-min-rows": 0.5})
    h100 = CATALOG.accelerator("h100-sxm")
    with pytest.raises(InferplanError) as err:
        gemm_min_rows(half_row, "vllm", h100)
    assert err.value.field == "calibration.yaml gemm-min-rows" and "1 (no padding)" in err.value.describe()
    assert gemm_min_rows(half_row, "llamacpp", h100) == 1.0  # an engine that does not pad never reads it


def test_the_grid_moves_the_tile_only_where_the_engine_pads():
    points = cs.prepare(CATALOG, "fit")[0]
    some = [p for p in points if p.ctx.d.engine == "sglang"][:3] + [p for p in points if p.ctx.d.engine == "trtllm"][:3]
    moved = with_rates(some, "gemm_min_rows", 64.0)
    assert [p.ctx.rates.gemm_min_rows for p in moved] == [64.0] * 3 + [1.0] * 3
    assert [p.ctx.rates.gemm_min_rows for p in some] == [ROWS] * 3 + [1.0] * 3  # the originals are left alone
    with pytest.raises(InferplanError) as err:
        with_rates(some, "gemm_min_rows", 0.0)
    assert err.value.field == "rows"
    with pytest.raises(InferplanError) as err:
        with_rates(some, "seq_overhead_s", 2.0)
    assert err.value.field == "field"
