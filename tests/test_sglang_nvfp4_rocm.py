"""SGLang on ROCm runs NVFP4 weights only through Petit, whose kernels are written for CDNA2/CDNA3 (gfx90a,
gfx942): on a Radeon (RDNA) card or a CDNA4/CDNA5 Instinct fit, perf, deploy and the what-runs-here view
refuse or leave out SGLang NVFP4 (``gpu_refusals`` in engine_support.yaml), while an MI300X keeps it. vLLM runs NVFP4 on any ROCm GPU by
emulation (``emulated_fallbacks`` in quantizations.yaml), said so in the plan."""

from __future__ import annotations

import pytest

from inferplan.deploy.manifest import launch_plan
from inferplan.errors import InvalidScenarioError
from inferplan.inputs.deployment import Deployment
from inferplan.inputs.workload import Workload
from inferplan.memory.fit import fit
from inferplan.performance.here import what_runs_on
from inferplan.performance.serving import estimate

ON_RADEON = dict(model="qwen3-8b", engine="sglang", quantization="nvfp4", max_model_len=8192)


@pytest.mark.parametrize("gpu", ["RX 9070 XT", "RX 7900 XTX", "MI355X", "MI350X", "MI455X"])
@pytest.mark.parametrize("step", ["fit", "perf", "deploy"])
def test_sglang_nvfp4_outside_cdna2_cdna3_is_refused_naming_the_gpu(catalog, gpu, step):
    d = Deployment(**ON_RADEON, gpu=gpu)
    plans = {"fit": lambda: fit(d, catalog), "perf": lambda: estimate(d, Workload(), catalog),
             "deploy": lambda: launch_plan(d, catalog)}
    with pytest.raises(InvalidScenarioError) as e:
        plans[step]()
    assert e.value.field == "gpu" and "nvfp4" in str(e.value) and "cdna3" in e.value.allowed


def test_sglang_nvfp4_on_an_instinct_gpu_still_plans(catalog):
    assert fit(Deployment(**ON_RADEON, gpu="MI300X"), catalog).fits


def test_what_runs_on_a_9070_xt_offers_no_sglang_nvfp4(catalog):
    rows = what_runs_on("radeon-rx-9070-xt", 1, catalog).models
    assert not [r for r in rows if r.engine == "sglang" and r.quantization == "nvfp4"]


@pytest.mark.parametrize("gpu", ["radeon-rx-9070-xt", "mi300x"])
def test_vllm_runs_nvfp4_on_rocm_by_emulation_and_on_ampere_through_marlin(catalog, gpu):
    # vLLM 0.34.0's only NVFP4 linear kernel on ROCm dequantizes to BF16; its Marlin fallback is CUDA's
    nvfp4 = catalog.quantization("nvfp4")
    rule = nvfp4.emulation(catalog.accelerator(gpu), "vllm", "0.34.0")
    assert rule is not None and rule.materialized_format == "bf16"
    assert nvfp4.emulation(catalog.accelerator("rtx-3090"), "vllm", "0.34.0") is None
    assert "emulates" in " ".join(fit(Deployment(**{**ON_RADEON, "engine": "vllm"}, gpu=gpu), catalog).assumptions)


def test_asking_what_runs_on_a_9070_xt_with_sglang_nvfp4_names_the_refusal(catalog):
    # the question's format is one the engine does not run there: an error naming it, not an empty answer
    with pytest.raises(InvalidScenarioError) as e:
        what_runs_on("radeon-rx-9070-xt", 1, catalog, engine="sglang", quantizations=["nvfp4"])
    assert e.value.field == "quantization" and "rdna4" in str(e.value) and "nvfp4" not in e.value.allowed.split(", ")


@pytest.mark.parametrize("gpu", ["radeon-rx-9070-xt", "mi300x"])
def test_vllm_emulates_nvfp4_on_rocm_from_0_20_and_not_at_0_19(catalog, gpu):
    # 0.20.0 lists modelopt_fp4 on ROCm with the emulation kernel alone; 0.19.0 serves NVFP4 through Petit
    nvfp4 = catalog.quantization("nvfp4")
    assert nvfp4.emulation(catalog.accelerator(gpu), "vllm", "0.20.0") is not None
    assert nvfp4.emulation(catalog.accelerator(gpu), "vllm", "0.19.0") is None


def test_vllm_before_0_20_runs_nvfp4_on_rocm_only_through_petit_on_cdna2_cdna3(catalog):
    at_019 = {**ON_RADEON, "engine": "vllm", "engine_version": "0.19.0"}
    with pytest.raises(InvalidScenarioError) as e:
        fit(Deployment(**at_019, gpu="RX 9070 XT"), catalog)
    assert e.value.field == "gpu" and "nvfp4" in str(e.value)
    assert fit(Deployment(**at_019, gpu="MI300X"), catalog).fits
    assert fit(Deployment(**{**at_019, "engine_version": "0.20.0"}, gpu="RX 9070 XT"), catalog).fits
