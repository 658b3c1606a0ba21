"""The what-fits grid's default models: the catalogue models it leaves out (``in_default_grid: false``) are
named in the matrix, under the CLI grid and in the page's summary, and ``all_models`` adds them."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from inferplan.catalog.loader import load_catalog
from inferplan.errors import InvalidScenarioError
from inferplan.memory.matrix import fits_matrix
from inferplan.shells.api import create_app
from inferplan.shells.cli import app as cli

CATALOG = load_catalog()
ONE_CARD = dict(gpus=["rtx-4090"], engine="llamacpp", quantizations=["gguf-q4_k_m"])
KEPT_OUT = [m.id for m in CATALOG.models if m.config and not m.in_default_grid]
OUT = "deepseek-r1-distill-qwen-14b"  # a fine-tune of a row's model, kept out of the default grid


def test_the_default_grid_names_the_models_it_leaves_out_and_all_models_adds_them():
    assert OUT in KEPT_OUT
    grid = fits_matrix(**ONE_CARD, catalog=CATALOG)
    assert grid.left_out == tuple(KEPT_OUT)
    assert not {c.model for c in grid.cells} & set(KEPT_OUT)
    every = fits_matrix(**ONE_CARD, all_models=True, catalog=CATALOG)
    assert every.left_out == () and set(KEPT_OUT) <= {c.model for c in every.cells}
    assert fits_matrix(**ONE_CARD, models=["qwen3-8b"], catalog=CATALOG).left_out == ()
    with pytest.raises(InvalidScenarioError) as err:
        fits_matrix(**ONE_CARD, models=["qwen3-8b"], all_models=True, catalog=CATALOG)
    assert err.value.field == "all_models"


def test_the_cli_grid_says_what_it_left_out_and_how_to_add_it():
    args = ["fits", "--gpus", "RTX 4090", "--engine", "llamacpp", "--quantizations", "q4_k_m"]
    out = " ".join(CliRunner().invoke(cli, args, env={"COLUMNS": "200"}).output.split())
    assert f"{len(KEPT_OUT)} more catalogue models ({', '.join(KEPT_OUT)})" in out and "--all-models" in out
    every = CliRunner().invoke(cli, [*args, "--all-models"], env={"COLUMNS": "200"}).output
    assert OUT in every and "Not in the default grid" not in every
    both = CliRunner().invoke(cli, [*args, "--models", "qwen3-8b", "--all-models"])
    assert both.exit_code == 2 and "--all-models" in both.output


def test_the_api_and_the_page_box_name_what_they_left_out(tmp_path):
    client = TestClient(create_app(tmp_path / "f.db"))
    body = {"gpus": ["rtx-4090"], "engine": "llamacpp", "quantizations": ["gguf-q4_k_m"]}
    assert client.post("/api/fits", json=body).json()["left_out"] == KEPT_OUT
    assert OUT in {c["model"] for c in client.post("/api/fits", json={**body, "all_models": True}).json()["cells"]}
    box = {"gpu": "rtx-4090", "engine": "llamacpp", "quantization": "gguf-q4_k_m"}
    view = client.post("/api/views/homelab", json=box).json()
    assert OUT in view["summary"] and "all_models" in view["summary"]
    assert OUT not in {r["model"] for r in view["rows"]}
    every = client.post("/api/views/homelab", json={**box, "all_models": True}).json()
    assert OUT in {r["model"] for r in every["rows"]} and OUT not in every["summary"]


def test_the_default_grid_lists_one_model_per_published_checkpoint():
    """Two cards of the same weights (gpt-oss-120b and the source guide's seed line) would give two answers
    for one build: the grid lists the reference card, and the seed line is reachable by id."""
    held: dict[tuple[str, str], str] = {}
    for m in CATALOG.models:
        if not (m.config and m.in_default_grid):
            continue
        for c in m.checkpoints:
            if c.repo is not None:
                assert held.setdefault((c.repo, c.quantization), m.id) == m.id, (c.repo, held[(c.repo, c.quantization)], m.id)
    assert "gpt-oss-120b-seedline" in KEPT_OUT and "gpt-oss-120b" not in KEPT_OUT
    named = fits_matrix(gpus=["h100-sxm"], models=["gpt-oss-120b-seedline"], catalog=CATALOG)
    assert {c.model for c in named.cells} == {"gpt-oss-120b-seedline"}


def test_a_model_that_fits_nowhere_in_its_published_builds_gets_a_next_step():
    # Qwen3-30B-A3B's published builds (BF16, FP8) fit no RTX 5090 on vLLM: the grid names the 4-bit flags
    said = " ".join(CliRunner().invoke(cli, ["fits", "--gpus", "rtx-5090"]).output.split())
    assert "A model that fits none may fit in fewer bits: --quantizations q4_k_m --engine llamacpp" in said
    asked = " ".join(CliRunner().invoke(cli, ["fits", "--gpus", "rtx-5090", "--engine", "llamacpp",
                                              "--quantizations", "q4_k_m", "--models", "qwen3-30b-a3b"]).output.split())
    assert "qwen3-30b-a3b" in asked and "fewer bits" not in asked
    held = " ".join(CliRunner().invoke(cli, ["fits", "--gpus", "h200-sxm", "--models", "qwen3-8b"]).output.split())
    assert "fewer bits" not in held
    racks = " ".join(CliRunner().invoke(cli, ["fits", "--systems", "hgx-h100", "--models", "kimi-k3"]).output.split())
    assert "kimi-k3" in racks and "fewer bits" not in racks  # a server's buyer is not sent to a 4-bit GGUF
