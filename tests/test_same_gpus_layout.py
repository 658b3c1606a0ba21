"""A fit that fails on N GPUs in the engine's default layout but holds on the same N GPUs split
another way says so, not "more GPUs": Qwen3-235B-A22B in per-tensor FP8 at 32,768 tokens on eight
RTX 5090s overfills them at TP 8 (its 4 KV heads each held by two ranks) and fits as TP 4 × PP 2."""

from __future__ import annotations

from rich.console import Console

from inferplan.inputs.deployment import Deployment
from inferplan.memory.matrix import fits_matrix
from inferplan.memory.suggest import fit_or_suggest
from inferplan.shells.render_fits import fits_grid

D = dict(model="qwen3-235b-a22b", gpu="rtx-5090", quantization="fp8", max_model_len=32768)


def test_the_hint_names_another_layout_of_the_same_gpus(catalog):
    r = fit_or_suggest(Deployment(**D, gpus=8), catalog)
    assert not r.fits and r.parallel.tensor_parallel_size == 8
    (s,) = [s for s in r.suggestions if s.kind == "gpus"]
    assert s.summary == "another layout of the same 8 GPUs: tensor parallel 4 × pipeline parallel 2"


def test_the_fits_cell_names_the_layout_that_fits_on_its_gpus(catalog):
    m = fits_matrix(models=["qwen3-235b-a22b"], gpus=["rtx-5090"], quantizations=["fp8"], gpu_count=8,
                    max_model_len=32768, catalog=catalog)
    console = Console(width=200, record=True)
    console.print(fits_grid(m))
    text = console.export_text()
    assert "no at TP8 (fits TP4 PP2)" in text and "needs 8" not in text
