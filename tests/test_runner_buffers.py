"""Model Runner V2's penalty arrays (engine_memory_rules.yaml model_runners.v2_buffers) and the extensible KV cache's
granule rounding and ROCm fallback (measured_sizing): each a sourced term the plan applies, noticed when unwired."""

import shutil

import pytest
import yaml
from typer.testing import CliRunner

from inferplan.catalog.loader import DATA_DIR, load_catalog, load_files
from inferplan.catalog.memory_rules import memory_rule
from inferplan.inputs.deployment import Deployment
from inferplan.memory.fit import fit, plan_memory
from inferplan.memory.startup import startup_check, startup_fix
from inferplan.shells.cli import app

CATALOG = load_catalog()
RULES = DATA_DIR / "engine_memory_rules.yaml"
GiB, MiB = 2**30, 2**20
# v1/worker/gpu/sample/penalties.py (mr-vllm-wheels-mrv2-penalties): output_bin_counts, an int32 per slot and token,
# and prompt_bin_mask, an int32 per 32 tokens of a slot, for max_num_seqs slots
LLAMA_ARRAYS = 1024 * 128_256 * (4 + 4 / 32)


def _unwired(tmp_path, edit):
    data = yaml.safe_load(RULES.read_text())
    for rule in data["memory_rules"]:
        edit(rule)
    folder = tmp_path / "data"
    shutil.copytree(DATA_DIR, folder)
    (folder / RULES.name).write_text(yaml.safe_dump(data, sort_keys=False))
    return load_files(sorted(folder.glob("**/*.yaml")), data_dir=folder)


def _without(key: str, block: str):
    return lambda rule: (rule.get(block) or {}).pop(key, None)


def _fit(catalog=CATALOG, model="llama-3.1-8b", gpu="H100", **kw):
    return fit(Deployment(model=model, gpu=gpu, **{"max_model_len": 16384, **kw}), catalog)


@pytest.mark.parametrize("release", ["0.27.0", "0.33.0", "0.34.0"])
def test_model_runner_v2_penalty_arrays_count_against_the_fraction_from_0_27(tmp_path, release):
    unwired = _unwired(tmp_path, _without("v2_buffers", "model_runners"))
    wired, bare = _fit(engine_version=release), _fit(unwired, engine_version=release)
    assert wired.model_runner == "V2"
    assert wired.overhead_bytes_per_gpu - bare.overhead_bytes_per_gpu == pytest.approx(LLAMA_ARRAYS)
    assert bare.kv_cache_bytes_per_gpu - wired.kv_cache_bytes_per_gpu == pytest.approx(LLAMA_ARRAYS, abs=80 * 2 * MiB)
    assert any("output_bin_counts and prompt_bin_mask for max_num_seqs 1,024 × vocab 128,256" in a
               for a in wired.assumptions)


def test_the_penalty_arrays_follow_max_num_seqs_and_leave_model_runner_v1_alone():
    few, many = _fit(engine_version="0.33.0", max_num_seqs=64), _fit(engine_version="0.33.0")
    assert many.overhead_bytes_per_gpu - few.overhead_bytes_per_gpu == pytest.approx(LLAMA_ARRAYS * (1 - 64 / 1024))
    v1 = _fit(engine_version="0.33.0", model_runner="V1")
    assert v1.overhead_bytes_per_gpu == pytest.approx(many.overhead_bytes_per_gpu - LLAMA_ARRAYS)


def test_before_0_27_the_penalty_arrays_are_outside_the_fraction_and_the_start_up_headroom_holds_them(tmp_path):
    # 0.26's profile counts weights + torch peak increase + non-torch increase: the arrays, built before it, in none
    unwired = _unwired(tmp_path, _without("v2_buffers", "model_runners"))
    wired, bare = _fit(engine_version="0.26.0"), _fit(unwired, engine_version="0.26.0")
    assert wired.model_runner == "V2" and wired.kv_cache_bytes_per_gpu == bare.kv_cache_bytes_per_gpu
    d = Deployment(model="llama-3.1-8b", gpu="H100", max_model_len=16384, engine_version="0.26.0")
    checks = []
    for catalog in (CATALOG, unwired):
        plan, rule = plan_memory(d, catalog), memory_rule(catalog, "vllm", "0.26.0")
        checks.append(startup_check(catalog, rule, plan.settings, plan.spec.architecture, plan.result.gpu_memory_bytes, 1))
    assert checks[0].needed_bytes_per_gpu - checks[1].needed_bytes_per_gpu == pytest.approx(LLAMA_ARRAYS)
    # the most sequences the headroom holds pays for a slot of the arrays as well as a row of the sampler warm-up
    assert startup_fix(checks[0], plan.result.gpu_memory_bytes).max_num_seqs < \
        startup_fix(checks[1], plan.result.gpu_memory_bytes).max_num_seqs


def test_the_extensible_kv_cache_keeps_whole_granules_of_every_layer_s_segment(tmp_path):
    unwired = _unwired(tmp_path, _without("granule_bytes", "measured_sizing"))
    kw = dict(model="llama-3.3-70b", quantization="fp8", engine_version="0.34.0")
    wired, bare = _fit(**kw), _fit(unwired, **kw)
    step = 80 * 2 * MiB  # 80 layers, each its own segment, mapped in 2 MiB granules (mr-vllm-wheel-0340-vmm-granule)
    assert wired.kv_cache_bytes_per_gpu % step == 0
    assert 0 <= bare.kv_cache_bytes_per_gpu - wired.kv_cache_bytes_per_gpu < step
    assert bare.kv_cache_bytes_per_gpu % step != 0  # the case rounds something off
    assert any("each of the 80 layers' segments is mapped in 2 MiB granules" in a for a in wired.assumptions)
    # before 0.34 (no extensible cache) nothing is rounded to granules
    assert not any("granules" in a for a in _fit(**{**kw, "engine_version": "0.33.0"}).assumptions)


def test_the_granules_count_the_layers_of_the_fullest_pipeline_stage():
    r = fit(Deployment(model="llama-3.3-70b", system="hgx-h100", pipeline_parallel_size=2, tensor_parallel_size=1,
                       quantization="fp8", max_model_len=16384, engine_version="0.34.0"), CATALOG)
    assert r.kv_cache_bytes_per_gpu % (40 * 2 * MiB) == 0
    assert any("each of the 40 layers' segments" in a for a in r.assumptions)


def test_on_rocm_fit_states_the_kv_cache_of_the_hip_runtimes_that_fall_back(tmp_path):
    # mr-vllm-wheel-0340-hip-vmm: before TheRock 7.12 the HIP driver finds VMM unusable and vLLM sizes at 0.92
    r = _fit(model="llama-3.3-70b", gpu="mi300x", engine="vllm", engine_version="0.34.0")
    before = _fit(model="llama-3.3-70b", gpu="mi300x", engine="vllm", engine_version="0.33.0")
    note = next(a for a in r.assumptions if "TheRock 7.12" in a)
    assert "at a fraction of 0.92" in note
    assert f"{before.kv_cache_bytes_per_gpu / GiB:.2f} GiB of KV cache per GPU instead of " \
           f"{r.kv_cache_bytes_per_gpu / GiB:.2f} GiB" in note
    assert r.kv_cache_fallback_bytes_per_gpu == pytest.approx(before.kv_cache_bytes_per_gpu)
    assert r.kv_cache_fallback_note in note
    shown = CliRunner().invoke(app, ["fit", "--model", "llama-3.3-70b", "--gpu", "mi300x", "--engine", "vllm",
                                     "--max-model-len", "16384"], env={"COLUMNS": "400"})
    assert "KV cache fallback: on a HIP runtime" in shown.output and "TheRock 7.12" in shown.output
    stated = _fit(model="llama-3.3-70b", gpu="mi300x", engine="vllm", engine_version="0.34.0", gpu_memory_utilization=0.85)
    assert "at a fraction of 0.85" in next(a for a in stated.assumptions if "TheRock 7.12" in a)
    cuda = _fit(model="llama-3.3-70b", engine_version="0.34.0")
    assert not any("TheRock" in a for a in cuda.assumptions) and cuda.kv_cache_fallback_note is None
    unwired = _unwired(tmp_path, _without("runtime_fallbacks", "measured_sizing"))
    assert not any("TheRock" in a for a in _fit(unwired, model="llama-3.3-70b", gpu="mi300x", engine="vllm",
                                                 engine_version="0.34.0").assumptions)
