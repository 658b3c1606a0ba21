"""The first engine release that loads a model's architecture or weight format (engine_support.yaml,
catalog/engine_support.py): a plan pinned to an older release is refused naming engine_version (the
architecture) or quantization (the format) and the release that loads it, by fit, perf, deploy and plan
alike; every memory record and every catalogue model at its engine's default release passes."""

import dataclasses

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from inferplan.catalog.engine_support import check_engine_loads, check_engine_support, loading_release, unsupported
from inferplan.catalog.loader import load_catalog
from inferplan.catalog.memory_rules import current_release
from inferplan.catalog.registry import Registry
from inferplan.errors import CatalogError, InvalidScenarioError, UnsupportedSettingError
from inferplan.inputs.deployment import Deployment
from inferplan.memory.fit import fit
from inferplan.memory.resolve import resolve_model
from inferplan.shells.api import create_app
from inferplan.shells.cli import app
from inferplan.validation.memory import planned_record_release
from inferplan.validation.speed import check_point, point_scenario

CATALOG = load_catalog()
runner = CliRunner()


def _fit(catalog=CATALOG, **kw):
    return fit(Deployment(**{"model": "qwen3-32b", "gpu": "H100", "max_model_len": 8192, **kw}), catalog)


def _with_floors(floors) -> object:
    return dataclasses.replace(CATALOG, engine_support=Registry("engine support", {f.id: f for f in floors}))


def test_qwen3_on_a_vllm_release_before_qwen3_is_refused_naming_engine_version_and_the_floor():
    with pytest.raises(InvalidScenarioError) as e:
        _fit(engine_version="0.5.4")
    assert e.value.field == "engine_version"
    assert "0.8.4" in e.value.allowed and "Qwen3ForCausalLM" in e.value.allowed  # sourced: es-vllm-issue17327-qwen3
    assert "vLLM 0.5.4 cannot load Qwen3ForCausalLM" in str(e.value)


def test_qwen3_at_the_first_release_that_loads_it_is_planned():
    assert _fit(engine_version="0.8.4").memory_rule_id
    assert _fit(engine_version="V0 0.8.4").memory_rule_id  # a variant named with the release


def test_the_architecture_is_named_before_the_format_when_both_are_too_new():
    with pytest.raises(InvalidScenarioError) as e:
        _fit(engine_version="0.5.4", quantization="fp8-block")
    assert e.value.field == "engine_version"


def test_a_format_floor_refuses_naming_quantization():
    # Qwen3's dense FP8 checkpoints load from 0.8.5 (es-vllm-issue17327-qwen3)
    with pytest.raises(InvalidScenarioError) as e:
        _fit(engine_version="0.8.4", quantization="fp8-block")
    assert e.value.field == "quantization" and "0.8.5" in e.value.allowed
    assert _fit(engine_version="0.8.5", quantization="fp8-block").memory_rule_id
    # block-wise FP8 on any architecture: from 0.6.6 (es-dsv3-issue901-fp8)
    llama = {"model": "llama-3.1-8b", "quantization": "fp8-block"}
    with pytest.raises(InvalidScenarioError) as e:
        _fit(engine_version="0.6.5", **llama)
    assert e.value.field == "quantization" and "0.6.6" in e.value.allowed
    assert _fit(engine_version="0.6.6", **llama).memory_rule_id


def test_a_release_is_refused_only_by_its_own_engine():
    assert not unsupported(CATALOG, "sglang", "0.4.0", "Qwen3ForCausalLM", "bf16")
    assert unsupported(CATALOG, "sglang", "0.4.0", "DeepseekV3ForCausalLM", "fp8-block")


def test_the_check_follows_the_data():
    floors = list(CATALOG.engine_support)
    without = [f for f in floors if f.id != "vllm-qwen3"]
    assert _fit(_with_floors(without), engine_version="0.5.4").memory_rule_id
    later = [f.model_copy(update={"first_release": "0.9.0"}) if f.id == "vllm-qwen3" else f for f in floors]
    with pytest.raises(InvalidScenarioError) as e:
        _fit(_with_floors(later), engine_version="0.8.4")
    assert "0.9.0" in e.value.allowed


def test_a_floor_for_an_unknown_quantization_or_twice_the_same_subject_is_a_catalogue_error():
    floors = list(CATALOG.engine_support)
    bad = floors[0].model_copy(update={"id": "bad", "quantization": "no-such-format"})
    with pytest.raises(CatalogError, match="unknown quantization"):
        check_engine_support(_with_floors([*floors, bad]))
    twice = floors[0].model_copy(update={"id": "twice"})
    with pytest.raises(CatalogError, match="same subject"):
        check_engine_support(_with_floors([*floors, twice]))


@pytest.mark.parametrize("point", list(CATALOG.memory_points), ids=lambda p: p.id)
def test_every_memory_record_ran_a_release_that_loads_its_model(point):
    check_engine_loads(CATALOG, point.engine, planned_record_release(point, CATALOG), _hf_architecture(point.model),
                       point.quantization)


def _hf_architecture(model: str) -> str | None:
    arch = resolve_model(CATALOG, model).architecture
    return arch and arch.hf_architecture


def _default_cases():
    for card in CATALOG.models:
        arch = _hf_architecture(card.id)
        quantizations = {"bf16", *(c.quantization for c in card.checkpoints)}
        for engine in card.serving_engines:
            current = current_release(CATALOG, engine)
            if current is not None:
                for q in sorted(quantizations):
                    yield card.id, engine, current.release, arch, q


@pytest.mark.parametrize(("model", "engine", "release", "arch", "quantization"), list(_default_cases()))
def test_every_catalogue_model_loads_at_its_engines_default_release(model, engine, release, arch, quantization):
    check_engine_loads(CATALOG, engine, release, arch, quantization)


def test_the_cli_refuses_a_deploy_pinned_before_the_model():
    r = runner.invoke(app, ["deploy", "--model", "qwen3-32b", "--gpu", "H100", "--quantization", "fp8-block",
                            "--engine-version", "0.5.4"])
    assert r.exit_code == 2 and "--engine-version" in r.output and "0.8.4" in r.output
    assert "vllm serve" not in r.output


def test_the_api_refuses_a_fit_pinned_before_the_model():
    r = TestClient(create_app()).post("/api/fit", json={"model": "qwen3-32b", "gpu": "H100", "engine_version": "0.5.4"})
    assert r.status_code == 422
    assert r.json()["error"]["field"] == "engine_version" and "0.8.4" in r.json()["error"]["allowed"]


def test_llama_cpp_floors_are_build_numbers():
    gguf = {"model": "qwen3-8b", "gpu": "RTX4090", "engine": "llamacpp", "quantization": "gguf-q4_k_m"}
    with pytest.raises(InvalidScenarioError) as e:
        _fit(engine_version="b5000", **gguf)
    assert e.value.field == "engine_version" and "b5092" in e.value.allowed  # sourced: es-llmfarm-issue126-qwen3
    assert _fit(engine_version="b5092", **gguf).memory_rule_id
    assert _fit(**gguf).memory_rule_id  # no release stated: llama.cpp has no current release to default to


def test_a_scenario_pinned_before_its_model_is_refused_by_plan(tmp_path):
    scenario = tmp_path / "s.yaml"
    scenario.write_text('model: gpt-oss-120b\nengine_version: "0.10.0"\nplatform: {system: hgx-h100}\n'
                        'workload: {preset: chat-seat}\ntarget_users: 2000\n')
    r = runner.invoke(app, ["plan", str(scenario), "--draws", "0"])
    assert r.exit_code == 2 and "engine_version" in r.output and "0.10.1" in r.output  # es-arctic-pr170-gptoss


def _dsv4(**kw):
    return fit(Deployment(**{"model": "deepseek-v4-flash", "max_model_len": 65536, **kw}), CATALOG)


@pytest.mark.parametrize("quantization", [None, "fp8-block", "bf16", "mxfp4"])
def test_deepseek_v4_on_hopper_with_trtllm_is_refused_whatever_the_format(quantization):
    # TensorRT-LLM's DeepSeek-V4 README (q-trtllm-dsv4-blackwell-only): Blackwell only, pre-Blackwell not
    with pytest.raises(InvalidScenarioError) as e:
        _dsv4(gpu="H200", gpus=8, engine="trtllm", quantization=quantization)
    assert e.value.field == "gpu" and "whatever the checkpoint's format" in str(e.value)
    assert "vllm" in e.value.allowed and "blackwell" in e.value.allowed and "hopper" not in e.value.allowed


def test_deepseek_v4_on_blackwell_with_trtllm_is_planned():
    assert _dsv4(gpu="B200", gpus=8, engine="trtllm").memory_rule_id


def test_deepseek_v4_on_ampere_with_vllm_is_refused_naming_the_gpu_and_what_remains():
    # no vLLM release to 0.34.0 has a sparse-attention back end for compute capability 8.x (vllm#50576, #40851)
    with pytest.raises(InvalidScenarioError) as e:
        _dsv4(gpu="A100", gpus=4)
    assert e.value.field == "gpu" and "A100" in str(e.value)
    assert "hopper" in e.value.allowed and "ampere" not in e.value.allowed and "vllm" not in e.value.allowed.split(";")[0]
    assert _dsv4(gpu="H200", gpus=4).memory_rule_id  # Hopper runs it


def test_a_gpu_refusal_holds_only_over_its_release_range():
    refusal = CATALOG.gpu_refusals.records["vllm-deepseek-v4-pre-hopper"]
    assert refusal.applies("vllm", "0.31.0", "DeepseekV4ForCausalLM", "ampere")
    assert refusal.applies("vllm", None, "DeepseekV4ForCausalLM", "ada")
    assert refusal.applies("vllm", "0.34.0", "DeepseekV4ForCausalLM", "ampere")
    assert not refusal.applies("vllm", "0.35.0", "DeepseekV4ForCausalLM", "ampere")
    assert not refusal.applies("vllm", "0.31.0", "DeepseekV4ForCausalLM", "hopper")
    refusal = CATALOG.gpu_refusals.records["trtllm-deepseek-v4-pre-blackwell"]
    assert refusal.applies("trtllm", "1.3.0rc23", "DeepseekV4ForCausalLM", "hopper")
    assert refusal.applies("trtllm", None, "DeepseekV4ForCausalLM", "ampere")
    assert not refusal.applies("trtllm", "1.4.0", "DeepseekV4ForCausalLM", "hopper")
    assert not refusal.applies("trtllm", "1.3.0", "DeepseekV4ForCausalLM", "blackwell")


@pytest.mark.parametrize("release", ["0.19.1", "0.8.5"])
def test_deepseek_v4_on_a_vllm_release_before_its_registry_entry_is_refused(release):
    # DeepseekV4ForCausalLM is in the model registry from 0.20.0, not at 0.19.1 (es-vllm-wheels-dsv4-registry)
    with pytest.raises(InvalidScenarioError) as e:
        _dsv4(gpu="H100", gpus=8, engine_version=release)
    assert e.value.field == "engine_version" and "0.20.0" in e.value.allowed
    assert f"vLLM {release} cannot load DeepseekV4ForCausalLM" in str(e.value)
    assert _dsv4(gpu="H100", gpus=8, engine_version="0.20.0").memory_rule_id


def test_the_cli_refuses_deepseek_v4_at_vllm_0_19_1_naming_engine_version():
    r = runner.invoke(app, ["fit", "--model", "deepseek-v4-flash", "--gpu", "h100-sxm", "--gpus", "8", "--engine",
                            "vllm", "--engine-version", "0.19.1"])
    assert r.exit_code == 2 and "--engine-version" in r.output and "0.20.0" in r.output


def test_speed_points_are_planned_at_a_release_that_loads_their_model():
    # points without a release are planned at 0.11.0's memory rule; DeepSeek-V4 at 0.20.0, never refused
    v4 = [p for p in CATALOG.speed_points if p.engine == "vllm" and p.model.startswith("deepseek-v4")]
    assert v4
    for p in v4:
        assert point_scenario(p, CATALOG)[0].engine_version == "0.20.0", p.id
        assert check_point(p, CATALOG).predicted is not None, p.id
    other = next(p for p in CATALOG.speed_points if p.engine == "vllm" and p.model == "llama-3.1-8b")
    assert point_scenario(other, CATALOG)[0].engine_version == "0.11.0"
    assert loading_release(CATALOG, "vllm", None, "DeepseekV4ForCausalLM", "mixed-fp4-fp8") is None


@pytest.mark.parametrize("gpu", ["gb10", "jetson-agx-thor"])
def test_sglang_reading_nvidia_smi_memory_total_is_refused_on_an_integrated_gpu(gpu):
    # 0.3.5.post2-0.4.7 parse nvidia-smi memory.total, [N/A] on an integrated GPU: "No GPU memory values found."
    for release in ("0.3.5.post2", "0.4.6", "0.4.6.post5"):
        with pytest.raises(UnsupportedSettingError) as refused:
            fit(Deployment(model="qwen3-8b", gpu=gpu, engine="sglang", engine_version=release))
        assert refused.value.field == "engine_version" and "before 0.3.5.post2 or after 0.4.7" in refused.value.allowed
    for release in ("0.3.5.post1", "0.5.3"):  # reads no GPU memory; falls back to torch.cuda.mem_get_info()
        assert fit(Deployment(model="qwen3-8b", gpu=gpu, engine="sglang", engine_version=release)).fits
    assert fit(Deployment(model="qwen3-8b", gpu="h100-sxm", engine="sglang", engine_version="0.4.6")).fits
