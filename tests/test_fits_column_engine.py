"""`fits` plans each column on the engine its hardware runs when none is named (llama.cpp on Apple silicon,
vLLM elsewhere), as fit, perf and deploy do, and says which engine each column is planned on."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from inferplan.memory.matrix import fits_matrix
from inferplan.shells.cli import app

MODELS = "llama-3.3-70b,qwen3-30b-a3b,gpt-oss-120b"


def test_a_mac_column_is_planned_on_llamacpp_as_fit_plans_it(catalog):
    matrix = fits_matrix(models=MODELS.split(","), gpus=["M4 Max 128GB"], catalog=catalog)
    assert {c.engine for c in matrix.cells} == {"llamacpp"}
    assert all(c.result is not None and c.result.fits for c in matrix.cells)  # each held, as with --engine llamacpp
    ran = CliRunner().invoke(app, ["fit", "llama-3.3-70b", "--gpu", "M4 Max 128GB", "--json"])
    assert json.loads(ran.stdout)["engine"] == "llamacpp"


def test_each_column_takes_its_own_engine_and_a_named_one_takes_every_column(catalog):
    mixed = fits_matrix(models=["qwen3-30b-a3b"], gpus=["M4 Max 128GB", "H100"], catalog=catalog)
    assert {c.hardware: c.engine for c in mixed.cells} == {"M4 Max 128GB": "llamacpp", "H100": "vllm"}
    named = fits_matrix(models=["qwen3-30b-a3b"], gpus=["M4 Max 128GB", "H100"], engine="sglang", catalog=catalog)
    assert {c.engine for c in named.cells} == {"sglang"}


def test_the_grid_names_the_engine_of_each_column():
    one = CliRunner().invoke(app, ["fits", "--gpus", "M4 Max 128GB", "--models", MODELS])
    assert one.exit_code == 0 and "on llamacpp" in one.stdout.splitlines()[0]
    rows = [line.split() for line in one.stdout.splitlines() if line.split()[:1] and line.split()[0] in MODELS.split(",")]
    assert len(rows) == 3 and all(r[-1].isdigit() for r in rows), one.stdout  # requests at once in each, no "no"
    mixed = CliRunner().invoke(app, ["fits", "--gpus", "M4 Max 128GB,H100", "--models", "qwen3-30b-a3b"])
    assert "M4 Max 128GB (llamacpp)" in mixed.stdout and "H100 (vllm)" in mixed.stdout


def test_each_engine_takes_its_own_best_build_so_the_mac_column_shows_what_fits_there(catalog):
    """Llama 3.3 70B and Qwen3-30B-A3B on an H100 and a 64 GB M4 Max: vLLM's best builds (FP8, BF16) do not fit the
    Mac, llama.cpp's Q4_K_M does (3 and 39 at once): a row per model and engine, the columns in their order."""
    matrix = fits_matrix(models=["llama-3.3-70b", "qwen3-30b-a3b"], gpus=["h100", "M4 Max 64GB"], catalog=catalog)
    mac = {c.model: c for c in matrix.cells if c.hardware == "M4 Max 64GB"}
    assert {m: (c.quantization, c.requests_at_once) for m, c in mac.items()} == {
        "llama-3.3-70b": ("gguf-q4_k_m", 3), "qwen3-30b-a3b": ("gguf-q4_k_m", 39)}
    cuda = {c.model: c.quantization for c in matrix.cells if c.hardware == "h100"}
    assert cuda == {"llama-3.3-70b": "fp8", "qwen3-30b-a3b": "bf16"}
    assert [c.hardware for c in matrix.cells] == ["h100", "M4 Max 64GB"] * 2  # each model's columns in order


def test_a_kv_type_one_column_engine_refuses_names_that_column_and_the_types_every_engine_runs():
    for kv, column, engine in (("fp8", "M4 Max 64GB", "llama.cpp"), ("q8_0", "h100", "vLLM")):
        ran = CliRunner().invoke(app, ["fits", "--gpus", "h100,M4 Max 64GB", "--models", "qwen3-30b-a3b",
                                       "--kv-cache-dtype", kv])
        said = " ".join(ran.stderr.split())
        assert ran.exit_code == 2 and said.startswith("error: --kv-cache-dtype: ") and f"the {column} column plans on {engine}" in said
        assert "one --engine for every column" in said and "(allowed: auto | bf16 | fp16)" in said
    ran = CliRunner().invoke(app, ["fits", "--gpus", "h100,M4 Max 64GB", "--models", "qwen3-30b-a3b", "--kv-cache-dtype", "fp16"])
    assert ran.exit_code == 0


def test_the_fits_none_list_says_a_column_on_another_engine_apart_from_one_that_holds_nothing():
    # a row has cells in its own engine's columns only: the other column is "—", a cell no count holds "n/a"
    from types import SimpleNamespace

    from inferplan.shells.render_fits import _nowhere_list
    held = SimpleNamespace(result=object(), smallest_fit=SimpleNamespace(gpus=6))
    nothing = SimpleNamespace(result=None, smallest_fit=None)
    text = _nowhere_list([(("glm-4.5-air", "fp8"), [held, None]), (("big", "nvfp4"), [held, nothing])],
                         ["rtx-4090", "m4-max"]).plain
    assert "6/—: glm-4.5-air" in text and "6/n/a: big" in text
