"""The `fit` and `fits` figures docs/memory.md, offload.md, cli.md and reliability.md quote in their prose for an
example command are the ones the code gives for that command: each is read from the doc and
compared with a fresh plan, so a doc figure that drifts from the code fails here (as
test_docs_economics_figures does for docs/economics.md)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from inferplan.catalog.loader import load_catalog
from inferplan.errors import InvalidScenarioError
from inferplan.inputs.deployment import Deployment
from inferplan.memory import matrix
from inferplan.memory.matrix import fits_matrix
from inferplan.memory.suggest import fit_or_suggest
from inferplan.units import GiB
from test_ollama_projector import _load_with

DOCS = Path(__file__).resolve().parents[1] / "docs"
CATALOG = load_catalog()


def _doc(name: str) -> str:
    return " ".join((DOCS / name).read_text().split())


def _figures(pattern: str, name: str) -> tuple[float, ...]:
    match = re.search(pattern, _doc(name))
    assert match, f"docs/{name} does not say {pattern!r}"
    return tuple(float(g.replace(",", "")) for g in match.groups())


def test_the_gemma3_vision_projector_figures_are_the_plans():
    weights, projector, projector_bytes, kv_room, kv_room_without = _figures(
        r"`inferplan fit --model gemma3:27b --gpu rtx-4090` holds ([\d.]+) GiB of weights and ([\d.]+) GiB of "
        r"projector \(Gemma 3's F16 projector file, ([\d,]+) bytes\) and ([\d.]+) GiB of KV cache room instead of "
        r"([\d.]+)\.", "memory.md")
    r = fit_or_suggest(Deployment(model="gemma3:27b", gpu="rtx-4090"), CATALOG)
    assert (weights, projector) == (round(r.weights_bytes_per_gpu / GiB, 2),
                                    round(r.vision_projector_bytes_per_gpu / GiB, 2))
    assert projector_bytes == r.vision_projector_bytes_per_gpu
    assert kv_room == round(r.kv_cache_bytes_per_gpu / GiB, 2)
    assert kv_room_without == round((r.kv_cache_bytes_per_gpu + r.vision_projector_bytes_per_gpu) / GiB, 2)


def test_the_qwen3_32b_placement_line_is_the_plans():
    match = re.search(r'answers with a `placement:` line, "([^"]+)"', _doc("offload.md"))
    assert match, "docs/offload.md does not quote qwen3:32b's placement line"
    r = fit_or_suggest(Deployment(model="qwen3:32b", gpu="rtx-4090"), CATALOG)
    assert r.placement_note.startswith(match.group(1))


def test_the_qwen3_8b_slots_on_a_t4_are_the_plans():
    (slots,) = _figures(r"`inferplan fit qwen3:8b --gpu t4`: ([\d,]+) slots", "offload.md")
    assert fit_or_suggest(Deployment(model="qwen3:8b", gpu="t4"), CATALOG).most_slots == slots


def test_the_qwen3_8b_on_one_of_two_rtx_4090s_is_the_plans():
    free, slots = _figures(r"`inferplan fit qwen3:8b --gpu rtx-4090 --gpus 2`: one GPU, ([\d.]+) GiB free for the "
                           r"KV cache, one left idle; its \"(\d+) fit\" slots", "offload.md")
    r = fit_or_suggest(Deployment(model="qwen3:8b", gpu="rtx-4090", gpus=2), CATALOG)
    assert r.parallel.gpus == 1 and "leaves 1 idle" in r.layout_note
    assert (free, slots) == (round(r.kv_cache_bytes_per_gpu / GiB, 2), r.most_slots)
    kept = fit_or_suggest(Deployment(model="qwen3:8b", gpu="rtx-4090", gpus=2, max_num_seqs=int(slots)), CATALOG)
    assert kept.fits and kept.parallel.gpus == 1
    spread = fit_or_suggest(Deployment(model="qwen3:8b", gpu="rtx-4090", gpus=2, max_num_seqs=int(slots) + 1), CATALOG)
    assert spread.fits and spread.parallel.gpus == 2


def test_the_405b_cell_on_one_hgx_h100_is_the_matrixs():
    at_once, bf16_gpus = _figures(r"Llama 3.1 405B on one HGX H100 is Meta's FP8 build \(`fbgemm-fp8`, ([\d,]+) "
                                  r"requests of 8,192 tokens at once\), not the BF16 one that needs ([\d,]+) GPUs",
                                  "cli.md")
    best = fits_matrix(models=["llama-3.1-405b"], systems=["hgx-h100"], catalog=CATALOG).cells[0]
    assert (best.quantization, best.requests_at_once) == ("fbgemm-fp8", at_once)
    bf16 = fits_matrix(models=["llama-3.1-405b"], systems=["hgx-h100"], quantizations=["bf16"],
                       catalog=CATALOG).cells[0]
    assert not bf16.result.fits and bf16.smallest_fit.gpus == bf16_gpus


def test_the_gemma4_layers_kept_with_and_without_its_projector_are_the_plans(tmp_path):
    counted, alone = _figures(r"`fit gemma4:31b --gpu t4`: -ngl (\d+) with Gemma 4 31B's F16 projector, 1.12 GB as a "
                              r"model card rounds it, where the text model alone would keep (\d+)\)", "offload.md")
    tag = '{tag: "gemma4:31b", quantization: gguf-q4_k_m, source: ollama-default-tags-q4-k-m, ' \
        "vision_projector_source: ollama-vision-projector-arches"
    sized = tag + ',\n         vision_projector_bytes: {value: 1.12, unit: GB, kind: spec, source: gemma-4-31b-mmproj, ' \
        'note: "mmproj-gemma-4-31B-it-f16.gguf, rounded to 0.01 GB"}}'
    text_only = _load_with(tmp_path, sized, tag + "}")  # the same card without the projector's size
    d = Deployment(model="gemma4:31b", gpu="t4")
    assert (counted, alone) == (fit_or_suggest(d, CATALOG).n_gpu_layers, fit_or_suggest(d, text_only).n_gpu_layers)


def test_the_default_grids_cells_are_the_ones_the_limit_counts(monkeypatch):
    (cells,) = _figures(r"the default grid on its four GPUs is ([\d,]+)\)", "reliability.md")
    monkeypatch.setattr(matrix, "MAX_FITS_CELLS", 0)  # every matrix is refused, saying how many cells it counted
    with pytest.raises(InvalidScenarioError) as refused:
        matrix.check_size(CATALOG)
    assert f"× 4 GPUs or systems is {cells:,.0f} cells" in str(refused.value)
