"""A format the accelerator has no native kernels for runs only in the engines that have a fallback for it
(``fallback_engines`` in quantizations.yaml, each from its ``since`` release): NVFP4 on Hopper in vLLM and
SGLang (Marlin W4A16), not in TensorRT-LLM, whose hardware matrix marks NVFP4 unsupported below Blackwell;
DeepSeek-V4's FP4 + FP8 mix likewise, TensorRT-LLM running that model on Blackwell only; gpt-oss's MXFP4 in
every engine that loads it, TensorRT-LLM as W4A16_MXFP4."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from inferplan.catalog.loader import load_catalog
from inferplan.errors import InvalidScenarioError
from inferplan.inputs.deployment import Deployment
from inferplan.memory.fit import plan_memory
from inferplan.search.request import SearchRequest
from inferplan.search.space import build_space
from inferplan.shells.cli import app

H100_TP4 = dict(model="llama-3.3-70b", gpu="h100-sxm", gpus=4, tensor_parallel_size=4, quantization="nvfp4")


def test_trtllm_nvfp4_on_hopper_is_refused_naming_the_field_and_what_it_loads_there(catalog):
    with pytest.raises(InvalidScenarioError) as refused:
        plan_memory(Deployment(**H100_TP4, engine="trtllm"), catalog)
    assert refused.value.field == "quantization"
    allowed = refused.value.allowed.split(", ")
    assert "nvfp4" not in allowed and "fp8" in allowed
    assert "no fallback" in str(refused.value)


def test_the_cli_refuses_it_at_the_quantization_flag():
    r = CliRunner().invoke(app, ["perf", "--model", "llama-3.3-70b", "--gpu", "h100-sxm", "--gpus", "4", "-tp", "4",
                                 "-q", "nvfp4", "--engine", "trtllm"])
    assert r.exit_code == 2 and "--quantization" in r.output and "allowed:" in r.output


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_engines_with_a_sourced_fallback_still_plan_it(catalog, engine):
    hopper = plan_memory(Deployment(**H100_TP4, engine=engine), catalog).result
    blackwell = plan_memory(Deployment(**{**H100_TP4, "gpu": "b200"}, engine=engine), catalog).result
    bf16 = plan_memory(Deployment(**{**H100_TP4, "quantization": "bf16"}, engine=engine), catalog).result
    # W4A16: the NVFP4 weights' memory, 16-bit math, and a note that says so
    assert hopper.quantization == "nvfp4"
    assert hopper.weights_bytes_per_gpu == blackwell.weights_bytes_per_gpu < bf16.weights_bytes_per_gpu / 3
    assert any("runs no native nvfp4 kernels" in a and "bf16 fallback" in a for a in hopper.assumptions)


def test_trtllm_nvfp4_is_native_on_blackwell(catalog):
    r = plan_memory(Deployment(**{**H100_TP4, "gpu": "b200"}, engine="trtllm"), catalog).result
    assert r.quantization == "nvfp4" and not any("native nvfp4" in a for a in r.assumptions)


def test_a_release_before_the_fallback_is_refused(catalog):
    since = catalog.quantization("nvfp4").fallback("sglang").since
    assert since is not None
    with pytest.raises(InvalidScenarioError) as refused:
        plan_memory(Deployment(**H100_TP4, engine="sglang", engine_version="0.5.12"), catalog)
    assert refused.value.field == "quantization" and f"before {since}" in str(refused.value)


def test_search_offers_nvfp4_on_hopper_only_to_engines_with_a_fallback(catalog):
    req = SearchRequest(models=("llama-3.3-70b",), systems=("hgx-h100", "hgx-b200"), engines=("trtllm", "vllm", "sglang"),
                        quantizations=("nvfp4",), request_rate_per_s=1.0, input_len=1000, output_len=100)
    cells = build_space(catalog, req, input_len=1000, output_len=100).cells
    offered = {(c.platform.id, c.engine) for c in cells}
    assert {e for p, e in offered if p == "hgx-h100"} == {"vllm", "sglang"}
    assert {e for p, e in offered if p == "hgx-b200"} == {"trtllm", "vllm", "sglang"}


def test_the_fallback_list_is_what_decides():
    """Unwired: with the list dropped, every engine that loads NVFP4 falls back again."""
    catalog = load_catalog()
    nvfp4 = catalog.quantization("nvfp4")
    h100 = catalog.accelerator("h100-sxm")
    trtllm = catalog.engine("trtllm")
    assert not trtllm.loads(nvfp4, accel=h100)
    assert trtllm.loads(nvfp4.model_copy(update={"fallback_engines": None}), accel=h100)
    assert trtllm.loads(nvfp4, h100.software)  # the engine loads the format; the accelerator decides


def test_a_vllm_release_before_the_fp4_marlin_kernel_is_refused(catalog):
    since = catalog.quantization("nvfp4").fallback("vllm").since
    assert since == "0.9.0"
    with pytest.raises(InvalidScenarioError) as refused:
        plan_memory(Deployment(**H100_TP4, engine="vllm", engine_version="0.8.5"), catalog)
    assert refused.value.field == "quantization" and f"before {since}" in str(refused.value)
    plan_memory(Deployment(**H100_TP4, engine="vllm", engine_version=since), catalog)


V4_H200 = dict(model="deepseek-v4-flash", gpu="h200", gpus=8, tensor_parallel_size=8)


def test_trtllm_deepseek_v4_fp4_experts_on_hopper_are_refused(catalog):
    """TensorRT-LLM runs DeepSeek-V4 on Blackwell only, whatever the checkpoint (the model is refused before
    its format, naming the engines that run it there); vLLM and SGLang run its FP4 experts weight-only on Hopper."""
    with pytest.raises(InvalidScenarioError) as refused:
        plan_memory(Deployment(**V4_H200, engine="trtllm"), catalog)
    assert refused.value.field == "gpu" and "vllm, sglang" in refused.value.allowed
    assert "mixed-fp4-fp8" not in refused.value.allowed and "fp8-block" not in refused.value.allowed
    for engine in ("vllm", "sglang"):
        plan_memory(Deployment(**V4_H200, engine=engine), catalog)
    plan_memory(Deployment(**{**V4_H200, "gpu": "b200"}, engine="trtllm"), catalog)
    mixed = catalog.quantization("mixed-fp4-fp8")
    assert catalog.engine("trtllm").loads(mixed.model_copy(update={"fallback_engines": None}),
                                          accel=catalog.accelerator("h200"))


def test_search_offers_deepseek_v4_on_hopper_only_to_engines_with_a_fallback(catalog):
    req = SearchRequest(models=("deepseek-v4-flash",), systems=("hgx-h200", "hgx-b200"), engines=("trtllm", "vllm", "sglang"),
                        request_rate_per_s=1.0, input_len=1000, output_len=100)
    cells = build_space(catalog, req, input_len=1000, output_len=100).cells
    offered = {(c.platform.id, c.engine) for c in cells if c.quantization == "mixed-fp4-fp8"}
    assert {e for p, e in offered if p == "hgx-h200"} == {"vllm", "sglang"}
    assert "trtllm" in {e for p, e in offered if p == "hgx-b200"}


def test_trtllm_runs_gpt_oss_mxfp4_on_hopper_weight_only(catalog):
    """gpt-oss's MXFP4 checkpoint runs below SM100 as W4A16_MXFP4 in TensorRT-LLM (its Triton MoE backend on
    Hopper), although its quantization hardware matrix marks MXFP4 unsupported there: planned as the fallback."""
    mp = plan_memory(Deployment(model="gpt-oss-120b", gpu="h100-sxm", engine="trtllm"), catalog)
    assert mp.quantization.id == "mxfp4" and any("bf16 fallback" in a for a in mp.result.assumptions)
    notes = " ".join(catalog.quantization("mxfp4").notes)
    assert "q-trtllm-mxfp4-below-sm100" in notes and "q-trtllm-gptoss-hopper-triton" in notes
    assert {"q-trtllm-mxfp4-below-sm100", "q-trtllm-gptoss-hopper-triton"} <= set(catalog.sources)


@pytest.mark.parametrize("engine", ["vllm", "sglang", "trtllm"])
def test_rubin_lut3_weights_run_on_rubin_only(catalog, engine):
    # no engine has a LUT-B kernel for other silicon: an RTX 4090 or an H100 is refused, not planned in bf16
    for gpu in ("rtx-4090", "h100-sxm"):
        with pytest.raises(InvalidScenarioError) as refused:
            plan_memory(Deployment(model="qwen3-8b", gpu=gpu, quantization="lut3", engine=engine), catalog)
        assert refused.value.field == "quantization" and "lut3" not in refused.value.allowed.split(", ")
    plan_memory(Deployment(model="qwen3-8b", gpu="rubin", quantization="lut3", engine=engine), catalog)
