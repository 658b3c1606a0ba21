"""SGLang on ROCm runs NVFP4 weights only through Petit, whose kernels are written for Instinct (CDNA2/CDNA3)
GPUs: on a Radeon (RDNA) card fit, perf, deploy and the what-runs-here view refuse or leave out SGLang NVFP4
(``gpu_refusals`` in engine_support.yaml), while an Instinct GPU keeps it."""

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


@pytest.mark.parametrize("gpu", ["RX 9070 XT", "RX 7900 XTX"])
@pytest.mark.parametrize("step", ["fit", "perf", "deploy"])
def test_sglang_nvfp4_on_a_radeon_is_refused_naming_the_gpu(catalog, gpu, step):
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
