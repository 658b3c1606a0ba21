"""What runs on my GPUs with no engine named: each model answered with the best way it runs on the GPUs
stated, across the engines that run there (performance/here.py ``_best_way``); an engine named stays binding."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from inferplan.catalog.loader import load_catalog
from inferplan.inputs.deployment import Deployment
from inferplan.memory.fit import fit
from inferplan.memory.precision import model_formats
from inferplan.memory.resolve import resolve_model
from inferplan.performance.here import what_runs_on
from inferplan.shells.api import create_app

CATALOG = load_catalog()


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    return TestClient(create_app(tmp_path_factory.mktemp("homelab") / "h.db"))


def rows(client, **body) -> dict[str, dict]:
    r = client.post("/api/views/homelab", json=body)
    assert r.status_code == 200, r.text
    return {row["model"]: row for row in r.json()["rows"]}


@pytest.mark.parametrize("model", ["qwen3-30b-a3b", "gemma-4-26b-a4b", "qwen3-14b", "gemma-3-27b",
                                   "mistral-small-3.2-24b"])
def test_one_3090_runs_a_gguf_on_llamacpp_at_the_most_bits_it_holds_with_the_default_request(client, model):
    row = rows(client, gpu="rtx-3090", gpus=1)[model]
    assert row["fits"] and row["verdict"] == "runs", row
    assert row["quantization"].startswith("gguf-q") and row["engine"].startswith("llama.cpp"), row
    tag = CATALOG.quantization(row["quantization"]).name.split()[-1]
    assert row["command"].startswith("llama-server ") and tag.upper() in row["command"].upper(), row
    assert row["speed"].endswith("tok/s"), row
    # the most bits: no format llama.cpp has for the model (builds, its conversions) with more bits fits one card
    bits = CATALOG.quantization(row["quantization"]).bits_per_weight.value
    spec = resolve_model(CATALOG, model)
    more = [q for q in model_formats(CATALOG, spec, "llamacpp") if CATALOG.quantization(q).bits_per_weight.value > bits]
    assert not any(fit(Deployment(model=model, gpu="rtx-3090", engine="llamacpp", quantization=q, max_model_len=8192),
                       CATALOG).fits for q in more if _loads(q))


def _loads(q: str) -> bool:
    return CATALOG.engine("llamacpp").loads(CATALOG.quantization(q), accel=CATALOG.accelerator("rtx-3090"))


def test_two_3090s_run_llama_3_3_70b_at_q4_k_m(client):
    row = rows(client, gpu="rtx-3090", gpus=2)["llama-3.3-70b"]
    assert row["verdict"] == "runs" and row["quantization"] == "gguf-q4_k_m", row
    assert "bartowski/Llama-3.3-70B-Instruct-GGUF:Q4_K_M" in row["command"], row


def test_an_engine_named_keeps_its_answer(client):
    row = rows(client, gpu="rtx-3090", gpus=1, engine="vllm")["qwen3-30b-a3b"]
    assert row["engine"] == "vLLM" and row["quantization"] == "bf16" and row["verdict"] == "needs 3 GPUs", row
    assert row["command"].startswith("vllm serve ") and "--cpu-offload-gb" in row["command"], row


def test_with_host_ram_a_model_the_gpus_do_not_hold_takes_the_fastest_offload_it_holds():
    r = what_runs_on("rtx-3090", 1, CATALOG, host_memory_gb=128)
    m = next(m for m in r.models if m.model == "llama-3.3-70b")
    assert not m.fits and m.offload is not None and m.offload.fits_host, m
    assert m.engine == "llamacpp" and m.quantization == "gguf-q4_k_m", m
    vllm = next(x for x in what_runs_on("rtx-3090", 1, CATALOG, engine="vllm", host_memory_gb=128).models
                if x.model == "llama-3.3-70b")
    assert m.offload.output_tokens_per_s_per_user > vllm.offload.output_tokens_per_s_per_user


def test_a_format_named_without_an_engine_runs_on_the_engines_that_load_it(client):
    got = rows(client, gpu="rtx-3090", quantization="gguf-q4_k_m")
    assert got and {row["engine"] for row in got.values()} == {CATALOG.engine("llamacpp").name}
    r = client.post("/api/views/homelab", json={"gpu": "rtx-3090", "quantization": "mlx-4bit"})
    assert r.status_code == 422 and r.json()["error"]["field"] == "quantization", r.text
