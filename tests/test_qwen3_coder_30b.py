"""Qwen3-Coder 30B-A3B Instruct is a catalogue model: its config.json imports to the parameters Qwen publishes
(30.5B total, 3.3B activated), its GGUF builds weigh their files' bytes, fit, perf, deploy and search take
``--model qwen3-coder-30b-a3b`` (or its Hugging Face name), and the measurements of its runs are filed under it."""

from __future__ import annotations

import json

import pytest

from inferplan.catalog.hf_import import architecture_from_config
from inferplan.catalog.loader import load_catalog
from inferplan.deploy import launch_command
from inferplan.inputs.deployment import Deployment
from inferplan.memory.params import count_params
from inferplan.memory.resolve import resolve_model
from inferplan.memory.suggest import fit_or_suggest
from inferplan.memory.weights import weight_bytes
from inferplan.search.request import SearchRequest
from inferplan.search.run import search

CATALOG = load_catalog()
CONFIG = CATALOG.data_dir / "hf_configs" / "qwen3-coder-30b-a3b.json"


def test_the_config_imports_to_the_published_parameter_counts():
    cfg = json.loads(CONFIG.read_bytes())
    p = count_params(architecture_from_config(cfg))
    # worked by hand from the config: embeddings and lm_head (untied), attention, 128 experts, router, norms
    h, vocab, layers, experts = cfg["hidden_size"], cfg["vocab_size"], cfg["num_hidden_layers"], cfg["num_experts"]
    d, q, kv, moe = cfg["head_dim"], cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["moe_intermediate_size"]
    attention = layers * (h * q * d + 2 * h * kv * d + q * d * h)
    expert = 3 * h * moe
    assert p.attention == attention and p.experts == layers * experts * expert and p.embedding == p.lm_head == vocab * h
    assert p.total == 30_532_122_624
    card = CATALOG.model("qwen3-coder-30b-a3b")
    assert round(p.total / 1e9, 1) == card.total_params.value / 1e9 == 30.5
    # Qwen states 3.3B activated: the count with embeddings and lm_head, cut at one decimal
    active = p.total - p.experts + p.experts_active
    assert active == 3_353_032_704 and int(active / 1e8) / 10 == card.active_params.value / 1e9 == 3.3


def test_the_card_resolves_by_its_hugging_face_names_with_262k_positions():
    for name in ("qwen3-coder-30b-a3b", "Qwen/Qwen3-Coder-30B-A3B-Instruct", "Qwen/Qwen3-Coder-30B-A3B-Instruct-FP8"):
        assert CATALOG.model(name).id == "qwen3-coder-30b-a3b"
    spec = resolve_model(CATALOG, "qwen3-coder-30b-a3b")
    assert spec.context_tokens == 262144 and spec.architecture.moe
    assert CATALOG.model("qwen3-30b-a3b-2507").id == "qwen3-30b-a3b-2507"  # the general model keeps its own card


@pytest.mark.parametrize(("quant", "size"), [("gguf-q4_k_m", 18556689568), ("gguf-q8_0", 32483933856)])
def test_a_gguf_build_weighs_its_files_bytes(quant, size):
    w = weight_bytes(resolve_model(CATALOG, "qwen3-coder-30b-a3b"), CATALOG.quantization(quant))
    assert w.total_bytes == pytest.approx(size, rel=1e-12)


@pytest.mark.parametrize(("quant", "offload", "source"), [
    ("q4_k_m", {}, "unsloth/Qwen3-Coder-30B-A3B-Instruct-GGUF:Q4_K_M"),
    ("q8_0", {"n_cpu_moe": 48, "host_memory_gb": 64}, "ggml-org/Qwen3-Coder-30B-A3B-Instruct-Q8_0-GGUF")])
def test_llama_server_fetches_the_published_file_that_fits_a_24_gb_card(quant, offload, source):
    d = Deployment(model="qwen3-coder-30b-a3b", gpu="rtx-4090", engine="llamacpp", quantization=quant,
                   max_model_len=16384, **offload)
    assert fit_or_suggest(d, CATALOG).fits
    argv = list(launch_command(d, CATALOG).argv)
    assert argv[argv.index("--hf-repo") + 1] == source


def test_vllm_serves_qwens_own_repo_and_its_fp8_build():
    bf16 = launch_command(Deployment(model="qwen3-coder-30b-a3b", gpu="h100-sxm", max_model_len=131072), CATALOG)
    assert bf16.argv[:3] == ("vllm", "serve", "Qwen/Qwen3-Coder-30B-A3B-Instruct")
    fp8 = launch_command(Deployment(model="qwen3-coder-30b-a3b", gpu="h100-sxm", quantization="fp8-block",
                                    max_model_len=131072), CATALOG)
    assert fp8.argv[:3] == ("vllm", "serve", "Qwen/Qwen3-Coder-30B-A3B-Instruct-FP8")


def test_search_plans_the_model():
    res = search(SearchRequest(models=("qwen3-coder-30b-a3b",), request_rate_per_s=0.5, input_len=2000, output_len=300,
                               accelerators=("h100-sxm",), engines=("vllm",), top=1), CATALOG)
    assert res.candidates > 0 and res.results and res.results[0].model == "qwen3-coder-30b-a3b"


# the measured runs of Qwen3-Coder-30B-A3B-Instruct, with the split each was declared in
CODER_RUNS = {"s-llamacpp-gb10-qwen3-30b-a3b-q80-tg": "fit", "s-llamacpp-gb10-qwen3-30b-a3b-q80-pp": "holdout",
              "s-amoe-mlx-m2ultra-qwen3-30b-a3b-mlx4-tg-mlxstudio": "holdout",
              "l26-02-qwen3-coder-30b-apple-m1max-ollama-32k": "holdout",
              "c01-qwen3-coder-30b-fp8-rtx5090-16k-fails": "development"}


def test_every_measured_coder_run_is_filed_under_the_coder_card_in_its_declared_split():
    points = {p.id: p for p in [*CATALOG.speed_points, *CATALOG.memory_points]}
    for point_id, split in CODER_RUNS.items():
        assert (points[point_id].model, points[point_id].split) == ("qwen3-coder-30b-a3b", split), point_id
    named = {p.id for p in points.values()
             if "coder-30b" in p.id or any("Coder-30B" in c or "coder:30b" in c for c in p.caveats)}
    assert named == set(CODER_RUNS)


def test_the_mlx_run_plans_and_launches_lm_studios_4_bit_build():
    d = Deployment(model="qwen3-coder-30b-a3b", gpu="apple-m2-ultra", engine="mlx", quantization="mlx-4bit",
                   max_model_len=32768)
    argv = list(launch_command(d, CATALOG).argv)
    assert argv[argv.index("--model") + 1] == "lmstudio-community/Qwen3-Coder-30B-A3B-Instruct-MLX-4bit"
    # no published byte count: sized by the format's bits per weight, as the general model's MLX build is
    coder = weight_bytes(resolve_model(CATALOG, "qwen3-coder-30b-a3b"), CATALOG.quantization("mlx-4bit"))
    general = weight_bytes(resolve_model(CATALOG, "qwen3-30b-a3b"), CATALOG.quantization("mlx-4bit"))
    assert coder.total_bytes == general.total_bytes
