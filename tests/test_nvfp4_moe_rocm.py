"""NVFP4 mixture-of-experts models on ROCm: Petit, the NVFP4 path of SGLang (every release read) and of vLLM
to 0.19.0, quantizes the linear layers alone and gives FusedMoE no method, so the packed FP4 experts do not
load. fit, perf, deploy and search refuse such a model there (``moe_only`` ``gpu_refusals`` in
engine_support.yaml), naming the engine and formats that remain, while a dense NVFP4 model keeps running; vLLM
from 0.20.0 emulates the experts, labelled so."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from inferplan.catalog.engine_support import GpuRefusal, gpu_refusal
from inferplan.deploy.manifest import launch_plan
from inferplan.errors import InvalidScenarioError
from inferplan.inputs.deployment import Deployment
from inferplan.inputs.workload import Workload
from inferplan.memory.fit import fit
from inferplan.memory.precision import model_formats
from inferplan.memory.resolve import resolve_model
from inferplan.performance.here import what_runs_on
from inferplan.performance.serving import estimate
from inferplan.search.request import SearchRequest
from inferplan.search.run import search
from inferplan.shells.cli import app

NEMOTRON = "nvidia/NVIDIA-Nemotron-3.5-Lightning-30B-A3B-NVFP4"  # a ModelOpt NVFP4 MoE checkpoint
ON_MI300X = dict(model=NEMOTRON, gpu="MI300X", max_model_len=32768)


def test_the_rules_refuse_nvfp4_experts_on_cdna3_for_sglang_always_and_vllm_to_0_19(catalog):
    mi300x = catalog.accelerator("mi300x")
    sglang = gpu_refusal(catalog, "sglang", "0.5.23", None, mi300x, "nvfp4", moe=True)
    assert sglang is not None and sglang.moe_only and sglang.last_release is None
    assert "es-sglang-wheels-petit-no-fusedmoe" in sglang.sources
    assert gpu_refusal(catalog, "sglang", "0.5.23", None, mi300x, "nvfp4", moe=False) is None  # dense runs
    assert gpu_refusal(catalog, "vllm", "0.19.0", None, mi300x, "nvfp4", moe=True) is not None
    assert gpu_refusal(catalog, "vllm", "0.20.0", None, mi300x, "nvfp4", moe=True) is None
    assert gpu_refusal(catalog, "sglang", "0.5.23", None, catalog.accelerator("h100-sxm"), "nvfp4", moe=True) is None


def test_an_unstated_release_is_asked_at_the_engines_current_one(catalog):
    # vLLM's current release emulates NVFP4 on ROCm: a search (no release) offers it, as fit (the default) does
    assert gpu_refusal(catalog, "vllm", None, None, catalog.accelerator("mi355x"), "nvfp4") is None
    assert gpu_refusal(catalog, "vllm", None, None, catalog.accelerator("mi300x"), "nvfp4", moe=True) is None


def test_a_moe_only_refusal_names_a_quantization():
    with pytest.raises(ValueError):
        GpuRefusal(id="x", engine="sglang", architecture="Qwen3MoeForCausalLM", moe_only=True,
                   gpu_architectures=("cdna3",), sources=("s",), checked="2026-12-07", kind="spec")


@pytest.mark.parametrize("model, quantization", [(NEMOTRON, None), ("qwen3-30b-a3b", "nvfp4")])
@pytest.mark.parametrize("step", ["fit", "perf", "deploy"])
def test_sglang_nvfp4_moe_on_mi300x_is_refused_naming_what_remains(catalog, model, quantization, step):
    d = Deployment(**{**ON_MI300X, "model": model}, engine="sglang", quantization=quantization)
    plans = {"fit": lambda: fit(d, catalog), "perf": lambda: estimate(d, Workload(), catalog),
             "deploy": lambda: launch_plan(d, catalog)}
    with pytest.raises(InvalidScenarioError) as e:
        plans[step]()
    assert e.value.field == "quantization" and "nvfp4 routed experts" in str(e.value)
    assert "another engine: vllm" in e.value.allowed and "fp8" in e.value.allowed.split(": ")[-1].split(", ")


def test_the_other_formats_offered_are_the_models_own(catalog):
    with pytest.raises(InvalidScenarioError) as e:
        fit(Deployment(**ON_MI300X, engine="sglang"), catalog)
    offered = set(e.value.allowed.split("another quantization with sglang: ")[-1].split(", "))
    own = model_formats(catalog, resolve_model(catalog, NEMOTRON), "sglang")
    assert offered and offered <= set(own) and not offered & {"fp32", "mxfp4-w4a4"}


def test_vllm_0_19_takes_petit_only_for_the_hf_quant_config_layout(catalog):
    # 0.19.0 claims a config.json quantization_config as modelopt_fp4 before Petit, and ROCm refuses that
    source = catalog.sources["es-vllm-wheels-petit-no-fusedmoe"]
    assert "modelopt_fp4 (line 943) before petit_nvfp4" in source.title and "hf_quant_config.json" in source.title
    for rid in ("vllm-nvfp4-petit-outside-cdna2-cdna3", "vllm-nvfp4-moe-petit-cdna2-cdna3"):
        rule = catalog.gpu_refusals.records[rid]
        assert "hf_quant_config.json" in rule.note and "quantization_config" in rule.note


def test_a_dense_nvfp4_model_still_runs_on_mi300x_with_sglang(catalog):
    assert fit(Deployment(model="qwen3-8b", gpu="MI300X", engine="sglang", quantization="nvfp4",
                          max_model_len=8192), catalog).fits


@pytest.mark.parametrize("release", ["0.19.0", "0.19.1"])
def test_vllm_0_19_is_refused_and_0_20_emulates_the_experts(catalog, release):
    with pytest.raises(InvalidScenarioError) as e:
        fit(Deployment(**ON_MI300X, engine="vllm", engine_version=release), catalog)
    assert e.value.field == "quantization" and "vLLM after 0.19.1" in e.value.allowed
    plan = fit(Deployment(**ON_MI300X, engine="vllm", engine_version="0.20.0"), catalog)
    assert plan.fits and any("emulates" in a for a in plan.assumptions)


def test_search_never_offers_sglang_nvfp4_moe_on_mi300x_and_offers_vllm(catalog):
    req = SearchRequest(models=(NEMOTRON,), accelerators=("mi300x",), engines=("sglang", "vllm"),
                        quantizations=("nvfp4",), max_gpus=2, request_rate_per_s=1.0, input_len=1000,
                        output_len=200, speculative=False, disaggregated=False)
    res = search(req, catalog)
    assert res.results and all(r.engine == "vllm" for r in res.results)
    assert {r.quantization_label for r in res.results} == {"emulated in bf16"}
    refused = [x for x in res.infeasible if x.engine == "sglang"]
    assert refused and all(x.reason == "engine" and "routed experts" in x.message for x in refused)


def test_the_cli_refuses_it_naming_the_quantization():
    r = CliRunner().invoke(app, ["fit", "--model", NEMOTRON, "--gpu", "MI300X", "--engine", "sglang"])
    assert r.exit_code == 2 and "--quantization" in r.output and "routed experts" in r.output
    r = CliRunner().invoke(app, ["deploy", "--model", NEMOTRON, "--gpu", "MI300X", "--engine", "sglang"])
    assert r.exit_code == 2 and "--quantization" in r.output and "sglang.launch_server" not in r.output


def test_what_runs_on_an_mi300x_with_sglang_nvfp4_lists_dense_models_alone(catalog):
    rows = what_runs_on("mi300x", 1, catalog, engine="sglang", quantizations=["nvfp4"]).models
    models = {r.model for r in rows if r.quantization == "nvfp4"}
    assert "qwen3-8b" in models and not models & {"qwen3-30b-a3b", "nemotron-3.5-lightning"}
