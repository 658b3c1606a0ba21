"""KTransformers: routed experts in host RAM except kt_num_gpu_experts per layer, run by the CPU
alongside the GPU (memory/kt_offload.py, performance/offload.py, deploy/kt_args.py)."""

import math

import pytest
from pydantic import ValidationError

from inferplan.deploy import launch_command
from inferplan.deploy.command import engine_flags
from inferplan.errors import InvalidScenarioError, UnsupportedSettingError
from inferplan.inputs.deployment import Deployment
from inferplan.inputs.workload import Workload
from inferplan.memory.fit import fit, plan_memory
from inferplan.performance.phases import StepTime
from inferplan.performance.serving import estimate
from inferplan.validation.speed import check_point

QWEN = dict(model="qwen3-30b-a3b", gpu="rtx-4090", engine="ktransformers", max_model_len=8192, host_memory_gb=128)
# DeepSeek-V3 Q4_K_M on an RTX 4090 with two Xeon Gold 6454S sockets of 8 x DDR5-4800 each (the
# KTransformers tutorial's host): 16 channels x 8 bytes x 4.8e9 transfers/s
DSV3 = dict(model="deepseek-v3", gpu="rtx-4090", engine="ktransformers", quantization="gguf-q4_k_m",
            kt_num_gpu_experts=0, host_memory_gb=1024, host_memory_bandwidth_gb_per_s=614.4, max_model_len=2048)
ONE = Workload(input_len=969, output_len=300, concurrency=1)


def test_the_routed_experts_not_kept_on_the_gpu_go_to_host_ram():
    plain = plan_memory(Deployment(**{**QWEN, "engine": "sglang", "host_memory_gb": None}))
    for on_gpu in (0, 32, 128):
        mp = plan_memory(Deployment(**QWEN, kt_num_gpu_experts=on_gpu))
        host = mp.weights.expert_bytes * (128 - on_gpu) / 128
        assert mp.result.host_memory_bytes_used == pytest.approx(host)
        assert mp.result.weights_bytes_per_gpu == pytest.approx(plain.result.weights_bytes_per_gpu - host)
    assert fit(Deployment(**QWEN, kt_num_gpu_experts=0)).fits


def test_left_out_no_routed_expert_stays_on_the_gpu():
    assert fit(Deployment(**QWEN)).host_memory_bytes_used == fit(Deployment(**QWEN, kt_num_gpu_experts=0)).host_memory_bytes_used


def test_host_ram_short_of_the_experts_does_not_fit_and_names_it():
    short = fit(Deployment(**{**QWEN, "host_memory_gb": 16}))  # about 53 GiB of BF16 experts
    assert not short.fits
    assert any("host_memory_gb" in note for note in short.assumptions)


@pytest.mark.parametrize("extra, field, allowed", [
    (dict(kt_num_gpu_experts=129), "kt_num_gpu_experts", "0..128"),
    (dict(model="qwen3-32b", kt_num_gpu_experts=4), "kt_num_gpu_experts", "a mixture-of-experts model"),
    (dict(model="qwen3-32b"), "model", "a mixture-of-experts model"),
    (dict(engine="vllm", kt_num_gpu_experts=4), "kt_num_gpu_experts", "ktransformers"),
])
def test_a_bad_expert_count_is_refused_naming_the_field(extra, field, allowed):
    with pytest.raises(InvalidScenarioError) as err:
        fit(Deployment(**{**QWEN, **extra}))
    assert err.value.field == field
    assert allowed in err.value.allowed


def test_a_negative_expert_count_is_refused():
    with pytest.raises(ValidationError, match="kt_num_gpu_experts"):
        Deployment(**QWEN, kt_num_gpu_experts=-1)


def test_decode_prices_the_cpu_experts_from_host_bandwidth():
    """Golden: DeepSeek-V3's 58 MoE layers x 256 experts x 3 x 7168 x 2048 weights at Q4_K_M's 4.8944
    bits are 400.1 GB, scaled by the published file (unsloth's Q4_K_M, 376.65 GiB, all 671.03 B weights
    at those bits being 410.5 GB): 394.1 GB; a token reads 8 of the 256 (12.32 GB) at 614.4 GB/s x 0.575
    (llamafile's Q4_K_M stream, the kernel kt-kernel runs GGUF experts on): 34.9 ms, longer than the
    GPU's part, which runs alongside it."""
    mp = plan_memory(Deployment(**DSV3))
    published = 376.65 * 2**30 / (671.03e9 * 4.8944 / 8)
    assert mp.offload.host_expert_bytes == pytest.approx(58 * 256 * 3 * 7168 * 2048 * 4.8944 / 8 * published, rel=1e-3)
    tpot = estimate(Deployment(**DSV3), ONE, use_profiles=False).tpot_s
    assert tpot == pytest.approx(mp.offload.host_expert_bytes * 8 / 256 / (614.4e9 * 0.575), rel=0.01)
    assert tpot == pytest.approx(0.0349, rel=0.01)
    half = estimate(Deployment(**{**DSV3, "host_memory_bandwidth_gb_per_s": 307.2}), ONE, use_profiles=False)
    assert half.tpot_s == pytest.approx(2 * tpot, rel=0.01)


def test_experts_kept_on_the_gpu_take_their_share_off_the_cpu():
    """Two GPUs: four FP8 experts per layer (the original checkpoint's, beside GGUF CPU experts) overfill one 4090."""
    two = {**DSV3, "gpus": 2, "tensor_parallel_size": 2}
    tpot = [estimate(Deployment(**{**two, "kt_num_gpu_experts": g}), ONE, use_profiles=False).tpot_s for g in (0, 4)]
    assert tpot[1] == pytest.approx(tpot[0] * 252 / 256, rel=0.002)


def test_prefill_is_bound_by_the_cpus_expert_flops():
    """Golden: 969 tokens x 2 x 8 experts x 3 x 7168 x 2048 x 58 layers = 39.6 TFLOP. At INT8 (AMXINT8),
    969 x 8 / 256 = 30.3 tokens per expert, where kt-kernel's AMX curve (AMX.md: 3.0 TFLOPS at 16, 5.9
    at 32, log-log between) gives 5.59 TFLOPS BF16, x 35/21 for INT8: 9.32 TOPS on the default single
    socket, 4.25 s. At Q4_K_M (LLAMAFILE) the llamafile curve is held at its last point, 1.69 TFLOPS: 23.4 s."""
    flops = 969 * 2 * 8 * 3 * 7168 * 2048 * 58
    amx = estimate(Deployment(**{**DSV3, "quantization": "int8-w8a8"}), ONE, use_profiles=False).prefill_s
    rate = 3.0e12 * (5.9 / 3.0) ** (math.log(969 * 8 / 256 / 16) / math.log(2)) * 1.667
    assert rate == pytest.approx(9.32e12, rel=0.005)
    assert amx == pytest.approx(flops / rate, rel=0.02)
    gguf = estimate(Deployment(**DSV3), ONE, use_profiles=False).prefill_s
    assert gguf == pytest.approx(flops / 1.69e12, rel=0.02)


def test_overlapped_host_work_sets_the_step_by_the_longer_side():
    step = dict(memory_s=0.010, compute_s=0.002, comm_s=0.0, overhead_s=0.001, overlap_exponent=float("inf"), host_s=0.030)
    assert StepTime(**step, host_overlapped=True).seconds == pytest.approx(0.030)
    assert StepTime(**step).seconds == pytest.approx(0.041)
    assert StepTime(**{**step, "host_s": 0.005}, host_overlapped=True).seconds == pytest.approx(0.011)


def test_the_launch_command_uses_the_engines_own_kt_flags(catalog):
    flags = engine_flags(catalog, "ktransformers")
    d = Deployment(**{**DSV3, "kt_num_gpu_experts": 4})
    argv = launch_command(d, catalog).argv
    experts, method, weights = (flags.settings[s] for s in ("kt_num_gpu_experts", "kt_method", "kt_weight_path"))
    assert argv[argv.index(experts.flags[0]) + 1] == "4"
    assert argv[argv.index(method.flags[0]) + 1] == method.values["gguf-q4_k_m"]
    assert weights.flags[0] in argv
    deferral = flags.settings["kt_max_deferred_experts_per_token"]  # the overlap the plan prices
    assert int(argv[argv.index(deferral.flags[0]) + 1]) > 0
    assert argv[: len(flags.launcher)] == flags.launcher
    emitted = [a for a in argv[len(flags.launcher):] if a.startswith("--")]
    assert emitted and set(emitted) <= set(flags.accepted)
    assert {"--kt-num-gpu-experts", "--kt-method", "--kt-weight-path"} <= set(flags.accepted)


def test_another_engine_refuses_the_kt_setting_at_launch(catalog):
    with pytest.raises(UnsupportedSettingError) as err:
        launch_command(Deployment(**{**DSV3, "engine": "sglang", "quantization": None}), catalog)
    assert err.value.field == "kt_num_gpu_experts"


def test_the_ktransformers_points_are_scored_as_offload_with_every_second_held_out(catalog):
    points = [p for p in catalog.speed_points if p.engine == "ktransformers"]
    assert len(points) >= 4
    assert [p.split for p in points] == ["fit", "holdout"] * (len(points) // 2)
    for p in points:
        check = check_point(p, catalog)
        assert check.kind in ("offload-decode", "offload-prefill")
        assert check.predicted is not None


def test_no_offloaded_point_calibrates_a_speed_constant(catalog):
    from types import SimpleNamespace

    from inferplan.validation.calibrate_speed import prepare

    fit_points = [p for p in catalog.speed_points if p.offloaded and p.split == "fit"]
    assert fit_points
    ready, _ = prepare(SimpleNamespace(speed_points=fit_points, serving_profiles=()), "fit")
    assert ready == []
