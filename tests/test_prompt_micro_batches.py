"""A prompt as the engines batch it: llama.cpp splits each n_batch chunk into n_ubatch
micro-batches, and every one reads the weights it touches again and pays the step's fixed costs
(docs/speed.md §1)."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from inferplan.catalog.loader import load_catalog
from inferplan.inputs.deployment import Deployment
from inferplan.inputs.workload import Workload
from inferplan.performance.context import ServingContext
from inferplan.performance.phases import micro_batches, prefill
from inferplan.performance.serving import estimate_at

CATALOG = load_catalog()


def context(model: str, engine: str = "llamacpp", gpu: str = "gb10", quantization: str = "gguf-q4_k_m",
            input_len: int = 2048, **deployment) -> ServingContext:
    return ServingContext(CATALOG, Deployment(model=model, gpu=gpu, engine=engine, quantization=quantization,
                                        max_model_len=8192, **deployment), Workload(input_len=input_len, output_len=32))


def test_micro_batches_split_a_chunk_into_whole_ones_and_the_rest():
    assert micro_batches(2048, 512) == [(512, 4)]
    assert micro_batches(1000, 512) == [(512, 1), (488, 1)]
    assert micro_batches(300, 512) == [(300, 1)]
    assert micro_batches(2048, None) == [(2048, 1)]


def test_each_engine_batches_a_prompt_as_documented():
    spark = context("llama-3.1-8b")
    assert spark.mp.settings.prefill_micro_batch_tokens == 512  # llama.cpp n_ubatch (common.h)
    assert spark.mp.settings.max_num_batched_tokens == 2048  # ... inside n_batch
    capped = context("llama-3.1-8b", max_num_batched_tokens=256)
    assert capped.mp.settings.prefill_micro_batch_tokens == 256  # n_ubatch never exceeds n_batch
    vllm = context("llama-3.1-8b", engine="vllm", gpu="h100-sxm", quantization="bf16")
    assert vllm.mp.settings.prefill_micro_batch_tokens == vllm.mp.settings.max_num_batched_tokens
    mlx = context("llama-3.1-8b", engine="mlx", gpu="apple-m4-max", quantization="mlx-4bit")
    assert mlx.mp.settings.max_num_batched_tokens == 2048  # mlx-lm prefill_step_size
    assert CATALOG.engine("mlx").max_num_batched_tokens.source == "eng-mlx-lm-prefill-step"


def test_every_micro_batch_reads_the_weights_it_touches():
    ctx = context("gpt-oss-120b", quantization="gguf-mxfp4-moe")
    work, layout, rates = ctx.work, ctx.mp.layout, ctx.rates
    whole = prefill(work, layout, rates, tokens=2048)
    split = prefill(work, layout, rates, tokens=2048, micro_batch=512)
    assert split.memory_s > 3.5 * whole.memory_s * work.weights_read_per_gpu(512) / work.weights_read_per_gpu(2048)
    from inferplan.performance.phases import overhead_s
    # the per-step and per-layer costs four times, the per-sequence cost once
    assert split.overhead_s == pytest.approx(whole.overhead_s + 3 * overhead_s(work, rates, 0.0))


def test_spark_reads_gpt_oss_120b_once_per_micro_batch():
    """DGX Spark, llama.cpp, gpt-oss-120b MXFP4: a 2,048-token prompt runs as four 512-token
    micro-batches, each touching nearly every expert, so at 273 GB/s it is bound by reading ~60 GB
    four times rather than by its FLOPs. Read once per chunk, the model would put it
    63 % faster than the measured 1,938 tokens/s (catalogue point s-llamacpp-gb10-gptoss120b-mxfp4-pp)."""
    point = next(p for p in CATALOG.speed_points if p.id == "s-llamacpp-gb10-gptoss120b-mxfp4-pp")
    ctx = context("gpt-oss-120b", quantization="gguf-mxfp4-moe", input_len=point.input_tokens)
    step = prefill(ctx.work, ctx.mp.layout, ctx.rates, tokens=point.input_tokens, micro_batch=512)
    assert step.bound == "memory"
    predicted = point.input_tokens / step.seconds
    assert predicted == pytest.approx(point.measured.value, rel=0.30)


@settings(max_examples=40, deadline=None)
@given(tokens=st.integers(1, 8192), extra=st.integers(1, 2048))
def test_a_longer_prompt_never_takes_less_time(tokens, extra):
    ctx = MOE
    micro = ctx.mp.settings.prefill_micro_batch_tokens
    short = prefill(ctx.work, ctx.mp.layout, ctx.rates, tokens=tokens, micro_batch=micro)
    long = prefill(ctx.work, ctx.mp.layout, ctx.rates, tokens=tokens + extra, micro_batch=micro)
    assert long.seconds >= short.seconds


MOE = context("gpt-oss-20b", quantization="gguf-mxfp4-moe")


def test_the_estimate_says_how_the_prompt_is_batched():
    ctx = context("qwen3-30b-a3b", input_len=4096)
    notes = [a for a in estimate_at(ctx, 1).assumptions if "micro-batches of 512 tokens" in a]
    assert len(notes) == 1 and "2048-token chunks" in notes[0]
    dense = context("llama-3.1-8b", engine="vllm", gpu="h100-sxm", quantization="bf16")
    assert not any("micro-batch" in a for a in estimate_at(dense, 1).assumptions)


def test_a_larger_ubatch_runs_a_mixture_of_experts_prompt_faster():
    """llama.cpp users raise -ub for MoE prompts: each expert then sees more rows per GEMM and the
    weights are read fewer times; the compute buffer grows with it."""
    default, large = context("qwen3-30b-a3b"), context("qwen3-30b-a3b", ubatch_size=2048)
    assert large.mp.settings.prefill_micro_batch_tokens == 2048
    assert estimate_at(large, 1).ttft_s < estimate_at(default, 1).ttft_s
    assert large.mp.result.activation_bytes_per_gpu > default.mp.result.activation_bytes_per_gpu


def test_ubatch_size_is_a_llamacpp_setting():
    from inferplan.errors import InvalidScenarioError

    with pytest.raises(InvalidScenarioError) as exc:
        context("llama-3.1-8b", engine="vllm", gpu="h100-sxm", quantization="bf16", ubatch_size=512)
    assert exc.value.field == "ubatch_size"
    assert "llama.cpp" in str(exc.value)


def test_the_cli_takes_ubatch_size_and_names_it_when_wrong():
    from typer.testing import CliRunner

    from inferplan.shells.cli import app

    runner = CliRunner()
    ok = runner.invoke(app, ["perf", "--model", "qwen3-30b-a3b", "--gpu", "gb10", "--engine", "llamacpp", "-q", "q4_k_m",
                             "--ubatch-size", "1024", "--input-len", "4096", "--output-len", "64", "--json"])
    assert ok.exit_code == 0, ok.output
    assert "micro-batches of 1024 tokens" in ok.output
    bad = runner.invoke(app, ["perf", "--model", "llama-3.1-8b", "--gpu", "h100", "--ubatch-size", "512"])
    assert bad.exit_code == 2
    assert "--ubatch-size" in bad.output


def test_a_prompt_costs_the_same_alone_and_in_the_serving_cycle():
    """At concurrency 1 a request's cycle is its prompt and its decode steps, so aggregate output
    tokens/s is output_len / (TTFT + (output_len − 1) · TPOT) whichever path prices the prompt; and a
    second request in flight never shortens the first token (micro-batches applied to the lone prompt
    only would make TTFT at 2 requests shorter than at 1)."""
    from inferplan.performance.serving import estimate

    d = Deployment(model="gpt-oss-120b", gpu="gb10", engine="llamacpp", quantization="gguf-mxfp4-moe", max_num_seqs=2)
    out = 256
    one = estimate(d, Workload(input_len=8192, output_len=out, concurrency=1), CATALOG)
    assert one.output_tokens_per_s_total == pytest.approx(out / (one.ttft_s + (out - 1) * one.tpot_s), rel=0.02)
    two = estimate(d, Workload(input_len=8192, output_len=out, concurrency=2), CATALOG)
    assert two.ttft_s >= one.ttft_s


def test_micro_batches_flow_through_pipeline_stages():
    """llama.cpp splits a chunk into n_ubatch micro-batches that follow each other through the
    stages (`-sm layer`), so a chunk of n over pp stages takes n + pp − 1 micro-batch times, not pp · n;
    one micro-batch still crosses every stage."""
    from inferplan.performance.serving import _lone_chunk_s

    ctx = ServingContext(CATALOG, Deployment(model="llama-3.1-70b", gpu="rtx-4090", gpus=2, pipeline_parallel_size=2,
                                       engine="llamacpp", quantization="gguf-q4_k_m", max_model_len=8192),
                   Workload(input_len=4096, output_len=32))
    stage = prefill(ctx.work, ctx.mp.layout, ctx.rates, tokens=2048, micro_batch=512).seconds
    assert _lone_chunk_s(ctx, 0.0, 2048) == pytest.approx(stage * (4 + 2 - 1) / 4)
    single = prefill(ctx.work, ctx.mp.layout, ctx.rates, tokens=512, micro_batch=512).seconds
    assert _lone_chunk_s(ctx, 0.0, 512) == pytest.approx(2 * single)


def test_a_ubatch_above_n_batch_is_capped_and_said():
    ctx = context("qwen3-30b-a3b", ubatch_size=4096)
    assert ctx.mp.settings.prefill_micro_batch_tokens == 2048
    assert any("--ubatch-size 4096 is capped at the 2048-token n_batch" in a for a in estimate_at(ctx, 1).assumptions)
