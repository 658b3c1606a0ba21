"""The GGUF files a person with one 24 GB card runs through llama.cpp or Ollama are catalogue builds: Qwen's own
Q4_K_M and Q8_0 of Qwen3-8B, -14B and -32B, unsloth's Q4_K_M of Gemma 3 27B and Q4_K_M and Q8_0 of Mistral Small
3.2 (text model alone, the vision projector a file of its own), each weighing its file's bytes; and fit on vLLM
offers llama.cpp's GGUF build of a dense model vLLM does not load, with the command that plans it (Ollama's names
plan their own build: tests/test_ollama_tags.py)."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from inferplan.catalog.loader import load_catalog
from inferplan.deploy import launch_command
from inferplan.inputs.deployment import Deployment
from inferplan.memory.resolve import resolve_model
from inferplan.memory.suggest import fit_or_suggest
from inferplan.memory.weights import weight_bytes
from inferplan.shells.cli import app

CATALOG = load_catalog()


@pytest.mark.parametrize(("model", "quant", "file_bytes", "repo_tag"), [
    ("qwen3-8b", "gguf-q4_k_m", 5_027_783_488, "Qwen/Qwen3-8B-GGUF:Q4_K_M"),
    ("qwen3-8b", "gguf-q8_0", 8_709_518_112, "Qwen/Qwen3-8B-GGUF:Q8_0"),
    ("qwen3-14b", "gguf-q4_k_m", 9_001_752_960, "Qwen/Qwen3-14B-GGUF:Q4_K_M"),
    ("qwen3-14b", "gguf-q8_0", 15_698_533_728, "Qwen/Qwen3-14B-GGUF:Q8_0"),
    ("qwen3-32b", "gguf-q4_k_m", 19_762_149_024, "Qwen/Qwen3-32B-GGUF:Q4_K_M"),
    ("qwen3-32b", "gguf-q8_0", 34_817_718_912, "Qwen/Qwen3-32B-GGUF:Q8_0"),
    ("gemma-3-27b", "gguf-q4_k_m", 16_546_688_736, "unsloth/gemma-3-27b-it-GGUF:Q4_K_M"),
    ("mistral-small-3.2-24b", "gguf-q4_k_m", 14_333_922_848, "unsloth/Mistral-Small-3.2-24B-Instruct-2506-GGUF:Q4_K_M"),
    ("mistral-small-3.2-24b", "gguf-q8_0", 25_054_793_248, "unsloth/Mistral-Small-3.2-24B-Instruct-2506-GGUF:Q8_0"),
])
def test_a_home_gguf_build_weighs_its_files_bytes_and_llama_server_fetches_it(model, quant, file_bytes, repo_tag):
    assert weight_bytes(resolve_model(CATALOG, model), CATALOG.quantization(quant)).total_bytes == file_bytes
    d = Deployment(model=model, gpu="rtx-5090", engine="llamacpp", quantization=quant, max_model_len=8192)
    argv = launch_command(d, CATALOG).argv
    assert argv[argv.index("--hf-repo") + 1] == repo_tag


@pytest.mark.parametrize(("model", "tokens"), [("qwen3-8b", 40960), ("qwen3-14b", 40960), ("qwen3-32b", 16384),
                                               ("gemma-3-27b", 32768), ("mistral-small-3.2-24b", 32768)])
def test_the_q4_k_m_build_plans_on_one_rtx_4090(model, tokens):
    d = Deployment(model=model, gpu="rtx-4090", engine="llamacpp", quantization="gguf-q4_k_m", max_model_len=tokens)
    assert fit_or_suggest(d, CATALOG).fits


@pytest.mark.parametrize("model", ["gemma-3-27b", "mistral-small-3.2-24b"])
def test_a_vision_models_gguf_is_its_text_model_and_llama_server_leaves_the_projector_out(model):
    assert not resolve_model(CATALOG, model).checkpoint("gguf-q4_k_m").vision_encoder
    d = Deployment(model=model, gpu="rtx-4090", engine="llamacpp", quantization="gguf-q4_k_m", max_model_len=8192)
    assert "--no-mmproj" in launch_command(d, CATALOG).argv


def test_fit_on_vllm_offers_llama_cpps_q4_k_m_of_a_dense_model_with_the_command_that_plans_it():
    """Qwen3-32B in BF16 does not fit one RTX 4090 on vLLM, and vLLM does not load GGUF: llama.cpp's Q4_K_M
    is offered at the longest context it holds, as its own engine and build, and that plan fits."""
    d = Deployment(model="qwen3-32b", gpu="rtx-4090")
    r = fit_or_suggest(d, CATALOG)
    assert not r.fits
    gguf = [s for s in r.suggestions if s.changes.get("engine") == "llamacpp" and "n_gpu_layers" not in s.changes]
    assert len(gguf) == 1 and gguf[0].changes["quantization"] == "gguf-q4_k_m"
    tokens = gguf[0].changes["max_model_len"]
    assert 16384 <= tokens < 40960
    assert fit_or_suggest(d.model_copy(update=gguf[0].changes), CATALOG).fits
    argv = launch_command(d.model_copy(update=gguf[0].changes), CATALOG).argv
    assert argv[argv.index("--hf-repo") + 1] == "Qwen/Qwen3-32B-GGUF:Q4_K_M"
    out = CliRunner().invoke(app, ["fit", "--model", "qwen3-32b", "--gpu", "rtx-4090"], env={"COLUMNS": "250"}).output
    assert (f"inferplan fit --model qwen3-32b --gpu rtx-4090 --max-model-len {tokens} --quantization gguf-q4_k_m "
            "--engine llamacpp") in out


def test_no_other_engines_build_is_offered_in_a_format_the_asked_engine_runs():
    """llama.cpp asked: its own smaller GGUF builds are its suggestions; another engine is offered only for a
    format llama.cpp does not load, and never from an engine with no measured point on the GPU's software."""
    d = Deployment(model="qwen3-32b", gpu="rtx-4090", engine="llamacpp", quantization="bf16")
    r = fit_or_suggest(d, CATALOG)
    elsewhere = [s for s in r.suggestions if s.changes.get("engine") not in (None, "llamacpp")]
    assert all(not CATALOG.engine("llamacpp").loads(CATALOG.quantization(s.changes["quantization"]))
               for s in elsewhere)
    assert "mlx" not in {s.changes.get("engine") for s in fit_or_suggest(Deployment(model="qwen3-32b", gpu="rtx-4090"),
                                                                         CATALOG).suggestions}
