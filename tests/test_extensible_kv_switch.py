"""vLLM 0.34's switch of the extensible KV cache (Deployment.enable_extensible_kv_cache, --[no-]enable-extensible-kv-cache):
off, the plan is the budget vLLM falls back to (the profile estimate at 0.92 unless stated, no granule rounding), and
fit's fallback line goes; the refusals vLLM makes; the launch command and manifest carry the flag vLLM parses."""

import shutil

import pytest
import yaml
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from inferplan.catalog.loader import DATA_DIR, load_catalog, load_files
from inferplan.deploy import kubernetes_manifest, launch_command
from inferplan.deploy.command import engine_flags
from inferplan.errors import InvalidScenarioError
from inferplan.inputs.deployment import Deployment
from inferplan.memory.fit import fit
from inferplan.shells.api import create_app
from inferplan.shells.cli import app

CATALOG = load_catalog()
RULES = DATA_DIR / "engine_memory_rules.yaml"
FIELD = "enable_extensible_kv_cache"


def _fit(catalog=CATALOG, model="llama-3.3-70b", gpu="mi300x", **kw):
    return fit(Deployment(model=model, gpu=gpu, engine="vllm", **{"max_model_len": 16384, **kw}), catalog)


def _without_the_switch(tmp_path):
    """The catalogue with the switch's off_with entry taken out of vLLM 0.34's measured sizing."""
    data = yaml.safe_load(RULES.read_text())
    for rule in data["memory_rules"]:
        sized = rule.get("measured_sizing") or {}
        sized["off_with"] = [o for o in sized.get("off_with", []) if o["field"] != FIELD]
    folder = tmp_path / "data"
    shutil.copytree(DATA_DIR, folder)
    (folder / RULES.name).write_text(yaml.safe_dump(data, sort_keys=False))
    return load_files(sorted(folder.glob("**/*.yaml")), data_dir=folder)


def test_off_on_rocm_the_plan_is_the_fallback_budget_and_the_fallback_line_goes():
    on, off = _fit(), _fit(enable_extensible_kv_cache=False)
    assert on.kv_cache_fallback_bytes_per_gpu is not None and off.kv_cache_fallback_note is None
    assert off.kv_cache_bytes_per_gpu == pytest.approx(on.kv_cache_fallback_bytes_per_gpu)
    assert off.kv_cache_bytes_per_gpu < on.kv_cache_bytes_per_gpu
    assert off.usable_bytes_per_gpu == pytest.approx(0.92 * off.gpu_memory_bytes)
    assert any("--no-enable-extensible-kv-cache switches the extensible KV cache off" in a for a in off.assumptions)
    assert not any("granules" in a for a in off.assumptions) and any("granules" in a for a in on.assumptions)
    stated, stated_off = _fit(gpu_memory_utilization=0.85), _fit(gpu_memory_utilization=0.85, enable_extensible_kv_cache=False)
    assert stated_off.kv_cache_bytes_per_gpu == pytest.approx(stated.kv_cache_fallback_bytes_per_gpu)
    assert stated_off.usable_bytes_per_gpu == pytest.approx(0.85 * stated_off.gpu_memory_bytes)


def test_off_on_cuda_sizes_from_the_profile_at_0_92(tmp_path):
    on, off = _fit(gpu="H100", model="llama-3.1-8b"), _fit(gpu="H100", model="llama-3.1-8b", enable_extensible_kv_cache=False)
    assert off.usable_bytes_per_gpu == pytest.approx(0.92 * off.gpu_memory_bytes) != on.usable_bytes_per_gpu
    assert off.kv_cache_bytes_per_gpu < on.kv_cache_bytes_per_gpu
    unwired = _fit(_without_the_switch(tmp_path), gpu="H100", model="llama-3.1-8b", enable_extensible_kv_cache=False)
    assert unwired.kv_cache_bytes_per_gpu == pytest.approx(on.kv_cache_bytes_per_gpu)  # the data entry moves the plan


def test_on_is_vllm_s_default_and_a_rocm_runtime_may_still_turn_it_off():
    # v1/engine/core.py lines 308-313: a runtime without usable VMM turns it off even when it was asked for
    default, on = _fit(), _fit(enable_extensible_kv_cache=True)
    assert on.kv_cache_bytes_per_gpu == default.kv_cache_bytes_per_gpu
    assert on.kv_cache_fallback_note == default.kv_cache_fallback_note is not None


@pytest.mark.parametrize("kw, said", [
    (dict(engine="sglang"), "SGLang has no extensible KV cache"),
    (dict(engine="vllm", engine_version="0.33.0"), "vLLM at 0.33.0 has no extensible KV cache"),
    (dict(engine="vllm", gpu="M4 Max", model="llama-3.1-8b"), "only on cuda and rocm"),
    (dict(engine="vllm", kv_offloading_size=64, kv_offloading_backend="lmcache", host_memory_gb=512),
     "with kv_offloading_backend lmcache"),
])
def test_the_switch_is_refused_where_vllm_refuses_it(kw, said):
    d = {"model": "llama-3.3-70b", "gpu": "mi300x", "max_model_len": 16384, **kw}
    with pytest.raises(InvalidScenarioError, match=said) as refused:
        fit(Deployment(**d, enable_extensible_kv_cache=True), CATALOG)
    assert refused.value.field == FIELD and "leave it out" in refused.value.allowed
    if kw.get("engine") == "sglang" or "engine_version" in kw:  # no switch at all there: off is refused too
        with pytest.raises(InvalidScenarioError, match=said):
            launch_command(Deployment(**d, enable_extensible_kv_cache=False), CATALOG)
    else:  # off is what vLLM does there anyway
        assert fit(Deployment(**d, enable_extensible_kv_cache=False), CATALOG).kv_cache_bytes_per_gpu == \
            pytest.approx(fit(Deployment(**d), CATALOG).kv_cache_bytes_per_gpu)


def test_fit_names_the_flag_and_drops_the_fallback_line():
    args = ["fit", "--model", "llama-3.3-70b", "--gpu", "mi300x", "--max-model-len", "16384"]
    default = CliRunner().invoke(app, args, env={"COLUMNS": "400"})
    off = CliRunner().invoke(app, [*args, "--no-enable-extensible-kv-cache"], env={"COLUMNS": "400"})
    assert "KV cache fallback:" in default.output and "KV cache fallback:" not in off.output
    refused = CliRunner().invoke(app, [*args, "--engine", "sglang", "--no-enable-extensible-kv-cache"], env={"COLUMNS": "400"})
    assert refused.exit_code != 0 and "error: --enable-extensible-kv-cache:" in refused.output


@pytest.mark.parametrize("wanted, flag", [(True, "--enable-extensible-kv-cache"), (False, "--no-enable-extensible-kv-cache")])
def test_the_launch_and_the_manifest_carry_the_flag_vllm_parses(wanted, flag):
    d = Deployment(model="llama-3.3-70b", gpu="mi300x", max_model_len=16384, enable_extensible_kv_cache=wanted)
    command, flags = launch_command(d, CATALOG), engine_flags(CATALOG, "vllm")
    assert flag in command.argv and flag in flags.accepts() and flags.later(flag).version == "0.34.0"
    assert command.flags_checked_against == "0.34.0"
    assert f"{flag}: needs vllm 0.34.0 or later" in command.notes
    assert flag in kubernetes_manifest(d, CATALOG)
    unstated = launch_command(d.model_copy(update={FIELD: None}), CATALOG)
    assert not any("extensible" in a for a in unstated.argv)


def test_the_api_takes_the_field(tmp_path):
    client = TestClient(create_app(tmp_path / "test.db"))
    body = {"model": "llama-3.3-70b", "gpu": "mi300x", "max_model_len": 16384}
    on, off = (client.post("/api/fit", json={**body, FIELD: v}).json() for v in (None, False))
    assert off["kv_cache_bytes_per_gpu"] == pytest.approx(on["kv_cache_fallback_bytes_per_gpu"])
    assert off["kv_cache_fallback_note"] is None
    refused = client.post("/api/fit", json={**body, FIELD: True, "engine": "sglang"})
    assert refused.status_code == 422 and refused.json()["detail"][0]["loc"] == ["body", FIELD]


def test_off_cuda_and_rocm_vllm_0_34_sizes_as_before_and_refuses_the_switch():
    # config/vllm.py line 3201: only a CUDA-alike platform (CUDA, ROCm) has the extensible KV cache
    gaudi = _fit(gpu="gaudi3", model="llama-3.1-8b")
    assert gaudi.usable_bytes_per_gpu == pytest.approx(0.92 * gaudi.gpu_memory_bytes)
    assert _fit(gpu="gaudi3", model="llama-3.1-8b", enable_extensible_kv_cache=False).kv_cache_bytes_per_gpu == \
        pytest.approx(gaudi.kv_cache_bytes_per_gpu)
    with pytest.raises(InvalidScenarioError, match="only on cuda and rocm"):
        _fit(gpu="gaudi3", model="llama-3.1-8b", enable_extensible_kv_cache=True)


@pytest.mark.parametrize("role", ["prefill", "decode"])
def test_a_rocm_pool_over_nixl_refuses_the_switch_on_and_a_cuda_pool_takes_it(role):
    # config/vllm.py lines 3231-3238: on ROCm a connector that registers the cache (NIXL) cannot use it
    rocm = Deployment(model="llama-3.3-70b", gpu="mi300x", max_model_len=16384, enable_extensible_kv_cache=True)
    with pytest.raises(InvalidScenarioError, match="with NixlConnector on AMD Instinct MI300X") as refused:
        launch_command(rocm, CATALOG, role=role)
    assert refused.value.field == FIELD
    assert "--no-enable-extensible-kv-cache" in launch_command(rocm.model_copy(update={FIELD: False}), CATALOG, role=role).argv
    cuda = rocm.model_copy(update={"gpu": "H100", "model": "llama-3.1-8b"})
    assert "--enable-extensible-kv-cache" in launch_command(cuda, CATALOG, role=role).argv


def test_a_suggested_command_keeps_the_stated_off_switch():
    from inferplan.shells.render import command_line

    d = Deployment(model="llama-3.3-70b", gpu="mi300x", max_model_len=16384, enable_extensible_kv_cache=False)
    assert "--no-enable-extensible-kv-cache" in command_line("fit", d, {}).split()
    assert "--enable-expert-parallel" in command_line("fit", d.model_copy(update={"enable_expert_parallel": True}), {}).split()
    args = ["fit", "--model", "qwen3-32b", "--gpu", "rtx-4090", "--no-enable-extensible-kv-cache"]
    shown = CliRunner().invoke(app, args, env={"COLUMNS": "400"}).output
    offers = [line for line in shown.splitlines() if line.strip().startswith("inferplan fit")]
    assert offers and all("--no-enable-extensible-kv-cache" in line for line in offers if "--engine" not in line)


def test_the_switch_s_help_says_where_its_default_is_off_as_the_field_does():
    # a NixlConnector pool is planned off on ROCm (vLLM refuses the cache there) and on CUDA with no IMEX channel
    from inferplan.shells.cli_flags import FLAGS

    field = " ".join(Deployment.model_fields[FIELD].description.split())
    shown = " ".join(FLAGS[FIELD][1].help.split())
    for said in (field, shown):
        default = said[said.index("(default:"):]
        assert "NixlConnector pool on ROCm and on CUDA with no IMEX channel" in default, said


def test_the_cli_refusal_beside_lmcache_names_the_backend_s_flag():
    args = ["deploy", "--model", "llama-3.3-70b", "--gpu", "mi300x", "--max-model-len", "16384", "--engine", "vllm",
            "--kv-offloading-size", "64", "--kv-offloading-backend", "lmcache", "--enable-extensible-kv-cache"]
    refused = CliRunner().invoke(app, args, env={"COLUMNS": "400"})
    assert refused.exit_code != 0
    assert "with --kv-offloading-backend lmcache" in refused.output and "leave --kv-offloading-backend out" in refused.output
    assert "kv_offloading_backend" not in refused.output
