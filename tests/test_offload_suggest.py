"""The weight offload ``fit`` suggests when a deployment does not fit (memory/offload_suggest.py):
the suggested command fits when run, it is the least offload that fits the GPU, and when the host RAM
cannot hold even that, the answer says so instead."""

from __future__ import annotations

import json
import shlex

import pytest
from hypothesis import given, settings, strategies as st
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from inferplan.inputs.deployment import Deployment
from inferplan.memory.fit import fit
from inferplan.memory.context_steps import CONTEXT_STEP_TOKENS
from inferplan.memory.offload_suggest import UNBOUNDED_HOST_GB, context_floor
from inferplan.memory.suggest import fit_or_suggest
from inferplan.shells.api import create_app
from inferplan.shells.cli import app

LLAMACPP_Q4 = dict(engine="llamacpp", quantization="gguf-q4_k_m")
# deployments that do not fit -> the offload setting(s) the suggestion must state
CASES = {
    "MoE on llama.cpp: experts of the first N layers": (
        dict(model="qwen3-30b-a3b", gpu="rtx-4080", **LLAMACPP_Q4, host_memory_gb=64), {"n_cpu_moe"}),
    "MoE on llama.cpp, host RAM unstated": (
        dict(model="gpt-oss-120b", gpu="rtx-5090", engine="llamacpp"), {"n_cpu_moe", "host_memory_gb"}),
    "dense on llama.cpp: layers on the GPU": (
        dict(model="llama-3.1-70b", gpu="rtx-4090", **LLAMACPP_Q4, host_memory_gb=64), {"n_gpu_layers"}),
    "MoE too big for expert offload alone: every expert and some layers": (
        dict(model="qwen3-30b-a3b", gpu="rtx-3070", **LLAMACPP_Q4, max_model_len=131072, host_memory_gb=64),
        {"n_cpu_moe", "n_gpu_layers"}),
    "vLLM: GiB of weights per GPU": (
        dict(model="llama-3.1-70b", gpu="L40S", max_model_len=8192, host_memory_gb=256), {"cpu_offload_gb"}),
    "vLLM, tensor parallel": (
        dict(model="llama-3.1-70b", gpu="L40S", tensor_parallel_size=2, max_model_len=32768, host_memory_gb=256),
        {"cpu_offload_gb"}),
}


def _offload(r):
    found = [s for s in r.suggestions if s.kind == "offload" and "engine" not in s.changes]  # the asked engine's
    assert len(found) <= 1
    return found[0] if found else None


@pytest.mark.parametrize("case", CASES)
def test_the_suggested_offload_fits_when_run(catalog, case):
    fields, stated = CASES[case]
    d = Deployment(**fields)
    r = fit_or_suggest(d, catalog)
    assert not r.fits
    s = _offload(r)
    assert s is not None, r.offload_note
    assert {k for k, v in s.changes.items() if v is not None} == stated
    after = fit(d.model_copy(update=s.changes), catalog)
    assert after.fits and after.host_memory_bytes_used <= after.host_memory_budget_bytes


def _gpu_fits(d: Deployment, catalog, **changes) -> bool:
    return fit(d.model_copy(update={**changes, "host_memory_gb": UNBOUNDED_HOST_GB}), catalog).fits


@pytest.mark.parametrize("case", CASES)
def test_the_suggestion_is_the_least_offload_that_fits_the_gpu(catalog, case):
    """One step less offload (one expert layer, one GiB fewer in host RAM; one layer more on the GPU)
    no longer fits: the search found the edge, not merely a setting that fits."""
    d = Deployment(**CASES[case][0])
    c = _offload(fit_or_suggest(d, catalog)).changes
    if c.get("n_gpu_layers") is not None:
        assert not _gpu_fits(d, catalog, n_cpu_moe=c.get("n_cpu_moe"), n_gpu_layers=c["n_gpu_layers"] + 1)
    elif c.get("n_cpu_moe") is not None:
        assert not _gpu_fits(d, catalog, n_cpu_moe=c["n_cpu_moe"] - 1)
    else:
        assert not _gpu_fits(d, catalog, cpu_offload_gb=c["cpu_offload_gb"] - 1)


def test_the_printed_command_says_it_fits_when_run():
    """The line ``fit`` prints under the offload suggestion, run as it is printed."""
    runner = CliRunner()
    shown = runner.invoke(app, ["fit", "--model", "gpt-oss-120b", "--gpu", "RTX 5090", "--engine", "llamacpp"])
    assert shown.exit_code == 1, shown.output  # fit's status for "does not fit", with what would
    lines = [ln.strip() for ln in shown.stdout.splitlines() if ln.strip().startswith("inferplan fit")]
    offload = [ln for ln in lines if "--n-cpu-moe" in ln]
    assert len(offload) == 1 and "--host-memory-gb" in offload[0]
    run = runner.invoke(app, [*shlex.split(offload[0])[1:], "--json"])
    assert run.exit_code == 0, run.output
    assert json.loads(run.stdout)["fits"] is True


def test_host_ram_too_small_for_any_offload_is_said_instead(catalog):
    d = Deployment(model="qwen3-30b-a3b", gpu="rtx-3070", **LLAMACPP_Q4, host_memory_gb=8)
    r = fit_or_suggest(d, catalog)
    assert _offload(r) is None
    assert "host RAM" in r.offload_note and "8 GiB" in r.offload_note
    roomier = fit_or_suggest(d.model_copy(update={"host_memory_gb": 64}), catalog)
    assert _offload(roomier) is not None and roomier.offload_note is None


def test_no_offload_is_suggested_where_there_is_no_separate_host_ram_or_no_weight_offload(catalog):
    unified = fit_or_suggest(Deployment(model="deepseek-v3", gpu="m4-max", **LLAMACPP_Q4, host_memory_gb=64), catalog)
    no_weight_offload = fit_or_suggest(Deployment(model="llama-3.1-70b", gpu="L40S", engine="trtllm"), catalog)
    for r in (unified, no_weight_offload):
        assert not r.fits and _offload(r) is None and r.offload_note is None


def test_sglang_gets_a_cpu_offload_gb_suggestion_in_its_own_name(catalog):
    r = fit_or_suggest(Deployment(model="llama-3.1-70b", gpu="L40S", engine="sglang", host_memory_gb=256), catalog)
    found = _offload(r)
    assert found is not None and "cpu_offload_gb" in found.changes and "SGLang --cpu-offload-gb" in found.summary


def test_a_deployment_that_fits_gets_no_offload_answer(catalog):
    r = fit_or_suggest(Deployment(model="llama-3.1-8b", gpu="H100"), catalog)
    assert r.fits and not r.suggestions and r.offload_note is None


def test_the_api_fit_json_carries_the_offload_suggestion_and_the_note(tmp_path):
    client = TestClient(create_app(tmp_path / "test.db"))
    fits = client.post("/api/fit", json=CASES["dense on llama.cpp: layers on the GPU"][0])
    assert fits.status_code == 200, fits.text
    offload = [s for s in fits.json()["suggestions"] if s["kind"] == "offload"]
    assert offload and offload[0]["changes"]["n_gpu_layers"] > 0
    short = client.post("/api/fit", json=dict(model="qwen3-30b-a3b", gpu="rtx-3070", **LLAMACPP_Q4, host_memory_gb=8))
    assert short.status_code == 200 and "host RAM" in short.json()["offload_note"]


@settings(max_examples=12, deadline=None)
@given(host_gb=st.integers(1, 160), more_gb=st.integers(1, 200),
       case=st.sampled_from(["MoE on llama.cpp: experts of the first N layers", "dense on llama.cpp: layers on the GPU",
                             "vLLM: GiB of weights per GPU"]))
def test_an_offload_answer_is_a_fitting_command_or_a_note_and_more_host_ram_never_loses_it(catalog, host_gb, more_gb, case):
    d = Deployment(**{**CASES[case][0], "host_memory_gb": host_gb})
    r = fit_or_suggest(d, catalog)
    s = _offload(r)
    assert (s is None) != (r.offload_note is None)
    if s is not None:
        assert fit(d.model_copy(update=s.changes), catalog).fits
        roomier = fit_or_suggest(d.model_copy(update={"host_memory_gb": host_gb + more_gb}), catalog)
        assert _offload(roomier).changes == s.changes  # the same least offload, still within the host


def test_where_one_sequence_overfills_the_gpu_the_offload_is_offered_at_the_longest_context_it_fits(catalog):
    """GLM-4.5-Air FP8 on one RTX 4090: at 131,072 tokens one sequence's KV cache (184 KiB a token, 23 GiB)
    alone is more than the GPU gives the engine, so every offload is found at a shorter context."""
    d = Deployment(model="glm-4.5-air", gpu="rtx-4090", quantization="fp8", host_memory_gb=128)
    r = fit_or_suggest(d, catalog)
    offload = next(s for s in r.suggestions if s.kind == "offload" and "engine" not in s.changes)
    assert r.offload_note is None
    tokens = offload.changes["max_model_len"]
    assert 0 < tokens < r.max_model_len and offload.changes["cpu_offload_gb"] > 0
    assert fit(d.model_copy(update=offload.changes), catalog).fits
    longer = {**offload.changes, "max_model_len": tokens + 256, "host_memory_gb": UNBOUNDED_HOST_GB}
    assert not fit(d.model_copy(update=longer), catalog).fits  # the longest context an offload fits
    kt = next(s for s in r.suggestions if s.changes.get("engine") == "ktransformers")
    assert 0 < kt.changes["max_model_len"] < r.max_model_len and fit(d.model_copy(update=kt.changes), catalog).fits


def test_where_no_context_leaves_room_in_the_host_the_note_gives_the_least_the_shortest_offered_context_needs(catalog):
    r = fit_or_suggest(Deployment(model="glm-4.5-air", gpu="rtx-4090", quantization="fp8", host_memory_gb=64), catalog)
    shortest = -(-context_floor(catalog) // CONTEXT_STEP_TOKENS) * CONTEXT_STEP_TOKENS
    own = [s for s in r.suggestions if s.kind == "offload" and "engine" not in s.changes]
    assert not own and f"at {shortest:,} tokens of context" in r.offload_note and "64 GiB" in r.offload_note
    # llama.cpp's published Q4_K_M keeps the experts in the 64 GiB stated, where FP8 or BF16 would not
    (moe,) = [s for s in r.suggestions if s.changes.get("engine") == "llamacpp" and s.changes.get("n_cpu_moe")]
    assert moe.changes["quantization"] == "gguf-q4_k_m" and fit(Deployment(**{
        "model": "glm-4.5-air", "gpu": "rtx-4090", "host_memory_gb": 64, **moe.changes}), catalog).fits
