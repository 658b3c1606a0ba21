"""Batch limits per pipeline micro-batch (TensorRT-LLM: engines.yaml pp_batch_limits) and the limits
trtllm-bench chooses for a run that states none (validation/bench_limits.py; docs/speed.md §2 and §4)."""

import statistics

import pytest
import yaml

from inferplan.catalog.loader import DATA_DIR, load_catalog, load_files
from inferplan.errors import CatalogError
from inferplan.inputs.deployment import Deployment
from inferplan.inputs.workload import Workload
from inferplan.performance.context import ServingContext
from inferplan.validation.bench_limits import _round_batch, _round_tokens, trtllm_bench_limits
from inferplan.validation.speed import check_point, point_scenario

CATALOG = load_catalog()
GiB = 2**30


def context(engine: str, pp: int, **settings) -> ServingContext:
    d = Deployment(model="llama-3.3-70b", gpu="rtx-pro-6000-blackwell", gpus=pp, pipeline_parallel_size=pp,
                   engine=engine, quantization="nvfp4", kv_cache_dtype="fp8", max_model_len=2000, **settings)
    return ServingContext(CATALOG, d, Workload(input_len=1000, output_len=1000, concurrency="max"))


def test_tensorrt_llm_holds_each_micro_batch_to_its_limits_and_vllm_the_instance():
    trt, vllm = context("trtllm", 4, max_num_seqs=16), context("vllm", 4, max_num_seqs=16)
    assert trt.kv_limit > 64 and vllm.kv_limit > 16  # the KV cache does not bind here
    assert trt.max_running == 4 * 16 and vllm.max_running == 16
    assert context("trtllm", 1, max_num_seqs=16).max_running == 16  # one stage: one micro-batch
    # a round fuses a token budget per micro-batch under TensorRT-LLM, one in all under vLLM
    trt, vllm = context("trtllm", 4, max_num_batched_tokens=4096), context("vllm", 4, max_num_batched_tokens=4096)
    assert trt.round_budget(40) == 4 * 4096 - 40 and vllm.round_budget(40) == 4096 - 40
    # a new request's chunk rides one micro-batch: that one's budget less its 10 (of 39 others') decode tokens
    assert trt.chunk_budget(40) == pytest.approx(4096 - 39 / 4)
    assert vllm.chunk_budget(40) == vllm.round_budget(40)
    # the activation workspace is sized for one micro-batch's tokens, whatever the stage count
    per_token = CATALOG.constant("generic-activation-bytes-per-token-hidden")
    hidden = trt.mp.spec.architecture.hidden_size
    for pp in (1, 4):
        fit = context("trtllm", pp, max_num_batched_tokens=4096).mp.result
        assert fit.activation_bytes_per_gpu == pytest.approx(per_token * 4096 * hidden)


def test_trtllm_bench_rounds_as_its_tuning_code_does():
    # finetune_setting: at least 64 sequences, to 32 below 256, to 128 below 1024, else to 256
    tuning = CATALOG.bench_tunings.records["trtllm-bench"]
    assert [_round_batch(x, tuning) for x in (1, 65, 255.5, 256, 1000, 1025)] == [64, 96, 256, 256, 1024, 1280]
    # tokens: at least 2048, to 256 below 4096, to 512 below 8192, else to 1024
    assert [_round_tokens(x, tuning) for x in (10, 3000, 4097, 8192, 20001)] == [2048, 3072, 4608, 8192, 20480]


def point(point_id: str):
    return CATALOG.speed_points.records[point_id]


def test_trtllm_bench_limits_follow_the_kv_cache_the_tool_expects():
    # Llama 3.3 70B NVFP4 (ModelOpt) on 8 RTX PRO 6000, TP1 x PP8, 2048/128, FP8 KV cache, by hand:
    # KV per token 2 x 80 layers x 8 heads x 128 x 1 B = 163,840 B; the checkpoint's stored elements
    # (4.5-bit linear weights in one-byte elements, the rest one each) x 0.5 B; 8 x the device's
    # memory less that, x 0.9 (the engine's free-memory fraction)
    p = point("s-trtpp-rtxpro6000x8-llama33-70b-nvfp4-2048-128-out")
    limits = trtllm_bench_limits(CATALOG, p)
    from inferplan.memory.resolve import resolve_model
    from inferplan.memory.engine_budget import device_total_bytes
    from inferplan.memory.params import count_params

    params = count_params(resolve_model(CATALOG, "llama-3.3-70b").architecture)
    stored = params.linear * 4.5 / 8 + params.total - params.linear
    device, _ = device_total_bytes(CATALOG, CATALOG.accelerator("rtx-pro-6000-blackwell"))
    requests = (8 * device - 0.5 * stored) * 0.9 / (163_840 * (2048 + 128))
    assert limits.kv_requests == pytest.approx(requests, rel=1e-9)
    assert 1950 < requests < 2050  # ~2,009 requests: 251 per micro-batch -> 256 after rounding
    assert limits.max_batch_size == 256
    # tokens: 251 x (1 + 2048/128) = 4,270 -> 4,608; chunked prefill off keeps it >= 2048 + 256
    assert limits.max_num_tokens == 4608
    # short sequences: the 4,096-sequence cap binds before the split over stages
    short = trtllm_bench_limits(CATALOG, point("s-trtpp-rtxpro6000x8-llama33-70b-nvfp4-128-128-out"))
    assert short.kv_requests > 4096 and short.max_batch_size == 512
    # a long prompt: the token budget holds the whole prompt and the batch (no chunking)
    long = trtllm_bench_limits(CATALOG, point("s-trtpp-rtxpro6000x8-llama33-70b-nvfp4-20000-2000-out"))
    assert long.max_num_tokens >= 20000 + long.max_batch_size


def test_tp_above_the_kv_heads_and_an_fp8_checkpoint_by_hand():
    # Qwen3-235B-A22B FP8 on 8x H200 at TP8: 4 KV heads, so the tool counts one per TP rank (8)
    from inferplan.memory.resolve import resolve_model
    from inferplan.memory.engine_budget import device_total_bytes
    from inferplan.memory.params import count_params

    p = point("s-trt-h200x8-qwen3-235b-fp8-1k1k")
    arch = resolve_model(CATALOG, "qwen3-235b-a22b").architecture
    assert arch.num_kv_heads == 4 and p.tensor_parallel_size == 8
    params = count_params(arch)
    device, _ = device_total_bytes(CATALOG, CATALOG.accelerator("h200-sxm"))
    token = 2 * arch.num_layers * 8 * arch.head_dim * 1  # FP8 KV: one byte, eight heads
    requests = (8 * device - 1.0 * params.total) * 0.9 / (token * 2000)  # FP8: one byte per stored weight
    assert trtllm_bench_limits(CATALOG, p).kv_requests == pytest.approx(requests, rel=1e-9)
    # Llama 3.1 8B FP8 on one H200 at 1000/1000: ~974 requests -> 1,024 sequences; 2,048 tokens covers 1000 + 1,024
    small = trtllm_bench_limits(CATALOG, point("s-trt-h200-llama31-8b-fp8-1k1k"))
    assert 950 < small.kv_requests < 1000 and (small.max_batch_size, small.max_num_tokens) == (1024, 2048)


def test_a_run_the_tool_would_refuse_is_reported_naming_the_field():
    from inferplan.errors import InvalidScenarioError

    base = point("s-trt-h200-llama31-8b-fp8-1k1k")
    too_big = base.model_copy(update={"model": "llama-3.1-405b", "quantization": "bf16"})  # 810 GB on one GPU
    with pytest.raises(InvalidScenarioError, match="counts the checkpoint") as err:
        trtllm_bench_limits(CATALOG, too_big)
    assert err.value.field == "batch_limits_by"
    no_room = base.model_copy(update={"input_tokens": 2_000_000})  # weights fit, one request does not
    with pytest.raises(InvalidScenarioError, match="holds 0.") as err:
        trtllm_bench_limits(CATALOG, no_room)
    assert err.value.field == "batch_limits_by"


def test_every_perf_overview_run_is_planned_with_the_tools_limits():
    tuned = [p for p in CATALOG.speed_points if p.batch_limits_by == "trtllm-bench"]
    # 58 rows of the perf overview, and the 84 blind held-out rows of its dense models' length tables
    assert len(tuned) == 142 and all(p.engine == "trtllm" and p.concurrency is None for p in tuned)
    for p in tuned:
        d, _ = point_scenario(p, CATALOG)
        limits = trtllm_bench_limits(CATALOG, p)
        assert (d.max_num_seqs, d.max_num_batched_tokens) == (limits.max_batch_size, limits.max_num_tokens), p.id
    other = point("s-mlperf41-8xh100-llama2-70b-fp8-offline-out")  # MLPerf's harness, not trtllm-bench
    assert other.batch_limits_by is None and point_scenario(other, CATALOG)[0].max_num_batched_tokens is None


def test_prompt_heavy_pipeline_rows_land_once_each_micro_batch_has_its_budget():
    # one 8,192-token budget split over 8 micro-batches would put these at -42 % and +33 %
    for point_id in ("s-trtpp-rtxpro6000x8-llama33-70b-nvfp4-2048-128-out",
                     "s-trtpp-rtxpro6000x8-llama33-70b-nvfp4-5000-500-out"):
        check = check_point(point(point_id), CATALOG)
        assert check.split == "holdout" and abs(check.error) < 0.15, (point_id, check.error)
    pp8 = [check_point(p, CATALOG) for p in CATALOG.speed_points
           if p.engine == "trtllm" and p.pipeline_parallel_size == 8]
    # 12.1 %, with the stage-boundary cost fitted on the PP 2 and PP 4 rows (33.9 us; docs/speed.md §4)
    assert len(pp8) == 16 and statistics.median(abs(c.error) for c in pp8) < 0.13


def test_a_tool_chosen_limit_beside_a_stated_one_fails_to_load(tmp_path):
    shipped = [p for p in DATA_DIR.glob("**/*.yaml")]
    doc = yaml.safe_load((DATA_DIR / "measurements" / "speed_trtllm_pipeline.yaml").read_text())
    row = dict(doc["speed_points"][0], id="s-test-bench-and-stated", max_num_seqs=256)
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump({"speed_points": [row]}))
    with pytest.raises(CatalogError, match="batch_limits_by"):
        load_files([*shipped, bad])
    on_vllm = dict(doc["speed_points"][0], id="s-test-bench-on-vllm", engine="vllm")
    bad.write_text(yaml.safe_dump({"speed_points": [on_vllm]}))
    with pytest.raises(CatalogError, match="batch_limits_by trtllm-bench is for a run of TensorRT-LLM that"):
        load_files([*shipped, bad])
    for bad_row in (dict(doc["speed_points"][0], id="s-test-bench-awq", quantization="int4-awq"),  # not tuned
                    dict(doc["speed_points"][0], id="s-test-bench-kv-auto", kv_cache_dtype="auto")):
        bad.write_text(yaml.safe_dump({"speed_points": [bad_row]}))
        with pytest.raises(CatalogError, match="batch_limits_by"):
            load_files([*shipped, bad])


def test_trtllm_bench_limits_read_the_tools_settings_from_the_catalogue():
    from dataclasses import replace

    from inferplan.catalog.registry import Registry

    tuning = CATALOG.bench_tunings.records["trtllm-bench"]
    assert tuning.kv_free_fraction.value == 0.90 and tuning.kv_free_fraction.source in CATALOG.sources
    more = tuning.model_copy(update={"kv_free_fraction": tuning.kv_free_fraction.model_copy(update={"value": 0.95})})
    catalog = replace(CATALOG, bench_tunings=Registry("bench tunings", {more.id: more}))
    p = point("s-trt-h200-llama31-8b-fp8-1k1k")
    shipped, larger = trtllm_bench_limits(CATALOG, p), trtllm_bench_limits(catalog, p)
    assert larger.kv_requests == pytest.approx(shipped.kv_requests * 0.95 / 0.90)
