"""The vision projector Ollama loads with a vision model's tag (llama-server --mmproj, kept on the GPU) is counted in
the plan of the tag's build where the tag states its size: a line of its own, taken from the KV cache's room. A tag
with no stated size is planned as the text model alone, as its build line says."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from test_ollama_tags import _load_with

from inferplan.catalog.loader import load_catalog
from inferplan.errors import CatalogError
from inferplan.inputs.deployment import Deployment
from inferplan.memory.suggest import fit_or_suggest
from inferplan.shells.api import create_app
from inferplan.shells.cli import app

CATALOG = load_catalog()
GEMMA3_PROJECTOR = 857_739_168  # ggml-org/gemma-3-27b-it-GGUF mmproj-model-f16.gguf (ollama.yaml)
GEMMA3_TAG = '{tag: "gemma3:27b", quantization: gguf-q4_k_m, source: ollama-default-tags-q4-k-m, ' \
    'vision_projector_source: ollama-vision-projector-arches,\n         vision_projector_bytes: {value: 857739168, ' \
    'kind: spec, source: ggml-org-gemma-3-27b-mmproj}}'


def _same_build_by_card(catalog):
    """gemma3:27b's build on an RTX 4090 named by the card, the engine, the weight format and Ollama's context, with
    the margin llama-server's --fit keeps free for the tag held as other processes' memory."""
    margin_gb = catalog.ollama_runners.records["ollama"].placement.margin_bytes.value / 2**30
    return fit_or_suggest(Deployment(model="gemma-3-27b", gpu="rtx-4090", engine="llamacpp", quantization="gguf-q4_k_m",
                                     max_model_len=32768, other_gpu_memory_gb=margin_gb), catalog)


def test_the_projector_comes_out_of_the_kv_caches_room_on_the_gpu():
    tagged = fit_or_suggest(Deployment(model="gemma3:27b", gpu="rtx-4090"), CATALOG)
    by_card = _same_build_by_card(CATALOG)
    assert tagged.vision_projector_bytes_per_gpu == GEMMA3_PROJECTOR and by_card.vision_projector_bytes_per_gpu == 0
    assert tagged.weights_bytes_per_gpu == by_card.weights_bytes_per_gpu  # the text model's weights, reported apart
    assert by_card.kv_cache_bytes_per_gpu - tagged.kv_cache_bytes_per_gpu == pytest.approx(GEMMA3_PROJECTOR, abs=1)
    assert tagged.kv_cache_tokens < by_card.kv_cache_tokens
    assert "the vision projector Ollama loads on the GPU counted there" in tagged.build_note
    assert "text only" not in tagged.build_note


def test_a_tag_without_a_projector_size_keeps_the_text_model_alone(tmp_path):
    """The size unwired from the tag: nothing is counted, and the build line says the plan is text only."""
    unwired = _load_with(tmp_path, GEMMA3_TAG, GEMMA3_TAG.split(",\n")[0] + "}")
    r = fit_or_suggest(Deployment(model="gemma3:27b", gpu="rtx-4090"), unwired)
    assert r.vision_projector_bytes_per_gpu == 0
    assert r.kv_cache_bytes_per_gpu == pytest.approx(_same_build_by_card(unwired).kv_cache_bytes_per_gpu)
    assert "text only, where Ollama also loads the vision projector on the GPU" in r.build_note


def test_every_vision_tag_with_a_size_carries_a_sourced_one():
    sized = {t.tag: t.vision_projector_bytes for card in CATALOG.models for t in card.ollama_tags
             if t.vision_projector_bytes is not None}
    assert {"gemma3:27b", "gemma3:27b-it-q4_K_M", "gemma4:26b", "gemma4:31b", "mistral-small3.2:24b"} <= sized.keys()
    for tag, size in sized.items():
        assert size.source in CATALOG.sources and size.kind.value == "spec", tag


def test_a_projector_size_on_a_tag_ollama_loads_none_for_does_not_load(tmp_path):
    with pytest.raises(CatalogError, match="vision_projector_bytes needs vision_projector_source"):
        _load_with(tmp_path, "vision_projector_source: ollama-vision-projector-arches,\n         vision_projector_bytes",
                   "vision_projector_bytes")


def test_the_cli_and_api_show_the_projector_as_its_own_line(tmp_path):
    out = CliRunner().invoke(app, ["fit", "--model", "gemma3:27b", "--gpu", "rtx-4090"], env={"COLUMNS": "250"}).output
    assert "weights 15.41 GiB, vision projector 0.80 GiB, activations" in out
    body = TestClient(create_app(tmp_path / "test.db")).post("/api/fit", json={"model": "gemma3:27b",
                                                                               "gpu": "rtx-4090"}).json()
    assert body["vision_projector_bytes_per_gpu"] == GEMMA3_PROJECTOR
    qwen = fit_or_suggest(Deployment(model="qwen3:32b", gpu="rtx-4090"), CATALOG)  # a text model: nothing added
    assert qwen.vision_projector_bytes_per_gpu == 0


def test_a_vision_tag_whose_projector_is_counted_launches_with_ollama():
    """Ollama loads the projector it counts itself (its blob holds it), so the tag's launch is Ollama's."""
    out = CliRunner().invoke(app, ["deploy", "--model", "gemma3:27b", "--gpu", "rtx-4090"], env={"COLUMNS": "250"}).output
    assert "ollama pull gemma3:27b" in out and "--hf-repo" not in out


def test_a_stated_layer_count_below_every_layer_runs_the_projector_on_the_cpu():
    """Ollama passes --no-mmproj-offload when num_gpu leaves text layers on the CPU (ollama.yaml)."""
    partial = fit_or_suggest(Deployment(model="gemma3:27b", gpu="rtx-4090", n_gpu_layers=40, host_memory_gb=64), CATALOG)
    whole = fit_or_suggest(Deployment(model="gemma3:27b", gpu="rtx-4090", n_gpu_layers=999, host_memory_gb=64), CATALOG)
    assert partial.vision_projector_bytes_per_gpu == 0 and "vision projector on the CPU" in partial.build_note
    assert whole.vision_projector_bytes_per_gpu == GEMMA3_PROJECTOR


def test_gemma4_31bs_projector_is_counted_and_fit_keeps_fewer_layers_for_it(tmp_path):
    """Ollama asks --fit to keep the projector free beside its margin: with the F16 projector counted (1.12 GB, as
    rounded by its source), the split --fit chooses on a T4 holds fewer layers than the text model alone would."""
    tag = next(t for card in CATALOG.models for t in card.ollama_tags if t.tag == "gemma4:31b")
    assert tag.vision_projector_bytes.value == pytest.approx(1.12e9) and "rounded to 0.01 GB" in tag.vision_projector_bytes.note
    counted = fit_or_suggest(Deployment(model="gemma4:31b", gpu="t4"), CATALOG)
    assert counted.vision_projector_bytes_per_gpu == pytest.approx(1.12e9) and "text only" not in counted.build_note
    line = '{tag: "gemma4:31b", quantization: gguf-q4_k_m, source: ollama-default-tags-q4-k-m, ' \
        "vision_projector_source: ollama-vision-projector-arches"
    sized = line + ',\n         vision_projector_bytes: {value: 1.12, unit: GB, kind: spec, source: gemma-4-31b-mmproj, ' \
        'note: "mmproj-gemma-4-31B-it-f16.gguf, rounded to 0.01 GB"}}'
    text_only = fit_or_suggest(Deployment(model="gemma4:31b", gpu="t4"), _load_with(tmp_path, sized, line + "}"))
    assert text_only.vision_projector_bytes_per_gpu == 0
    assert 0 < counted.n_gpu_layers < text_only.n_gpu_layers
