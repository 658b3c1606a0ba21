"""TensorRT-LLM with MXFP4 weights (gpt-oss): on Hopper the experts run W4A16 through OpenAI's Triton MoE
kernels, and the launch's options file names that backend (``moe_backends`` in engine_flags.yaml), while
Blackwell keeps the engine's default; before Hopper no MoE backend runs MXFP4 experts, so fit, perf, deploy
and search refuse it alike (``gpu_refusals`` in engine_support.yaml), naming what remains."""

from __future__ import annotations

import pytest
import yaml
from typer.testing import CliRunner

from inferplan.catalog.engine_support import GpuRefusal
from inferplan.deploy import launch_command
from inferplan.deploy.command import engine_flags
from inferplan.deploy.manifest import launch_plan
from inferplan.errors import InvalidScenarioError
from inferplan.inputs.deployment import Deployment
from inferplan.inputs.workload import Workload
from inferplan.memory.fit import fit
from inferplan.performance.serving import estimate
from inferplan.search.request import SearchRequest, Targets
from inferplan.search.run import search
from inferplan.shells.cli import app

GPT_OSS = dict(model="gpt-oss-20b", engine="trtllm", max_model_len=8192)


def _options(command) -> dict:
    return yaml.safe_load(command.files[0].text) if command.files else {}


@pytest.mark.parametrize("gpu", ["H100", "H200"])
def test_gpt_oss_on_hopper_launches_on_the_triton_moe_backend(catalog, gpu):
    command = launch_command(Deployment(**GPT_OSS, gpu=gpu), catalog)
    options = _options(command)
    assert options["moe_config"] == {"backend": "TRITON"}  # flags-trtllm-gptoss-readme: recommended on Hopper
    assert set(options) <= set(engine_flags(catalog, "trtllm").options_file.accepted_keys)
    assert command.argv[-2:] == ("--extra_llm_api_options", "extra_llm_api_options.yaml")
    assert "backend: TRITON" in command.script and any("moe_config.backend" in n for n in command.notes)


def test_gpt_oss_on_blackwell_keeps_the_engines_default_moe_backend(catalog):
    command = launch_command(Deployment(**GPT_OSS, gpu="B200"), catalog)
    assert "moe_config" not in _options(command)
    assert not any("moe_config" in n for n in command.notes)


def test_a_model_without_mxfp4_experts_gets_no_moe_backend_on_hopper(catalog):
    command = launch_command(Deployment(model="llama-3.3-70b", gpu="H100", tensor_parallel_size=8, quantization="fp8",
                                        engine="trtllm", max_model_len=4096), catalog)
    assert "moe_config" not in _options(command)


def test_the_backend_is_written_in_the_kubernetes_configmap_too(catalog):
    from inferplan.deploy import kubernetes_manifest
    docs = list(yaml.safe_load_all(kubernetes_manifest(Deployment(**GPT_OSS, gpu="H100"), catalog)))
    config = next(doc for doc in docs if doc["kind"] == "ConfigMap")
    assert yaml.safe_load(config["data"]["extra_llm_api_options.yaml"])["moe_config"] == {"backend": "TRITON"}


@pytest.mark.parametrize("gpu", ["A100", "L40S", "RTX 4090"])
def test_trtllm_mxfp4_before_hopper_is_refused_by_fit_perf_and_deploy(catalog, gpu):
    d = Deployment(**GPT_OSS, gpu=gpu, gpus=4)
    for plan in (lambda: fit(d, catalog), lambda: estimate(d, Workload(), catalog),
                 lambda: launch_plan(d, catalog)):
        with pytest.raises(InvalidScenarioError) as e:
            plan()
        assert e.value.field == "gpu" and "mxfp4" in str(e.value) and "es-trtllm-moe-backend-matrix" in str(e.value)
        assert "vllm" in e.value.allowed and "llamacpp" in e.value.allowed and "hopper" in e.value.allowed
        assert "ampere" not in e.value.allowed and "ada" not in e.value.allowed


def test_the_cli_refuses_it_naming_the_gpu():
    r = CliRunner().invoke(app, ["deploy", "--model", "gpt-oss-20b", "--gpu", "A100", "--engine", "trtllm"])
    assert r.exit_code == 2 and "--gpu" in r.output and "hopper" in r.output and "trtllm-serve" not in r.output


def test_vllm_still_runs_mxfp4_on_ampere_and_trtllm_on_hopper_with_the_fallback_label(catalog):
    assert fit(Deployment(**{**GPT_OSS, "engine": "vllm"}, gpu="A100"), catalog).memory_rule_id
    plan = fit(Deployment(**GPT_OSS, gpu="H100"), catalog)
    assert any("bf16 fallback" in a for a in plan.assumptions)  # W4A16 on Hopper, as labelled


def test_the_refusal_names_a_format_whatever_the_model():
    refusal = GpuRefusal(id="x", engine="trtllm", quantization="mxfp4", gpu_architectures=("ampere",),
                         sources=("s",), checked="2026-12-06", kind="spec")
    assert refusal.applies("trtllm", None, "GptOssForCausalLM", "ampere", "mxfp4")
    assert refusal.applies("trtllm", "1.0.0", "AnyForCausalLM", "ampere", "mxfp4")
    assert not refusal.applies("trtllm", None, "GptOssForCausalLM", "ampere", "bf16")
    assert not refusal.applies("trtllm", None, "GptOssForCausalLM", "hopper", "mxfp4")
    assert not refusal.applies("vllm", None, "GptOssForCausalLM", "ampere", "mxfp4")
    with pytest.raises(ValueError):
        GpuRefusal(id="x", engine="trtllm", gpu_architectures=("ampere",), sources=("s",), checked="2026-12-06",
                   kind="spec")


def test_search_lists_the_refused_family_with_its_reason_and_never_picks_it(catalog):
    req = SearchRequest(models=("gpt-oss-20b",), accelerators=("a100-80gb", "h100-sxm"), engines=("trtllm",),
                        max_gpus=2, request_rate_per_s=1.0, input_len=1000, output_len=200,
                        targets=Targets(ttft_p95_s=5.0), speculative=False, disaggregated=False)
    res = search(req, catalog)
    assert res.results and all(r.accelerator != "a100-80gb" for r in res.results)
    refused = [x for x in res.infeasible if "a100" in x.platform]
    assert refused and all(x.reason == "engine" and "mxfp4" in x.message for x in refused)


def test_a_model_the_catalogue_cannot_resolve_still_gets_a_command_without_a_moe_backend(catalog):
    command = launch_command(Deployment(model="someorg/some-model", gpu="H100", engine="trtllm"), catalog)
    assert command.argv[:2] == ("trtllm-serve", "someorg/some-model") and "moe_config" not in _options(command)


def test_the_api_refuses_it_naming_the_field_and_what_is_allowed():
    from fastapi.testclient import TestClient
    from inferplan.shells.api import create_app
    r = TestClient(create_app()).post("/api/fit", json={"model": "gpt-oss-20b", "gpu": "L40S", "engine": "trtllm"})
    assert r.status_code == 422 and r.json()["error"]["field"] == "gpu"
    assert "vllm" in r.json()["error"]["allowed"] and "hopper" in r.json()["error"]["allowed"]
