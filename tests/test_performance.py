import dataclasses
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from inferplan.catalog.loader import load_catalog
from inferplan.catalog.points_schema import SpeedMetric
from inferplan.errors import InvalidScenarioError
from inferplan.inputs.deployment import Deployment
from inferplan.inputs.workload import Workload
from inferplan.performance.context import ServingContext, tokens_per_step
from inferplan.performance.phases import decode_step
from inferplan.performance.frontier import frontier
from inferplan.performance.serving import estimate, estimate_at

CATALOG = load_catalog()


def perf(workload=None, **deployment):
    return estimate(Deployment(**deployment), workload or Workload(), CATALOG)


def test_seed_rtx5090_decodes_about_4x_faster_than_dgx_spark():
    # seed 003: gpt-oss-20b MXFP4 decode, RTX 5090 205 tok/s vs DGX Spark 49.7 (4.1x); "4x faster"
    w = Workload(input_len=1, output_len=512)
    r5090 = perf(w, model="gpt-oss-20b", gpu="rtx-5090", engine="llamacpp", max_model_len=1024)
    spark = perf(w, model="gpt-oss-20b", gpu="gb10", engine="llamacpp", max_model_len=1024)
    ratio = r5090.output_tokens_per_s_per_user / spark.output_tokens_per_s_per_user
    assert ratio == pytest.approx(205 / 49.7, rel=0.25)


def test_seed_h200_pulls_ahead_of_h100_at_70b():
    # seed 003: Llama 2 70B, H200 31,712 vs H100 22,290 tok/s (~42% more), 8-GPU max throughput
    w = Workload(input_len=1024, output_len=1024, concurrency="max")
    kw = dict(model="llama-2-70b", quantization="fp8", engine="trtllm", gpus=8, tensor_parallel_size=2, max_model_len=2048)
    h100 = perf(w, gpu="h100-sxm", **kw)
    h200 = perf(w, gpu="h200-sxm", **kw)
    uplift = h200.output_tokens_per_s_total / h100.output_tokens_per_s_total
    assert uplift == pytest.approx(31712 / 22290, rel=0.3)
    assert uplift > 1.15


def test_seed_spark_runs_70b_fp8_slowly():
    # seed 003: DGX Spark fits a 70B model in FP8, 2.7 tok/s decode; the RTX 5090 cannot load it
    w = Workload(input_len=1, output_len=512)
    spark = perf(w, model="llama-3.1-70b", gpu="gb10", quantization="fp8", engine="sglang", max_model_len=2048)
    assert spark.output_tokens_per_s_per_user == pytest.approx(2.7, rel=0.3)
    with pytest.raises(InvalidScenarioError):
        perf(w, model="llama-3.1-70b", gpu="rtx-5090", quantization="fp8", engine="sglang", max_model_len=2048)


def test_speculative_tokens_per_step():
    assert tokens_per_step(0, 0.7) == 1
    assert tokens_per_step(3, 0.0) == 1
    assert tokens_per_step(3, 1.0) == 4
    assert tokens_per_step(3, 0.7) == pytest.approx(1 + 0.7 + 0.49 + 0.343)


def test_speculative_decoding_raises_per_user_speed_at_low_load():
    base = dict(model="llama-3.1-8b", gpu="H100", max_model_len=4096)
    plain = perf(Workload(input_len=512, output_len=256), **base)
    spec = perf(Workload(input_len=512, output_len=256, speculative_tokens=3, acceptance_rate=0.8), **base)
    assert spec.output_tokens_per_s_per_user > plain.output_tokens_per_s_per_user
    assert any("speculative" in a for a in spec.assumptions)


def test_prefix_cache_cuts_ttft():
    base = dict(model="qwen3-32b", gpu="H100", max_model_len=16384)
    cold = perf(Workload(input_len=8000, output_len=200), **base)
    warm = perf(Workload(input_len=8000, output_len=200, prefix_cache_hit_rate=0.9), **base)
    assert warm.ttft_s < cold.ttft_s / 3


def test_hopper_runs_nvfp4_through_a_16_bit_fallback():
    h100 = perf(model="llama-3.3-70b", gpu="H100", quantization="nvfp4", max_model_len=4096)
    b200 = perf(model="llama-3.3-70b", gpu="b200", quantization="nvfp4", max_model_len=4096)
    assert h100.compute_dtype in ("bf16", "fp16") and b200.compute_dtype == "fp4"


def test_quark_w4a4_mxfp4_runs_at_the_fp4_rate_only_where_rocm_has_mx_kernels():
    """AMD's W4A4 MXFP4 checkpoints: FP4 maths on an MI355X; 16-bit maths on an MI300X (no MX silicon:
    vLLM emulates them) and on a B200 (MX silicon, planned as vLLM's weight-only fallback: native_software rocm)."""
    dtypes = {gpu: perf(model="llama-3.3-70b", gpu=gpu, quantization="mxfp4-w4a4", max_model_len=4096).compute_dtype
              for gpu in ("mi355x", "mi300x", "b200")}
    assert dtypes == {"mi355x": "fp4", "mi300x": "bf16", "b200": "bf16"}
    w4a8 = perf(model="llama-3.3-70b", gpu="mi355x", quantization="mxfp4", max_model_len=4096).compute_dtype
    assert w4a8 == "fp8"


def test_concurrency_beyond_memory_is_an_explicit_error():
    with pytest.raises(InvalidScenarioError) as exc:
        perf(Workload(input_len=100_000, output_len=1000, concurrency=500), model="llama-3.1-8b", gpu="H100", max_model_len=101_000)
    assert exc.value.field == "concurrency"


@pytest.mark.parametrize("kwargs", [dict(input_len=0), dict(output_len=0), dict(acceptance_rate=1.5),
                                    dict(acceptance_rate=-0.1), dict(concurrency=0), dict(prefix_cache_hit_rate=2)])
def test_bad_workloads_are_rejected(kwargs):
    with pytest.raises(ValidationError):
        Workload(**kwargs)


def test_measured_profile_is_used_and_said():
    profile = CATALOG.serving_profiles.records["pf-inferencex-deepseek-r1-b200-sglang-1024-1024"]
    point = profile.points[1]
    d = Deployment(model="deepseek-r1", gpu="b200", gpus=8, tensor_parallel_size=8, engine="sglang",
                   quantization=profile.quantization, max_model_len=2048)
    r = estimate(d, Workload(input_len=1024, output_len=1024, concurrency=point.concurrency), CATALOG)
    assert r.source == "measured"
    assert r.output_tokens_per_s_per_user == pytest.approx(point.output_tokens_per_s_per_user.value)
    outside = estimate(d, Workload(input_len=1024, output_len=1024, concurrency=1), CATALOG)
    assert outside.source == "calibrated-model"
    assert any("scaled by measured/model" in a for a in outside.assumptions)


def test_frontier_trades_interactivity_for_throughput():
    f = frontier(Deployment(model="llama-3.1-8b", gpu="H100", quantization="fp8", max_model_len=2048),
                 Workload(input_len=1024, output_len=1024), CATALOG, points=12)
    users = [p.output_tokens_per_s_per_user for p in f.points]
    gpus = [p.output_tokens_per_s_per_gpu for p in f.points]
    assert users == sorted(users, reverse=True)
    assert gpus == sorted(gpus)
    assert f.points[-1].concurrency <= f.max_concurrency


common = settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
MODELS = ["llama-3.1-8b", "qwen3-32b", "gpt-oss-20b", "qwen3-30b-a3b", "mistral-small-3.2-24b", "gemma-3-27b"]
GPUS = ["h100-sxm", "h200-sxm", "b200", "rtx-pro-6000-blackwell", "mi300x"]


@common
@given(st.sampled_from(MODELS), st.sampled_from(GPUS), st.integers(64, 4096), st.integers(16, 2048), st.floats(1.05, 3.0))
def test_more_bandwidth_is_never_slower(model, gpu, i, o, factor):
    ctx = ServingContext(CATALOG, Deployment(model=model, gpu=gpu, max_model_len=i + o), Workload(input_len=i, output_len=o))
    base = estimate_at(ctx, 1)
    ctx.rates = dataclasses.replace(ctx.rates, bandwidth_bytes_per_s=ctx.rates.bandwidth_bytes_per_s * factor)
    faster = estimate_at(ctx, 1)
    assert faster.tpot_s <= base.tpot_s and faster.ttft_s <= base.ttft_s


@common
@given(st.sampled_from(MODELS), st.sampled_from(["h100-sxm", "h200-sxm", "b200", "mi300x"]), st.sampled_from(["fp8", "nvfp4", "bf16"]),
       st.integers(64, 32768), st.integers(16, 2048), st.integers(1, 32))
def test_an_fp8_kv_cache_is_never_slower_than_a_16_bit_one(model, gpu, quant, i, o, c):
    """An FP8 cache reads half the bytes and, on FP8 hardware, attends at the FP8 rate: at the same
    concurrency no figure gets worse than with a BF16 cache."""
    kw = dict(model=model, gpu=gpu, quantization=quant, max_model_len=i + o)
    w = Workload(input_len=i, output_len=o)
    try:
        bf16 = ServingContext(CATALOG, Deployment(kv_cache_dtype="bf16", **kw), w)
    except (InvalidScenarioError, ValueError):
        return  # the format or the prompt does not fit this GPU
    fp8 = ServingContext(CATALOG, Deployment(kv_cache_dtype="fp8", **kw), w)
    c = min(c, bf16.max_concurrency())
    slow, fast = estimate_at(bf16, c), estimate_at(fp8, c)
    assert fast.tpot_s <= slow.tpot_s * (1 + 1e-9) and fast.ttft_s <= slow.ttft_s * (1 + 1e-9)


@common
@given(st.sampled_from(MODELS), st.sampled_from(GPUS), st.integers(64, 4096), st.integers(16, 2048), st.data())
def test_a_larger_batch_never_lowers_aggregate_throughput_below_batch_one(model, gpu, i, o, data):
    # issue #3's invariant; strict monotonicity does not hold once prefill saturates the GPU
    # (more sequences then only add KV reads), which hypothesis found with 2437-in/16-out requests
    ctx = ServingContext(CATALOG, Deployment(model=model, gpu=gpu, max_model_len=i + o), Workload(input_len=i, output_len=o))
    top = min(ctx.max_concurrency(), ctx.max_running)
    one = estimate_at(ctx, 1)
    b = data.draw(st.integers(1, top))
    high = estimate_at(ctx, b)
    assert high.output_tokens_per_s_total >= one.output_tokens_per_s_total * 0.999
    for e in (one, high):
        assert e.tpot_s > 0 and e.ttft_s > 0 and math.isfinite(e.output_tokens_per_s_total)
        assert e.output_tokens_per_s_per_user <= 1 / e.tpot_s * 1.0001


def test_decode_step_is_memory_bound_for_a_small_batch():
    ctx = ServingContext(CATALOG, Deployment(model="llama-3.1-8b", gpu="H100", max_model_len=2048), Workload())
    step = decode_step(ctx.work, ctx.mp.layout, ctx.rates, batch=1, context=1024)
    assert step.bound == "memory"


@pytest.mark.parametrize(("gpu", "family"), [
    ("a100-80gb", "llamacpp-cuda-hbm"), ("h100-pcie", "llamacpp-cuda-hbm"),
    ("l40s", "llamacpp-cuda-dc"), ("gb10", "llamacpp-cuda-dc"),
    ("rtx-4090", "llamacpp-cuda"), ("rtx-4000-ada", "llamacpp-cuda"),
])
def test_llamacpp_cuda_family_follows_the_gpu_class(gpu, family):
    from inferplan.performance.rates import calibration_family

    assert calibration_family(CATALOG.engine("llamacpp"), None, CATALOG.accelerator(gpu)) == family


def test_llamacpp_reaches_a_smaller_share_of_hbm_bandwidth_than_of_gddr():
    from inferplan.performance.rates import rates_for

    q = CATALOG.quantization("gguf-q4_k_m")
    hbm = rates_for(CATALOG, CATALOG.accelerator("a100-80gb"), q, "llamacpp", "cuda")
    gddr = rates_for(CATALOG, CATALOG.accelerator("rtx-4090"), q, "llamacpp", "cuda")
    assert hbm.bandwidth_efficiency < gddr.bandwidth_efficiency


def test_sparse_attention_reads_only_the_selected_tokens_latent():
    """DeepSeek-V3.2 (DSA) stores every token's latent but a decode step reads the latent of at most
    index_topk tokens (plus every token's small indexer key): past 2,048 tokens its KV read grows
    far more slowly than V3's, and its attention FLOPs stop growing except for the indexer."""
    def work_and_layout(model):
        ctx = ServingContext(CATALOG, Deployment(model=model, gpu="h200-sxm", gpus=8, tensor_parallel_size=8,
                                           quantization="fp8-block", max_model_len=65536),
                       Workload(input_len=60000, output_len=1000))
        return ctx.work, ctx.mp.layout

    w32, l32 = work_and_layout("deepseek-v3.2")
    w3, l3 = work_and_layout("deepseek-v3")
    assert l32.sequence_bytes_per_gpu(60000) > l3.sequence_bytes_per_gpu(60000)  # indexer keys are stored too
    assert l32.read_bytes_per_gpu(60000) < 0.3 * l3.read_bytes_per_gpu(60000)
    assert l32.read_bytes_per_gpu(1000) == l32.sequence_bytes_per_gpu(1000)  # below top-k nothing is skipped
    # at TP 8 the MLA part is split 8 ways but the indexer is replicated on every rank (vLLM and SGLang
    # build it from ReplicatedLinear layers), so V3.2's attention work per GPU is about half of V3's
    ratio = w32.attention_flops_per_gpu(1, 60000, prefill=False) / w3.attention_flops_per_gpu(1, 60000, prefill=False)
    assert 0.3 < ratio < 0.6
    assert w32.indexer_flops_per_token_ctx > 0 and w3.indexer_flops_per_token_ctx == 0


@pytest.mark.parametrize(("engine", "gpu", "family"), [
    ("sglang", "mi300x", "sglang-rocm"), ("sglang", "mi325x", "sglang-rocm"),
    ("sglang", "mi355x", "sglang-rocm-cdna4"), ("sglang", "mi350x", "sglang-rocm-cdna4"),
    ("vllm", "mi355x", "vllm-rocm"), ("sglang", "b200", "sglang"),
    ("mlx", "apple-m1-ultra", "mlx-apple-m1"), ("mlx", "apple-m1-max", "mlx-apple-m1"),
    ("mlx", "apple-m2-ultra", "mlx"), ("mlx", "apple-m4-max", "mlx"),
])
def test_serving_engine_family_follows_the_software_stack(engine, gpu, family):
    from inferplan.performance.rates import calibration_family

    assert calibration_family(CATALOG.engine(engine), None, CATALOG.accelerator(gpu)) == family


def test_engine_given_by_name_is_calibrated_as_its_id():
    by_name = perf(model="llama-3.1-8b", gpu="H100", engine="SGLang", quantization="fp8")
    by_id = perf(model="llama-3.1-8b", gpu="H100", engine="sglang", quantization="fp8")
    assert by_name.engine == "sglang" and by_name.tpot_s == by_id.tpot_s


def test_window_and_top_k_caps_apply_per_position_not_to_the_mean():
    from inferplan.performance.work import capped_mean

    assert capped_mean(1000, 0, 2048) == 1000 and capped_mean(5000, 0, 2048) == 2048
    assert capped_mean(1000, 1000, 4096) == pytest.approx(1000)  # all positions below the cap
    # a 4,096-token prompt with a 2,048-token cap: half the positions see their own length, half the cap
    assert capped_mean(2048, 2048, 2048) == pytest.approx(1536)


def test_moe_layers_pay_their_routing_overhead_and_dense_layers_do_not():
    from inferplan.performance.phases import overhead_s

    moe = ServingContext(CATALOG, Deployment(model="qwen3-30b-a3b", gpu="apple-m4-max", engine="mlx", quantization="mlx-4bit",
                                       max_model_len=1024), Workload(input_len=1, output_len=128))
    dense = ServingContext(CATALOG, Deployment(model="qwen3-8b", gpu="apple-m4-max", engine="mlx", quantization="mlx-4bit",
                                         max_model_len=1024), Workload(input_len=1, output_len=128))
    assert moe.work.moe_layers == moe.work.num_layers == 48 and dense.work.moe_layers == 0
    assert moe.rates.moe_layer_overhead_s > 0
    without = dataclasses.replace(moe.rates, moe_layer_overhead_s=0.0)
    extra = overhead_s(moe.work, moe.rates) - overhead_s(moe.work, without)
    assert extra == pytest.approx(48 * moe.rates.moe_layer_overhead_s)
    assert overhead_s(dense.work, dense.rates) == overhead_s(dense.work, dataclasses.replace(dense.rates, moe_layer_overhead_s=1.0))


def test_tensor_parallelism_across_nodes_pays_the_scale_out_network():
    w = Workload(input_len=128, output_len=128, concurrency=1)
    common = dict(model="deepseek-r1", engine="sglang", quantization="fp8-block", max_model_len=1024)
    two_nodes = ServingContext(CATALOG, Deployment(gpu="h100-sxm", gpus=16, tensor_parallel_size=16, **common), w)
    assert two_nodes.rates.domain_gpus == 8 and two_nodes.rates.scale_out_bytes_per_s == 400e9 / 8
    one_domain = dataclasses.replace(two_nodes.rates, domain_gpus=16)
    across = decode_step(two_nodes.work, two_nodes.mp.layout, two_nodes.rates, batch=1, context=192)
    inside = decode_step(two_nodes.work, two_nodes.mp.layout, one_domain, batch=1, context=192)
    # 2 all-reduces per layer, each paying the measured scale-out latency instead of the NVLink one
    extra = 2 * 61 * (CATALOG.constant("allreduce-latency-s-scale-out") - CATALOG.constant("allreduce-latency-s-nvlink"))
    assert across.comm_s - inside.comm_s == pytest.approx(extra, rel=0.05)
    notes = estimate_at(two_nodes, 1).assumptions
    assert any("tensor parallelism over 16 GPUs: more than one 8-GPU scale-up domain" in a and "ConnectX-7" in a for a in notes)
    one_node = perf(w, gpu="h200-sxm", gpus=8, tensor_parallel_size=8, **common)
    assert not any("scale-up domain" in a for a in one_node.assumptions)


def test_tensor_parallelism_across_nodes_without_a_known_network_is_refused():
    # MI300X servers: 8 GPUs on Infinity Fabric, no scale-out network in the catalogue
    with pytest.raises(InvalidScenarioError) as err:
        perf(Workload(input_len=128, output_len=128, concurrency=1), model="deepseek-r1", gpu="mi300x", gpus=16,
             tensor_parallel_size=16, engine="sglang", quantization="fp8-block", max_model_len=1024)
    assert err.value.field == "tensor_parallel_size" and err.value.allowed.startswith("1..8")
    assert "no network between them" in str(err.value) and "pipeline" in err.value.allowed


def test_a_pcie_server_prices_tensor_parallelism_over_pcie_inside_the_box():
    # the 8-GPU RTX PRO 6000 server has no fast link: its GPUs reach each other over PCIe, so TP 8 stays
    # inside the box (no scale-out note) and pays the PCIe all-reduce latency, which grows with the ring
    w = Workload(input_len=128, output_len=128, concurrency=1)
    ctx = ServingContext(CATALOG, Deployment(model="llama-3.3-70b", system="rtx-pro-6000-server-8x", tensor_parallel_size=8,
                                       engine="vllm", quantization="fp8", max_model_len=1024), w)
    assert ctx.rates.domain_gpus == 8 and ctx.rates.link_latency_per_step_s == CATALOG.constant("allreduce-latency-s-pcie-per-step")
    from inferplan.performance.phases import local_latency_s
    # a ring over 8 GPUs takes 14 steps: ~50 us, against the 40-57 us measured on 8-GPU PCIe boxes
    assert 40e-6 < local_latency_s(ctx.rates, 8) < 57e-6 and local_latency_s(ctx.rates, 8) > 3 * local_latency_s(ctx.rates, 2)
    assert not any("scale-up domain" in a for a in estimate_at(ctx, 1).assumptions)


def test_an_oem_server_without_a_stated_network_takes_the_accelerators_usual_one_and_says_so():
    ctx = ServingContext(CATALOG, Deployment(model="deepseek-r1", system="dell-xe9680l", tensor_parallel_size=8, engine="sglang",
                                       quantization="fp8-block", max_model_len=1024), Workload(input_len=128, output_len=128, concurrency=1))
    assert ctx.mp.hardware.scale_out == CATALOG.accelerators.records["b200"].scale_out
    assert not ctx.network_notes  # TP 8 stays inside the 8-GPU NVLink domain


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scale_out_gbit=st.floats(min_value=50, max_value=3200), faster=st.floats(min_value=1.0, max_value=8.0))
def test_a_faster_scale_out_network_is_never_slower(scale_out_gbit, faster):
    ctx = ServingContext(CATALOG, Deployment(model="deepseek-r1", gpu="h100-sxm", gpus=16, tensor_parallel_size=16,
                                       engine="sglang", quantization="fp8-block", max_model_len=4096),
                   Workload(input_len=2048, output_len=128, concurrency=1))
    slow = dataclasses.replace(ctx.rates, scale_out_bytes_per_s=scale_out_gbit * 1e9 / 8)
    fast = dataclasses.replace(slow, scale_out_bytes_per_s=slow.scale_out_bytes_per_s * faster)
    for tokens in (1.0, 2048.0):
        a = decode_step(ctx.work, ctx.mp.layout, slow, batch=1, context=2048, prefill_tokens=tokens)
        b = decode_step(ctx.work, ctx.mp.layout, fast, batch=1, context=2048, prefill_tokens=tokens)
        assert b.seconds <= a.seconds + 1e-12
        assert math.isfinite(a.seconds)

def test_pipeline_stages_on_two_nodes_hand_over_across_the_scale_out_network():
    from inferplan.performance.phases import stage_hop_s

    ctx = ServingContext(CATALOG, Deployment(model="llama-3.1-405b", gpu="h100-sxm", gpus=16, tensor_parallel_size=8,
                                       pipeline_parallel_size=2, quantization="fp8", max_model_len=4096),
                   Workload(input_len=2048, output_len=128, concurrency=1))
    inside = dataclasses.replace(ctx.rates, domain_gpus=16)
    # one of the two hops (the wrap back included) leaves the node; the 8 TP ranks each send their slice
    assert stage_hop_s(ctx.work, ctx.rates, 1.0) > stage_hop_s(ctx.work, inside, 1.0) > 0
    assert any("pipeline stages: more than one 8-GPU scale-up domain" in a for a in estimate_at(ctx, 1).assumptions)


def test_two_systems_are_joined_by_their_network_and_a_partial_second_one_is_refused():
    w = Workload(input_len=128, output_len=128, concurrency=1)
    common = dict(model="deepseek-r1", engine="sglang", quantization="fp8-block", max_model_len=1024, tensor_parallel_size=16)
    two = perf(w, system="hgx-h100", gpus=16, **common)
    bare = perf(w, gpu="h100-sxm", gpus=16, **common)
    assert two.gpus == 16 and two.tpot_s == pytest.approx(bare.tpot_s)
    assert any(a.startswith("2× NVIDIA HGX/DGX H100") and "infiniband-ndr" in a for a in two.assumptions)
    with pytest.raises(InvalidScenarioError) as err:
        perf(w, system="hgx-h100", gpus=12, **{**common, "tensor_parallel_size": 4})
    assert err.value.field == "gpus" and "multiple of 8" in err.value.allowed


def test_expert_parallel_ranks_share_their_experts_and_dispatch_only_their_own_tokens():
    from inferplan.performance.phases import all_to_all_s, local_latency_s

    ctx = ServingContext(CATALOG, Deployment(model="deepseek-r1", gpu="h200-sxm", gpus=8, data_parallel_size=8,
                                       enable_expert_parallel=True, quantization="fp8-block", engine="sglang",
                                       max_model_len=2048), Workload(input_len=1024, output_len=1024, concurrency=8))
    work = ctx.work
    assert work.tp == 1 and work.expert_parallel == 8
    k, e = work.experts_per_token, work.num_experts
    # one token on each of the 8 ranks: a GPU's 32 experts are hit by all 8 ranks' tokens
    expected = work.dense_bytes_per_gpu + work.expert_bytes_per_gpu * (1 - (1 - k / e) ** 8)
    assert work.weights_read_per_gpu(1) == pytest.approx(expected)
    leaving = 1 * k * work.hidden_size * 2 * 7 / 8  # 16-bit hidden states
    per_layer = 2 * (local_latency_s(ctx.rates, 8) + leaving / ctx.rates.link_bytes_per_s)
    assert all_to_all_s(work, ctx.rates, 1) == pytest.approx(work.moe_layers * per_layer)


@pytest.mark.parametrize("gpu, gpus", [("h100-pcie", 4), ("h200-nvl", 8), ("rtx-pro-6000-blackwell", 8), ("rtx-3090", 4)])
def test_pcie_cards_past_their_bridge_share_the_servers_pcie(gpu, gpus):
    w = Workload(input_len=512, output_len=128, concurrency=1)
    e = perf(w, model="llama-3.1-8b", gpu=gpu, gpus=gpus, tensor_parallel_size=gpus, max_model_len=1024)
    assert math.isfinite(e.tpot_s) and any("share PCIe in one server" in a for a in e.assumptions)
    with pytest.raises(InvalidScenarioError) as err:  # past one server, no network is known for them
        perf(w, model="llama-3.1-8b", gpu=gpu, gpus=16, tensor_parallel_size=16, max_model_len=1024)
    assert err.value.field == "tensor_parallel_size" and err.value.allowed.startswith("1..8")


def test_pcie_server_system_and_bare_cards_agree():
    w = Workload(input_len=512, output_len=128, concurrency=1)
    system = perf(w, model="llama-3.3-70b", system="rtx-pro-6000-server-8x", tensor_parallel_size=8, quantization="fp8", max_model_len=1024)
    bare = perf(w, model="llama-3.3-70b", gpu="rtx-pro-6000-blackwell", gpus=8, tensor_parallel_size=8, quantization="fp8", max_model_len=1024)
    assert system.tpot_s == pytest.approx(bare.tpot_s)


@pytest.mark.parametrize("gpu, engine, quant", [("apple-m2-ultra", "llamacpp", "gguf-q4_k_m"), ("ryzen-ai-max-395", "llamacpp", "gguf-q4_k_m")])
def test_pipeline_stages_on_devices_without_a_link_cost_their_latency_and_stay_finite(gpu, engine, quant):
    w = Workload(input_len=512, output_len=128, concurrency=1)
    e = perf(w, model="llama-3.1-8b", gpu=gpu, gpus=2, pipeline_parallel_size=2, engine=engine, quantization=quant, max_model_len=1024)
    assert math.isfinite(e.tpot_s) and math.isfinite(e.ttft_s)
    assert any("each hop costs its latency only" in a for a in e.assumptions)


def test_expert_parallelism_across_nodes_costs_more_than_inside_one_and_is_refused_without_a_network():
    from inferplan.performance.phases import all_to_all_s

    w = Workload(input_len=1024, output_len=1024, concurrency=16)
    common = dict(model="deepseek-r1", data_parallel_size=16, enable_expert_parallel=True, quantization="fp8-block",
                  engine="sglang", max_model_len=2048)
    ctx = ServingContext(CATALOG, Deployment(gpu="h200-sxm", gpus=16, **common), w)
    one_domain = dataclasses.replace(ctx.rates, domain_gpus=16)
    assert all_to_all_s(ctx.work, ctx.rates, 1) > all_to_all_s(ctx.work, one_domain, 1) > 0
    from inferplan.performance.network import network_notes

    unknown = dataclasses.replace(ctx.mp, hardware=dataclasses.replace(ctx.mp.hardware, scale_out=None))
    with pytest.raises(InvalidScenarioError) as err:
        network_notes(unknown, ctx.work, dataclasses.replace(ctx.rates, scale_out_bytes_per_s=0.0))
    assert err.value.field == "data_parallel_size" and "TP x DP <= 8" in err.value.allowed


def test_draft_tokens_cost_one_layer_and_the_lm_head():
    ctx = ServingContext(CATALOG, Deployment(model="llama-3.1-8b", gpu="h100-sxm", max_model_len=1024), Workload(input_len=64, output_len=64))
    work = ctx.work
    assert work.draft_cost_ratio == pytest.approx(1 / 32 + work.lm_head_params / work.active_params)
    assert 0.08 < work.draft_cost_ratio < 0.12  # 1/32 of the body plus a 0.5B-parameter head of 8B


def test_assumptions_state_the_whole_fixed_cost_of_a_decode_step():
    # the per-step constant alone is ~0 for several families; the per-layer parts are what a small
    # model on a fast GPU pays, so the estimate must name their sum for this deployment
    from inferplan.performance.phases import overhead_s

    d = Deployment(model="gpt-oss-20b", gpu="h100-sxm", quantization="mxfp4")
    ctx = ServingContext(CATALOG, d, Workload(input_len=128, output_len=256))
    line = next(a for a in estimate_at(ctx, 4).assumptions if a.startswith("rates:"))
    assert f"fixed costs {overhead_s(ctx.work, ctx.rates, 4) * 1e3:.2f} ms per decode step" in line
    assert "× 24 layers" in line and "× 24 MoE layers" in line and "× 4 running sequences" in line


def test_a_step_dominated_by_fixed_costs_says_so_and_pipeline_stages_list_their_share_of_layers():
    # gpt-oss-20b at batch 1 on a B200 moves ~4 GB in ~0.5 ms; its fixed costs are several times that
    est = estimate(Deployment(model="gpt-oss-20b", gpu="b200", quantization="mxfp4"), Workload(input_len=128, output_len=128), CATALOG)
    assert est.bound == "overhead"
    assert any(a.startswith("fixed costs dominate this step") for a in est.assumptions)  # with how far builds spread
    big = estimate(Deployment(model="llama-3.1-70b", gpu="h100-sxm", quantization="bf16", tensor_parallel_size=4, max_model_len=4096),
                   Workload(input_len=128, output_len=128), CATALOG)
    assert big.bound == "memory"
    assert not any(a.startswith("fixed costs dominate this step") for a in big.assumptions)
    staged = ServingContext(CATALOG, Deployment(model="deepseek-r1", system="hgx-h100", gpus=16, quantization="fp8-block",
                                           tensor_parallel_size=8, pipeline_parallel_size=2), Workload(input_len=128, output_len=128))
    line = next(a for a in estimate_at(staged, 1).assumptions if a.startswith("rates:"))
    assert "× 30.5 layers" in line  # 61 layers over 2 stages, as the overhead counts them


def test_k_quant_unpacking_costs_apple_m1_what_its_bandwidth_does_not_explain():
    # XiongjieDai's May 2024 llama-bench table (one harness, one build): Llama-3-70B Q4_K_M decodes at
    # 4.34 tok/s on an M1 Max and 7.65 on an M3 Max, both 400 GB/s parts; the M1 Max has 26 FLOP/s per
    # byte of bandwidth against the M3 Max's 41, and K-quant unpacking is ALU work per weight
    points = {p.id: p for p in CATALOG.speed_points}
    m1, m3 = (points[f"s-lcpp-metal-{chip}-llama3-70b-q4km-tg-xd24"] for chip in ("m1max", "m3max"))
    assert m1.measured.value / m3.measured.value == pytest.approx(0.57, abs=0.01)
    w = Workload(input_len=512, output_len=128)

    def rate(gpu, quantization):
        return perf(w, model="llama-3.1-70b", gpu=gpu, engine="llamacpp", quantization=quantization,
                    max_model_len=1024).output_tokens_per_s_per_user

    predicted = rate("apple-m1-max", "gguf-q4_k_m") / rate("apple-m3-max", "gguf-q4_k_m")
    # bandwidth alone: ~1.0. With memory and compute time combined as a power mean the fitted unpacking
    # cost is about half what the plain roofline needs (which gives 0.66), and the model gives 0.85: it keeps
    # the direction and a third of the measured gap (docs/speed.md §1)
    assert 0.75 < predicted < 0.9
    # Q4_0 (one scale per 32 weights, no super-blocks) pays no unpacking term; F16 neither
    ctx = ServingContext(CATALOG, Deployment(model="llama-3.1-8b", gpu="apple-m1-max", engine="llamacpp", quantization="gguf-q4_k_m",
                                       max_model_len=1024), w)
    assert ctx.work.unpacked_weights_per_byte == pytest.approx(8 / 4.8944)
    assert ctx.rates.unpack_flops_per_weight > 0
    est = estimate_at(ctx, 1)
    assert any("unpacks super-block scales" in a for a in est.assumptions)
    for quantization in ("gguf-q4_0", "fp16"):
        plain = ServingContext(CATALOG, Deployment(model="llama-3.1-8b", gpu="apple-m1-max", engine="llamacpp",
                                             quantization=quantization, max_model_len=1024), w)
        assert plain.work.unpacked_weights_per_byte == 0 and plain.rates.unpack_flops_per_weight == 0
        assert not any("unpacks super-block scales" in a for a in estimate_at(plain, 1).assumptions)


def test_attention_runs_in_the_kv_caches_dtype_not_the_weights():
    """An NVFP4 checkpoint's GEMMs run at Blackwell's FP4 rate, but QK^T and PV run in 16 bits on a
    16-bit cache and in FP8 on an FP8 one: a 32k-token prompt, where attention is most of the work,
    takes longer than it would if attention ran at the FP4 rate, and longer on a BF16 cache than on FP8."""
    w = Workload(input_len=32768, output_len=16)
    ttft = {}
    for kv in ("bf16", "fp8"):
        ctx = ServingContext(CATALOG, Deployment(model="llama-3.3-70b", gpu="b200", quantization="nvfp4", engine="trtllm",
                                           kv_cache_dtype=kv, max_model_len=40000), w)
        assert ctx.rates.compute_dtype == "fp4"
        assert ctx.rates.attention_dtype == kv
        at_fp4 = dataclasses.replace(ctx.rates, attention_peak_flop_per_s=ctx.rates.peak_flop_per_s)
        first = estimate_at(ctx, 1).ttft_s
        ctx.rates = at_fp4
        assert estimate_at(ctx, 1).ttft_s < first
        ttft[kv] = first
    assert ttft["bf16"] > ttft["fp8"]


def test_an_estimate_quotes_its_familys_track_record():
    """Every calibrated estimate says how far its engine family's predictions have missed measured
    points of the figures it gives, or that it has none to show."""
    single = perf(Workload(input_len=1024, output_len=256), model="gpt-oss-120b", gpu="b200", gpus=8,
                  tensor_parallel_size=8, engine="sglang", quantization="mxfp4")
    assert [r.kind for r in single.validated if r.model is None] == ["decode", "prefill"]
    decode = single.validated[0]
    assert decode.family == "sglang" and decode.points >= 10 and decode.beyond_30_percent >= 1
    assert any(a.startswith("track record, sglang single-stream decode") and f"{decode.points} measured points" in a
               for a in single.assumptions)
    loaded = perf(Workload(input_len=1024, output_len=256, concurrency=64), model="gpt-oss-120b", gpu="b200", gpus=8,
                  tensor_parallel_size=8, engine="sglang", quantization="mxfp4")
    assert [r.kind for r in loaded.validated if r.model is None] == ["decode-concurrent", "throughput", "prefill"]
    unvalidated = perf(model="llama-3.1-8b", gpu="gaudi3", engine="vllm")
    assert unvalidated.validated == ()
    assert any("so this figure is not validated" in a for a in unvalidated.assumptions)


def test_a_measured_estimate_quotes_no_model_track_record():
    from inferplan.performance.profiles import find_profile

    profile = next(iter(CATALOG.serving_profiles))
    w = Workload(input_len=profile.input_tokens, output_len=profile.output_tokens,
                 concurrency=sorted(p.concurrency for p in profile.points)[1])
    d = Deployment(model=profile.model, gpu=profile.accelerator, gpus=profile.gpus, tensor_parallel_size=min(profile.gpus, 8),
                   engine=profile.engine, quantization=profile.quantization,
                   max_model_len=profile.input_tokens + profile.output_tokens)
    assert find_profile(ServingContext(CATALOG, d, w))[0] is not None
    measured = estimate(d, w, CATALOG)
    assert measured.source == "measured" and measured.validated == ()
    assert not any(a.startswith("track record") for a in measured.assumptions)
    assert estimate(d, w, CATALOG, use_profiles=False).validated


def test_a_back_end_must_be_llama_cpps_and_run_on_the_accelerator():
    with pytest.raises(InvalidScenarioError) as metal_on_nvidia:
        perf(Workload(backend="metal"), model="llama-3.1-8b", gpu="h100-sxm", engine="llamacpp", quantization="gguf-q4_k_m")
    assert metal_on_nvidia.value.field == "backend" and "cuda | vulkan" in metal_on_nvidia.value.describe()
    with pytest.raises(InvalidScenarioError) as not_llamacpp:
        perf(Workload(backend="cuda"), model="llama-3.1-8b", gpu="h100-sxm", engine="vllm")
    assert not_llamacpp.value.field == "backend"
    with pytest.raises(InvalidScenarioError) as unknown:  # the back ends are engines.yaml's, not a list in code
        perf(Workload(backend="opencl"), model="llama-3.1-8b", gpu="h100-sxm", engine="llamacpp", quantization="gguf-q4_k_m")
    assert unknown.value.field == "backend" and unknown.value.allowed == "cuda | vulkan"
    assert "llama.cpp has no opencl back end" in str(unknown.value)
    with pytest.raises(ValidationError):
        Workload(backend="Open CL")
    vulkan = perf(Workload(backend="vulkan"), model="llama-3.1-8b", gpu="h100-sxm", engine="llamacpp", quantization="gguf-q4_k_m")
    assert vulkan.validated[0].family == "llamacpp-vulkan"


def test_published_points_of_the_same_deployment_are_quoted_beside_the_estimate():
    """Three SGLang sources measured gpt-oss-120b MXFP4 on 8× B200 at concurrency 1 at 2.3-2.4 ms per
    token, where the model says 3.65: a user asking about that cell sees them, nearest workload first."""
    d = Deployment(model="gpt-oss-120b", gpu="b200", gpus=8, tensor_parallel_size=8, engine="sglang", quantization="mxfp4",
                   max_model_len=2048)
    est = estimate(d, Workload(input_len=1024, output_len=1024), CATALOG)
    quoted = {q.point: q for q in est.measured_points}
    assert {"s-sglang-b200x8-gptoss120b-mxfp4-tpot-c1-gist", "s-hb-sglang-b200x8-gpt-oss-120b-mxfp4-tpot-cookbook"} <= set(quoted)
    assert est.measured_points[0].point == "s-sglang-b200x8-gptoss120b-mxfp4-tpot-c1-gist"  # its 1024/1024 matches
    gist = quoted["s-sglang-b200x8-gptoss120b-mxfp4-tpot-c1-gist"]
    assert gist.measured == pytest.approx(0.00241) and gist.estimate == pytest.approx(est.tpot_s)
    note = next(a for a in est.assumptions if a.startswith("measured on this deployment: tpot_s 2.41 ms"))
    assert note.endswith(f"({(est.tpot_s - 0.00241) / 0.00241:+.0%})")  # its own workload: the model's error on it
    # a point at another workload is quoted without a percentage that would read as the model's error
    other = next(a for a in est.assumptions if "s-hb-sglang-b200x8-gpt-oss-120b-mxfp4-tpot-cookbook" in a)
    assert "another workload" in other and "%)" not in other
    # another concurrency, TP size or the model alone (as validation scores it) quotes none of them
    assert not estimate(d, Workload(input_len=1024, output_len=1024, concurrency=4), CATALOG).measured_points
    tp4 = estimate(d.model_copy(update={"gpus": 4, "tensor_parallel_size": 4}), Workload(), CATALOG).measured_points
    assert tp4 and all(CATALOG.speed_points.records[q.point].tensor_parallel_size == 4 for q in tp4)
    assert not estimate(d, Workload(input_len=1024, output_len=1024), CATALOG, use_profiles=False).measured_points


def test_contradictory_deployments_are_refused_not_planned():
    cases = [
        (dict(model="llama-3.1-8b", gpu="mi300x", engine="trtllm"), Workload(), "engine"),  # TensorRT-LLM: CUDA only
        (dict(model="llama-3.1-8b", gpu="h100-sxm", enable_expert_parallel=True), Workload(), "enable_expert_parallel"),
        (dict(model="llama-3.1-8b", gpu="h100-sxm", max_model_len=100), Workload(), "max_model_len"),
    ]
    for deployment, workload, field in cases:
        with pytest.raises(InvalidScenarioError) as err:
            perf(workload, **deployment)
        assert err.value.field == field, deployment
    with pytest.raises(ValidationError):  # an acceptance rate without draft tokens would be silently unused
        Workload(acceptance_rate=0.9)
    assert perf(Workload(speculative_tokens=2, acceptance_rate=0.9), model="llama-3.1-8b", gpu="h100-sxm").tokens_per_step > 2


def test_a_lone_long_prompt_is_prefilled_in_chunks_of_the_batch_budget():
    """Chunked prefill: a 16k-token prompt with a 1,024-token budget takes 16 prefill steps, each
    paying the step's fixed costs and re-reading the weights, so its TTFT is longer than in one step."""
    from inferplan.performance.serving import prompt_chunks

    assert prompt_chunks(5000, 0, 2048) == [(0, 2048), (2048, 2048), (4096, 904)]
    assert prompt_chunks(100, 900, 2048) == [(900, 100)]  # only the uncached part, after the cached one
    w = Workload(input_len=16384, output_len=16)
    kw = dict(model="llama-3.1-8b", gpu="h100-sxm", max_model_len=16400)
    small = perf(w, max_num_batched_tokens=1024, **kw)
    large = perf(w, max_num_batched_tokens=16400, **kw)
    assert small.ttft_s > large.ttft_s * 1.02


def test_compressed_and_block_sparse_attention_flops(catalog):
    """DeepSeek-V4-Flash: every layer attends its 128-token window; CSA layers the top-k of entries
    pooled per 4 tokens (their indexer scores all of them), HCA layers every entry pooled per 128.
    MiniMax-M3: sparse layers attend the selected blocks, their indexer scores every token."""
    from inferplan.memory.resolve import resolve_model
    from inferplan.performance.work import _attention_coefficients

    v4 = resolve_model(catalog, "deepseek-v4-flash").architecture
    per_entry = 4 * 64 * 512
    c = _attention_coefficients(v4)
    assert c.window == 43 * per_entry
    assert c.decode_sparse == c.prefill_sparse == 21 * per_entry / 4
    assert c.decode_full == c.prefill_full == 20 * per_entry / 128
    assert c.indexer == 21 * 2 * 64 * 128 / 4
    m3 = _attention_coefficients(resolve_model(catalog, "minimax-m3").architecture)
    assert m3.decode_full == 3 * 4 * 64 * 128 and m3.decode_sparse == 57 * 4 * 64 * 128
    assert m3.indexer == 57 * 2 * 4 * 128 and m3.window == 0


def test_ttft_carries_the_per_request_cost_and_prompt_throughput_does_not(catalog):
    """The fitted per-request cost adds to TTFT (and to a closed loop's cycle), not to prompt tokens/s."""
    from inferplan.catalog.points_schema import SpeedMetric
    from inferplan.performance.measured import metric_value

    d = Deployment(model="llama-3.1-8b", gpu="H100", engine="sglang")
    w = Workload(input_len=2048, output_len=32, concurrency=1)
    ctx = ServingContext(catalog, d, w)
    overhead = ctx.rates.request_overhead_s
    with_cost = estimate_at(ctx, 1)
    ctx.rates = dataclasses.replace(ctx.rates, request_overhead_s=0.0)
    without = estimate_at(ctx, 1)
    assert overhead > 0.01 and with_cost.ttft_s == pytest.approx(without.ttft_s + overhead)
    assert with_cost.prefill_s == pytest.approx(without.prefill_s) == pytest.approx(without.ttft_s)
    assert (metric_value(SpeedMetric.PREFILL_TOKENS_PER_S, with_cost, 2048)
            == pytest.approx(metric_value(SpeedMetric.PREFILL_TOKENS_PER_S, without, 2048)))
    loop = 32 / with_cost.output_tokens_per_s_total  # one user: each request's prompt, decode and the cost
    assert loop == pytest.approx(32 / without.output_tokens_per_s_total + overhead)
    est = estimate(d, w, catalog)
    assert any(f"TTFT includes {overhead * 1e3:.0f} ms per request" in a for a in est.assumptions)
    llama = estimate(Deployment(model="llama-3.1-8b", gpu="rtx-4090", engine="llamacpp", quantization="gguf-q4_k_m"), w,
                     catalog)
    assert any("the pooled value, which no TTFT point of this family checks" in a for a in llama.assumptions)


def test_a_full_pipeline_runs_at_its_last_stage_which_carries_the_lm_head():
    # Llama 3.3 70B NVFP4 at PP 8: the last stage reads its 10 layers and the whole BF16 lm_head,
    # where an average stage reads an eighth of it
    d = Deployment(model="llama-3.3-70b", gpu="rtx-pro-6000-blackwell", gpus=8, pipeline_parallel_size=8,
                   quantization="nvfp4", engine="trtllm", max_model_len=2048)
    ctx = ServingContext(CATALOG, d, Workload(input_len=1000, output_len=1000, concurrency="max"))
    last = ctx.work.last_stage()
    assert last.dense_bytes_per_gpu - ctx.work.dense_bytes_per_gpu == pytest.approx(128256 * 8192 * 2 * 7 / 8, rel=1e-6)
    assert last.linear_flops_per_gpu(1, 1) - ctx.work.linear_flops_per_gpu(1, 1) == pytest.approx(
        2 * 128256 * 8192 * 7 / 8, rel=1e-6)
    step, full = ctx.iteration(64, 0.0)
    shape = dict(batch=8, context=1500, tokens_per_seq=1, prefill_tokens=0.0)
    assert full == pytest.approx(8 * decode_step(last, ctx.mp.layout, ctx.rates, **shape).seconds)
    assert full > 1.05 * 8 * step.seconds
    # a lone sequence is one micro-batch: it passes the stages one after another, crossing the seven
    # boundaries between them with its one request (TensorRT-LLM's fitted host cost, docs/speed.md §2)
    lone, lone_round = ctx.iteration(1, 0.0)
    assert lone_round == pytest.approx(8 * lone.seconds + 7 * ctx.rates.pipeline_hop_s_per_request)
    single = ServingContext(CATALOG, Deployment(model="llama-3.3-70b", gpu="rtx-pro-6000-blackwell", quantization="nvfp4",
                                          engine="trtllm", max_model_len=2048), Workload()).work
    assert single.last_stage() is single  # one stage: it is the whole model


def test_an_estimate_quotes_its_own_models_record_and_which_way_it_leans():
    # DeepSeek-V4-Pro on SGLang: every measured source (cookbook, LMSYS, InferenceX) runs slower
    # than the model predicts, so a V4-Pro estimate says so; a model with fewer than 3 points of
    # its family says nothing of its own
    v4 = perf(Workload(input_len=1024, output_len=1024), model="deepseek-v4-pro", gpu="b200", gpus=8,
              tensor_parallel_size=8, engine="sglang", quantization="mixed-fp4-fp8")
    own = [r for r in v4.validated if r.model == "deepseek-v4-pro"]
    assert own and own[0].kind == "decode" and own[0].points >= 3 and own[0].median_speed_bias > 0.10
    note = next(a for a in v4.assumptions if a.startswith("track record on deepseek-v4-pro itself, sglang single-stream"))
    assert "predicts it faster than measured" in note
    lone = perf(Workload(input_len=1024, output_len=256), model="mistral-small-3.2-24b", gpu="h100-sxm", engine="sglang")
    assert all(r.model is None for r in lone.validated)


@pytest.mark.parametrize("metric", [*(m.value for m in SpeedMetric), "output_tokens_per_s_per_user",
                                    "output_tokens_per_s_per_gpu"])
def test_the_speed_bias_reads_times_and_rates_the_same_way(metric):
    # a prediction 25 % faster than measured leans +25 % whether the metric is a time or a rate
    from inferplan.validation.speed import SpeedCheck

    base = dict(id="x", kind="decode", split="fit", measured=1.0, bound=None, note=None, metric=metric)
    faster = SpeedCheck(**base, predicted=0.8, error=-0.2) if metric in ("tpot_s", "ttft_s") else \
        SpeedCheck(**base, predicted=1.25, error=0.25)
    assert faster.speed_bias == pytest.approx(0.25)


def test_draft_tokens_cost_a_share_of_the_whole_model_under_pipeline_parallelism():
    # an MTP head is one decoder layer and the lm_head of the whole model; with two stages a stage's
    # step is half the model's, so the draft's share is of both stages' time
    # (an EAGLE-3 head, named: with no method named vLLM drafts this model by ngram, which costs no GPU time)
    w = Workload(input_len=1024, output_len=256, speculative_tokens=2, acceptance_rate=0.7)
    head = {"speculative_method": "eagle3"}
    one = ServingContext(CATALOG, Deployment(model="llama-3.3-70b", gpu="h100-sxm", gpus=2, tensor_parallel_size=2,
                                       quantization="fp8", max_model_len=2048, **head), w)
    two = ServingContext(CATALOG, Deployment(model="llama-3.3-70b", gpu="h100-sxm", gpus=2, pipeline_parallel_size=2,
                                       quantization="fp8", max_model_len=2048, **head), w)
    for ctx in (one, two):
        step, whole = ctx.iteration(1, 0.0)  # a lone sequence's round: every stage once
        assert ctx.draft_s(step) == pytest.approx(2 * ctx.work.draft_cost_ratio * whole)
    # with a full pipeline each of its micro-batches drafts on the last stage in every round
    step8, _ = two.iteration(8, 0.0)
    assert two.draft_s(step8, 8) == pytest.approx(2 * two.draft_s(step8, 1))
    assert one.draft_s(step8, 8) == pytest.approx(one.draft_s(step8, 1))
    lone = estimate_at(two, 1)
    assert any("every micro-batch drafts on the last stage" in a for a in lone.assumptions)


def test_an_average_stage_reads_the_engine_extras_of_its_own_experts():
    # vLLM's MXFP4 path on Hopper keeps extra expert scales: the average stage of gpt-oss-120b over
    # five stages (7/7/7/8/7 layers) holds an average stage's experts' worth, not the fullest's
    from inferplan.memory.moe_layout import extra_weight_bytes
    from inferplan.memory.fit import plan_memory
    from inferplan.performance.work import model_work

    mp = plan_memory(Deployment(model="gpt-oss-120b", gpu="h100-sxm", gpus=5, pipeline_parallel_size=5, engine="vllm",
                                quantization="mxfp4", max_model_len=4096), CATALOG)
    work = model_work(mp, CATALOG)
    stages = mp.stage_weights
    mean = lambda f: sum(f(s) for s in stages) / 5  # noqa: E731
    extra, _ = extra_weight_bytes(CATALOG, "vllm", "mxfp4", mp.accelerator, mean(lambda s: s.expert_bytes_per_gpu))
    assert extra > 0
    expected = mean(lambda s: s.bytes_per_gpu - s.expert_bytes_per_gpu - s.lookup_bytes_per_gpu) + extra
    assert work.dense_bytes_per_gpu == pytest.approx(expected, rel=1e-9)


@pytest.mark.parametrize("model, tied", [("qwen3-0.6b", True), ("llama-3.1-8b", False)])
def test_a_tied_embedding_table_is_multiplied_as_the_lm_head_every_step(model, tied):
    # Qwen3-0.6B ties its output projection to the 151,936 x 1,024 embedding table; its forward pass
    # still multiplies every logit token by it (left out of the step's linear FLOPs, the count would be
    # 1.35x too few for this model)
    from inferplan.memory.fit import plan_memory
    from inferplan.memory.params import count_params
    from inferplan.performance.work import model_work

    mp = plan_memory(Deployment(model=model, gpu="h100-sxm", max_model_len=4096), CATALOG)
    arch = mp.spec.architecture
    params = count_params(arch)
    assert arch.tie_word_embeddings is tied
    head = arch.vocab_size * arch.hidden_size
    work = model_work(mp, CATALOG)
    assert work.lm_head_params == head
    # one decode token: 2 FLOPs for every weight it passes through, the output projection included
    assert work.linear_flops_per_gpu(1, 1) == pytest.approx(2 * (params.active + (head if tied else 0)), rel=1e-12)
    # a prompt of 100 tokens computes logits for its last token only
    assert work.linear_flops_per_gpu(100, 1) == pytest.approx(
        2 * (100 * (params.active - (0 if tied else head)) + head), rel=1e-12)
    # a draft token costs one layer and the output projection, its share of the whole forward pass
    assert work.draft_cost_ratio == pytest.approx(1 / arch.num_layers + head / (params.active + (head if tied else 0)))


def test_hyper_connection_seams_cost_every_rank_their_sourced_time_and_bytes():
    # DeepSeek-V4-Flash: 43 layers x 2 sublayers = 86 mHC seams per step, each hc-seam-s (published kernel times)
    # on every tensor-parallel rank, and (3 x 4 + 2) hidden-size 16-bit vectors per token per seam
    from inferplan.memory.fit import plan_memory
    from inferplan.performance.phases import overhead_s, stage_hop_s
    from inferplan.performance.rates import rates_for
    from inferplan.performance.work import model_work

    def planned(model, tp=1, pp=1):
        return plan_memory(Deployment(model=model, gpu="b200", gpus=tp * pp, tensor_parallel_size=tp,
                                      pipeline_parallel_size=pp, max_model_len=8192), CATALOG)

    seam_s = CATALOG.constant("hc-seam-s")
    assert 5e-6 < seam_s < 2e-5
    works = {(tp, pp): model_work(planned("deepseek-v4-flash", tp, pp), CATALOG) for tp, pp in ((1, 1), (4, 1), (2, 2))}
    assert works[1, 1].hc_seams == works[4, 1].hc_seams == 86  # not shared out by tensor parallelism
    assert works[2, 2].hc_seams == 43  # a pipeline stage runs its own layers' seams
    tp4 = works[4, 1]
    assert tp4.hc_bytes_per_token == 86 * 14 * 4096 * 2
    plain = dataclasses.replace(tp4, hc_seams=0.0, hc_bytes_per_token=0.0)
    assert tp4.activation_bytes_per_gpu(10) - plain.activation_bytes_per_gpu(10) == pytest.approx(10 * 86 * 14 * 4096 * 2)
    mp = planned("deepseek-v4-flash", 4)
    rates = rates_for(CATALOG, mp.accelerator, mp.quantization, "vllm", None)
    no_seams = dataclasses.replace(rates, hc_seam_s=0.0)
    assert overhead_s(tp4, rates) - overhead_s(tp4, no_seams) == pytest.approx(86 * seam_s)
    # two pipeline stages: each runs its own 43 seams and moves their bytes, and hands its four streams on
    stage = works[2, 2]
    assert stage.hc_bytes_per_token == 43 * 14 * 4096 * 2
    assert overhead_s(stage, rates) - overhead_s(stage, no_seams) == pytest.approx(43 * seam_s)
    one_stream = dataclasses.replace(stage, residual_streams=1)
    hop, plain_hop = stage_hop_s(stage, rates, 8192), stage_hop_s(one_stream, rates, 8192)
    message = 8192 * 4096 * 2 / 2  # one stream's share of each of the 2 tensor-parallel ranks
    assert stage.residual_streams == 4
    assert hop - plain_hop == pytest.approx(3 * message / rates.link_bytes_per_s)
    est = perf(Workload(input_len=1024, output_len=1), model="deepseek-v4-flash", gpu="b200", gpus=4,
               tensor_parallel_size=4, max_model_len=8192)
    assert any(f"{seam_s * 1e6:.0f} µs × 86 hyper-connection seams" in a for a in est.assumptions)
    # a model without hyper-connections pays none, nor does a card whose V4 layout only stands in for its KV cache
    dense = model_work(planned("llama-3.1-8b"), CATALOG)
    assert dense.hc_seams == 0 and dense.hc_bytes_per_token == 0
    proxy = dataclasses.replace(mp, spec=dataclasses.replace(mp.spec, architecture_is_proxy=True))
    assert model_work(proxy, CATALOG).hc_seams == 0 and model_work(proxy, CATALOG).residual_streams == 1


def test_an_unpublished_architecture_takes_the_assumed_width_and_depth(sketch_catalog):
    ctx = ServingContext(sketch_catalog, Deployment(model="sketch-unpublished", system="hgx-b200", tensor_parallel_size=8,
                                                    kv_bytes_per_token=100_000), Workload())
    assert ctx.work.hidden_size == sketch_catalog.constant("unpublished-architecture-hidden-size") == 8192
    assert ctx.work.num_layers == sketch_catalog.constant("unpublished-architecture-layers") == 60
    assert (ctx.work.num_experts, ctx.work.experts_per_token) == (256, 8)  # calibration.yaml's assumed expert split
    assert any("8 of 256 experts per token" in n for n in ctx.work.notes)


def test_a_deployment_that_does_not_fit_names_the_smallest_instance_that_does(catalog):
    # gpt-oss-120b (about 61 GiB of weights) on one 24 GB RTX 4090: four of them at tensor parallel 4
    with pytest.raises(InvalidScenarioError) as info:
        ServingContext(catalog, Deployment(model="gpt-oss-120b", gpu="rtx-4090"), Workload(input_len=1024, output_len=256))
    assert info.value.field == "gpus" and "needs 4 GPUs, tensor parallel 4" in str(info.value)


@pytest.mark.parametrize(("hardware", "field"), [
    ({"system": "dgx-spark"}, "system"),  # the system alone gave the GPUs
    ({"gpu": "h100", "gpus": 4}, "gpus"),
    ({"system": "hgx-h100", "gpus": 4}, "gpus"),
])
def test_a_deployment_too_small_names_the_field_given_and_no_command(hardware, field):
    """The refusal is read by the CLI, the API and the web page alike: it names the field the user gave
    (a system alone, or a GPU count) and no CLI command."""
    with pytest.raises(InvalidScenarioError) as refused:
        perf(Workload(input_len=1000, output_len=100), model="deepseek-r1", **hardware)
    assert refused.value.field == field and "does not fit" in str(refused.value)
    assert "inferplan" not in str(refused.value) + refused.value.allowed and "memory fit" in refused.value.allowed


def test_the_shells_name_the_system_a_too_small_deployment_gave(tmp_path):
    from fastapi.testclient import TestClient
    from typer.testing import CliRunner

    from inferplan.shells.api import create_app
    from inferplan.shells.cli import app

    r = CliRunner().invoke(app, ["perf", "--model", "deepseek-r1", "--system", "dgx-spark", "--input-len", "1000",
                                 "--output-len", "100", "--json"])
    assert r.exit_code == 2 and '"field": "--system"' in r.stdout
    api = TestClient(create_app(tmp_path / "t.db")).post("/api/perf", json={
        "deployment": {"model": "deepseek-r1", "system": "dgx-spark"}, "workload": {"input_len": 1000, "output_len": 100}})
    assert api.status_code == 422 and api.json()["detail"][0]["loc"] == ["body", "deployment", "system"]
