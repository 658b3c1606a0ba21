"""Weight GEMMs padded to tensor-core tiles (docs/speed.md §1, session 16): on engines whose
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
from inferplan.memory.deployment import Deployment
from inferplan.performance.phases import decode_step
from inferplan.performance.rates import gemm_min_rows
from inferplan.performance.serving import _Context, _estimate
from inferplan.performance.workload import Workload
from inferplan.validation.overlap_grid import with_rates

CATALOG = load_catalog()
ROWS = CATALOG.constant("gemm-min-rows")


def _ctx(model="llama-3.1-8b", gpu="h100-sxm", engine="vllm", quantization="bf16", **kw):
    return _Context(CATALOG, Deployment(model=model, gpu=gpu, engine=engine, quantization=quantization, **kw),
                    Workload(input_len=128, output_len=128))


def test_the_engines_that_pad_take_the_calibrated_tile_and_the_others_one_row():
    assert ROWS > 1
    assert {e: gemm_min_rows(CATALOG, e) for e in ("vllm", "sglang", "trtllm", "llamacpp", "mlx")} == {
        "vllm": ROWS, "sglang": ROWS, "trtllm": 1.0, "llamacpp": 1.0, "mlx": 1.0}
    assert _ctx().rates.gemm_min_rows == ROWS
    assert _ctx(engine="trtllm", quantization="fp8").rates.gemm_min_rows == 1.0


def test_a_dense_gemm_pads_its_rows_up_to_the_tile_and_no_further():
    work = _ctx().work
    params = work.dense_bytes_per_gpu * work.weights_per_byte  # a BF16 model: half a weight per byte
    assert work.weights_per_byte == pytest.approx(0.5)
    assert work.padding_flops_per_gpu(1, 16) == pytest.approx(2 * params * 15)
    assert work.padding_flops_per_gpu(10, 16) == pytest.approx(2 * params * 6)
    assert work.padding_flops_per_gpu(16, 16) == 0.0 and work.padding_flops_per_gpu(300, 16) == 0.0
    assert work.padding_flops_per_gpu(1, 1) == 0.0
    # one row padded to the tile costs about what a full tile's rows cost (the lm_head counts in both)
    padded = work.linear_flops_per_gpu(1, 1) + work.padding_flops_per_gpu(1, 16)
    assert padded == pytest.approx(work.linear_flops_per_gpu(16, 16), rel=0.02)


def test_an_expert_pads_the_tokens_routed_to_it():
    work = _ctx(model="qwen3-30b-a3b", gpu="h100-sxm").work
    e, k = work.num_experts, work.experts_per_token
    experts = work.expert_bytes_per_gpu * work.weights_per_byte
    dense = work.dense_bytes_per_gpu * work.weights_per_byte
    # one token: k experts touched, one row each, every one padded to the tile
    assert work.padding_flops_per_gpu(1, 16) == pytest.approx(2 * (dense * 15 + experts * (k / e) * 15))
    # 64 tokens fill the dense tile; each touched expert still sees fewer than 16 of them
    touched = 1 - (1 - k / e) ** 64
    per_expert = 64 * k / (e * touched)
    assert per_expert < 16
    assert work.padding_flops_per_gpu(64, 16) == pytest.approx(2 * experts * touched * (16 - per_expert))


def test_the_estimate_says_what_the_padding_costs_and_a_vector_engine_says_nothing():
    notes = _estimate(_ctx(), 1).assumptions
    assert any(f"{ROWS:g} rows" in a and "tensor-core tiles" in a for a in notes)
    assert not any("tensor-core tiles" in a for a in _estimate(_ctx(engine="trtllm", quantization="fp8"), 1).assumptions)


@settings(max_examples=40, deadline=None, derandomize=True)
@given(st.floats(min_value=1, max_value=256), st.sampled_from([1.0, 8.0, 16.0, 64.0]),
       st.sampled_from(["llama-3.1-8b", "qwen3-30b-a3b"]))
def test_padding_never_shortens_a_step_and_more_sequences_never_shorten_it(batch, rows, model):
    ctx = _ctx(model=model)
    rates = dataclasses.replace(ctx.rates, gemm_min_rows=rows)
    bare = dataclasses.replace(ctx.rates, gemm_min_rows=1.0)
    shape = dict(context=256.0)
    padded = decode_step(ctx.work, ctx.mp.layout, rates, batch=batch, **shape)
    assert padded.seconds >= decode_step(ctx.work, ctx.mp.layout, bare, batch=batch, **shape).seconds * (1 - 1e-12)
    assert decode_step(ctx.work, ctx.mp.layout, rates, batch=batch + 1, **shape).seconds >= padded.seconds * (1 - 1e-12)


def test_a_tile_below_one_row_is_refused_with_the_constant_named(monkeypatch):
    shipped = type(CATALOG).constant
    monkeypatch.setattr(type(CATALOG), "constant",
                        lambda self, name: 0.5 if name == "gemm-min-rows" else shipped(self, name))
    with pytest.raises(InferplanError) as err:
        gemm_min_rows(CATALOG, "vllm")
    assert err.value.field == "calibration.yaml gemm-min-rows" and "1 (no padding)" in err.value.describe()
    assert gemm_min_rows(CATALOG, "llamacpp") == 1.0  # an engine that does not pad never reads it


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
