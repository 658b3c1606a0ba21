"""Regressions of `fit`, `perf` and the homelab view: the fewest GPUs at any count the engine launches,
-ngl above the layer count, the host-RAM refusal, the missing-hardware error's field and the homelab
row's requests at once."""

import pytest
from pydantic import ValidationError

from inferplan.catalog.metal_schema import metal_working_set
from inferplan.catalog.loader import load_catalog
from inferplan.errors import InvalidScenarioError
from inferplan.inputs.deployment import Deployment
from inferplan.inputs.workload import Workload
from inferplan.memory.fit import fit
from inferplan.memory.suggest import fit_or_suggest
from inferplan.performance.context import ServingContext
from inferplan.performance.here import what_runs_on
from inferplan.report.homelab_view import homelab_view

CATALOG = load_catalog()
GPT_OSS_4090 = dict(model="gpt-oss-120b", gpu="rtx-4090", engine="llamacpp", quantization="q4_k_m", max_model_len=8192)


def test_the_fewest_gpus_of_a_layer_split_need_not_be_a_power_of_two():
    """llama.cpp splits layers over any GPU count: gpt-oss-120b in Q4_K_M fits three RTX 4090s."""
    three = fit(Deployment(**GPT_OSS_4090, gpus=3), CATALOG)
    assert three.fits and not fit(Deployment(**GPT_OSS_4090, gpus=2), CATALOG).fits
    one = fit_or_suggest(Deployment(**GPT_OSS_4090), CATALOG)
    assert one.fewest_gpus_fit.gpus == 3 and one.fewest_gpus_fit.pipeline_parallel_size == 3 and one.smallest_fit.gpus == 4
    assert next(s for s in one.suggestions if s.kind == "gpus").changes["gpus"] == 3


def test_more_gpus_beyond_one_host_are_whole_hosts_with_tensor_parallelism_inside_each():
    """DeepSeek-R1 in FP8 on H100s: fewer than 16 GPUs hold it (10 at vLLM 0.34's sizing), but past one host of 8 the
    suggestion is the layout the vLLM guide runs over nodes, 2 hosts of TP8 × PP2; within one host the
    fewest GPUs stay the answer (Llama 3.3 70B in BF16: three H100s)."""
    r = fit_or_suggest(Deployment(model="deepseek-r1", gpu="h100-sxm", gpus=8), CATALOG)
    assert 8 < r.fewest_gpus_fit.gpus < 16 and not fit(Deployment(model="deepseek-r1", gpu="h100-sxm",
                                                                    gpus=r.fewest_gpus_fit.gpus - 1), CATALOG).fits
    more = next(s for s in r.suggestions if s.kind == "gpus")
    assert (more.changes["gpus"], more.changes["tensor_parallel_size"], more.changes["pipeline_parallel_size"]) == (16, 8, 2)
    assert "in 2 hosts of 8" in more.summary
    within = fit_or_suggest(Deployment(model="llama-3.3-70b", gpu="h100-sxm"), CATALOG)
    assert next(s for s in within.suggestions if s.kind == "gpus").changes["gpus"] == 3


def test_the_fewest_gpus_is_never_more_than_a_smaller_count_that_fits():
    for d in (Deployment(**GPT_OSS_4090), Deployment(model="qwen3-30b-a3b", gpu="rtx-4090", max_model_len=8192)):
        s = fit(d, CATALOG).fewest_gpus_fit
        assert s is not None and not fit(d.model_copy(update={"gpus": s.gpus - 1}), CATALOG).fits, d.model


def test_the_homelab_view_says_three_gpus():
    rows = {r.model: r for r in homelab_view(what_runs_on("rtx-4090", 1, CATALOG, engine="llamacpp",
                                                           quantizations=["q4_k_m"])).rows}
    assert rows["gpt-oss-120b"].verdict == "needs 3 GPUs"
    on_three = {m.model: m for m in what_runs_on("rtx-4090", 3, CATALOG, engine="llamacpp", quantizations=["q4_k_m"]).models}
    assert on_three["gpt-oss-120b"].fits


def test_the_homelab_rows_requests_at_once_are_fits_at_the_rows_context():
    r = next(m for m in what_runs_on("rtx-4090", 1, CATALOG, engine="llamacpp", quantizations=["q4_k_m"]).models
             if m.model == "qwen3-30b-a3b")
    memory = fit_or_suggest(Deployment(model="qwen3-30b-a3b", gpu="rtx-4090", engine="llamacpp", quantization="q4_k_m",
                                       max_model_len=r.max_model_len), CATALOG)
    assert r.max_model_len == 8192 and r.concurrency == memory.most_slots  # llama.cpp: the whole slots that fit
    assert r.concurrency < 20  # not the 54 requests of 1,024 + 256 tokens


@pytest.mark.parametrize("ngl", [49, 99])
def test_ngl_above_the_layers_is_the_default(ngl):
    base = dict(model="qwen3-30b-a3b", gpu="rtx-4090", engine="llamacpp", quantization="q4_k_m")  # 48 layers
    every = fit(Deployment(**base, n_gpu_layers=ngl), CATALOG)
    default = fit(Deployment(**base), CATALOG)
    assert every.model_dump(exclude={"assumptions"}) == default.model_dump(exclude={"assumptions"})
    output_on_cpu = fit(Deployment(**base, n_gpu_layers=48), CATALOG)  # -ngl 48 leaves the output layer on the CPU
    assert output_on_cpu.host_memory_bytes_used > 0 and output_on_cpu.host_memory_origin == "unstated"


def test_perf_names_the_host_ram_when_it_is_what_is_short():
    d = Deployment(model="qwen3-30b-a3b", gpu="rtx-4090", engine="llamacpp", quantization="q4_k_m", n_cpu_moe=20,
                   host_memory_gb=2)
    with pytest.raises(InvalidScenarioError) as err:
        ServingContext(CATALOG, d, Workload())
    assert err.value.field == "host_memory_gb" and "host RAM" in str(err.value) and "used of 0.00 GiB" in str(err.value)  # 2 GiB less the 4 GiB the OS and the engine keep


def test_perf_on_one_gpu_with_no_count_given_says_so_and_lists_the_other_changes():
    with pytest.raises(InvalidScenarioError) as err:
        # at vLLM 0.11's fraction of 0.9 the model needs two H100s (from 0.20 its 0.92 holds it on one)
        ServingContext(CATALOG, Deployment(model="gpt-oss-120b", gpu="h100-sxm", engine_version="0.11.0"), Workload())
    assert "no GPU count given" in str(err.value) and "a memory fit of the deployment" not in err.value.allowed
    assert err.value.allowed.startswith("at least 2 GPUs")


def test_a_deployment_with_no_hardware_is_refused_at_the_gpu_field():
    with pytest.raises(ValidationError) as err:
        Deployment(model="llama-3.1-8b")
    first = err.value.errors()[0]
    assert first["loc"] == ("gpu",) and "--" not in first["msg"]


@pytest.mark.parametrize(("gpu", "gib"), [("trainium2", 96), ("trainium3", 144)])
def test_an_accelerator_stated_in_gib_is_not_read_as_gb(gpu, gib):
    """Trainium2's 96 GiB of HBM is 103.1 GB: read as "GB" it was planned as 102.02 GiB."""
    from inferplan.memory.engine_budget import device_total_bytes
    total, _ = device_total_bytes(CATALOG, CATALOG.accelerator(gpu, "gpu"))
    reserve = CATALOG.constant("driver-reserved-fraction")
    assert total == pytest.approx(gib * 2**30 * (1 - reserve))


def test_a_gb_stated_accelerator_keeps_the_marketed_gb_read_as_gib():
    h100 = CATALOG.accelerator("h100-sxm", "gpu")
    assert h100.memory_bytes.stated_unit == "GB" and h100.memory_bytes.capacity_gib == pytest.approx(80)


def test_a_larger_memory_fraction_is_offered_where_it_makes_the_model_fit():
    """gpt-oss-120b on one H100 at vLLM 0.11's 0.9 holds no KV cache; at 0.95 (engines.yaml memory_fraction_max,
    a deployment guide's figure) it holds about 52,480 tokens with the MXFP4 MoE kernel 0.11.0 installs."""
    d = Deployment(model="gpt-oss-120b", gpu="h100-sxm", engine_version="0.11.0")  # 0.9: 0.20 and later default to 0.92
    r = fit_or_suggest(d, CATALOG)
    raised = next(s for s in r.suggestions if s.kind == "fraction")
    assert raised.changes["gpu_memory_utilization"] == CATALOG.engine("vllm").memory_fraction_max.value == 0.95
    assert 50_000 < raised.changes["max_model_len"] < 55_000
    short = fit_or_suggest(d.model_copy(update={"max_model_len": 32768}), CATALOG)
    assert next(s for s in short.suggestions if s.kind == "fraction").changes == {"gpu_memory_utilization": 0.95}
    assert fit(d.model_copy(update={"max_model_len": 32768, "gpu_memory_utilization": 0.95}), CATALOG).fits


def test_llamacpp_on_metal_plans_within_the_working_set():
    """ggml-metal reports Metal's recommended working set as the device's memory: llama.cpp on a 128 GB
    M4 Max gets the share metal_working_set.yaml gives a Mac of that size, not all 128 GiB; a measured
    working set (M5 Max) stands, and MLX sizes against the same working set."""
    share = metal_working_set(CATALOG.metal_working_sets, 128).share.value
    d = Deployment(model="qwen3-30b-a3b", gpu="apple-m4-max", engine="llamacpp", quantization="q4_k_m")
    assert fit(d, CATALOG).gpu_memory_bytes == pytest.approx(128 * 2**30 * share) == 96 * 2**30
    m5 = fit(d.model_copy(update={"gpu": "apple-m5-max"}), CATALOG)
    assert m5.gpu_memory_bytes == CATALOG.accelerator("apple-m5-max", "gpu").memory_reported_bytes.value
    mlx = fit(Deployment(model="qwen3-30b-a3b", gpu="apple-m4-max", engine="mlx"), CATALOG)
    assert mlx.gpu_memory_bytes == pytest.approx(96 * 2**30)


def test_llama_cpp_caches_in_f16_unless_told_whatever_the_weights():
    """llama-server's -ctk/-ctv default is f16 (engines.yaml kv_cache_dtype_default); vLLM follows the
    model's bf16."""
    cpp = fit(Deployment(model="qwen3-8b", gpu="rtx-4090", engine="llamacpp", max_model_len=8192), CATALOG)
    vllm = fit(Deployment(model="qwen3-8b", gpu="rtx-4090", max_model_len=8192), CATALOG)
    told = fit(Deployment(model="qwen3-8b", gpu="rtx-4090", engine="llamacpp", kv_cache_dtype="q8_0",
                          max_model_len=8192), CATALOG)
    assert (cpp.kv_cache_dtype, vllm.kv_cache_dtype, told.kv_cache_dtype) == ("fp16", "bf16", "q8_0")


def test_a_mac_runs_llama_cpp_unless_an_engine_is_named():
    """No engine named: llama.cpp on Apple silicon, vLLM on a CUDA card; a named engine is kept on
    either (vLLM on a Mac without CUDA graphs: tests/test_metal_engines.py)."""
    mac = fit(Deployment(model="qwen3-8b", gpu="apple-m3-ultra", max_model_len=8192), CATALOG)
    named = fit(Deployment(model="qwen3-8b", gpu="apple-m3-ultra", engine="vllm", max_model_len=8192), CATALOG)
    cuda = fit(Deployment(model="qwen3-8b", gpu="rtx-4090", max_model_len=8192), CATALOG)
    assert (mac.engine, named.engine, cuda.engine) == ("llamacpp", "vllm", "vllm")
    assert cuda.cuda_graph_bytes_per_gpu > 0
    from inferplan.deploy.command import launch_command
    from inferplan.performance.serving import estimate

    assert launch_command(Deployment(model="qwen3-8b", gpu="apple-m3-ultra", max_model_len=8192), CATALOG).argv[0] == "llama-server"
    assert estimate(Deployment(model="qwen3-8b", gpu="apple-m3-ultra", max_model_len=8192),
                    Workload(input_len=512, output_len=128), CATALOG).engine == "llamacpp"
