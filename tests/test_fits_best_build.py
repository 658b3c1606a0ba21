"""``fits`` (and the page's "what runs on my GPUs") tries every published build of a model, not only
its first checkpoint, and shows per model and hardware the best one with its precision; a cell that
does not fit says how many GPUs it needs."""

from __future__ import annotations

from fastapi.testclient import TestClient
from typer.testing import CliRunner

from inferplan.memory.matrix import fits_matrix
from inferplan.shells.api import create_app
from inferplan.shells.cli import app


def test_llama_405b_on_one_hgx_h100_fits_in_metas_fp8_build(catalog):
    """405.9 B weights at one byte ≈ 378 GiB over 8 × ~73 GiB usable: the FP8 build fits, BF16 does not."""
    (cell,) = fits_matrix(models=["llama-3.1-405b"], systems=["hgx-h100"], catalog=catalog).cells
    assert cell.quantization == "fbgemm-fp8" and cell.result.fits  # the card's first build that fits, run natively
    (bf16,) = fits_matrix(models=["llama-3.1-405b"], systems=["hgx-h100"], quantizations=["native"],
                          catalog=catalog).cells
    assert bf16.quantization == "bf16" and not bf16.result.fits  # asked for explicitly: kept as asked


def test_a_model_whose_first_build_fits_keeps_it(catalog):
    (cell,) = fits_matrix(models=["llama-3.1-8b"], gpus=["h100-sxm"], catalog=catalog).cells
    assert cell.quantization == "bf16" and cell.result.fits


def test_when_no_build_fits_the_cell_is_the_one_needing_fewest_gpus(catalog):
    # Llama 3.3 70B's builds on one RTX 5090: none fits; its NVFP4 build needs 2 GPUs, FP8 3, BF16 more
    (cell,) = fits_matrix(models=["llama-3.3-70b"], gpus=["rtx-5090"], catalog=catalog).cells
    assert cell.quantization == "nvfp4" and not cell.result.fits and cell.smallest_fit.gpus == 2


def test_the_grid_says_how_many_gpus_and_the_build(catalog):
    out = CliRunner().invoke(app, ["fits", "--systems", "hgx-h100", "--models", "deepseek-v3,llama-3.1-405b"],
                             env={"COLUMNS": "120"}).output
    assert "no (needs 10 GPUs)" in out and "(10×)" not in out
    assert any(line.split()[:2] == ["llama-3.1-405b", "fbgemm-fp8"] for line in out.splitlines())


def test_the_homelab_view_uses_the_build_that_runs(tmp_path):
    client = TestClient(create_app(tmp_path / "t.db"))
    r = client.post("/api/views/homelab", json={"gpu": "rtx-5090", "gpus": 2})
    assert r.status_code == 200, r.text
    row = next(x for x in r.json()["rows"] if x["model"] == "qwen3-32b")
    # the most bits the two cards hold: Qwen's FP8 or AWQ build, or llama.cpp's Q8_0 conversion, not bf16
    assert row["quantization"] in ("fp8-block", "int4-awq", "gguf-q8_0") and row["fits"]
