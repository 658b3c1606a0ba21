"""A request is whole: a what-fits cell carries the requests of its context the engine admits at once
(``FitsCell.requests_at_once``, the sequences its KV cache holds rounded down by ``units.whole_count``), and the
CLI grid, the API and the page's "requests at once" show that one number, never 3.7 of them."""

from __future__ import annotations

import json
import math

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from inferplan.catalog.loader import load_catalog
from inferplan.memory.matrix import fits_matrix
from inferplan.performance.here import what_runs_on
from inferplan.report.homelab_view import homelab_view
from inferplan.report.numbers import whole_count_text
from inferplan.shells.api import create_app
from inferplan.shells.cli import app as cli
from inferplan.units import whole_count

CATALOG = load_catalog()
CARD = "rtx-4090"
ROWS = ["qwen3-8b", "mistral-7b", "llama-3.1-70b"]  # two hold a fraction of a request more (4.9, 7.8), one fits none


@pytest.fixture(scope="module")
def grid():
    return fits_matrix(models=ROWS, gpus=[CARD], catalog=CATALOG)


def test_whole_count_rounds_down_but_not_a_rounding_error():
    assert (whole_count(18.9), whole_count(22.9999999), whole_count(3.0), whole_count(0.62)) == (18, 23, 3, 0)
    assert whole_count_text(18.9) == "18" and whole_count_text(0.62) == "0.62 of one"


def test_a_cell_carries_the_whole_requests_its_cache_admits(grid):
    fitting = [c for c in grid.cells if c.result.fits]
    assert len(fitting) == 2 and all(c.result.total_max_concurrency % 1 for c in fitting)  # fractions, not whole
    for c in fitting:
        assert c.requests_at_once == math.floor(c.result.total_max_concurrency) >= 1
    assert [c.requests_at_once for c in grid.cells if not c.result.fits] == [None]
    assert json.loads(grid.model_dump_json())["cells"][0]["requests_at_once"] == fitting[0].requests_at_once


def test_a_llamacpp_cell_carries_its_most_slots():
    cell = fits_matrix(models=["qwen3-8b"], gpus=[CARD], engine="llamacpp", quantizations=["gguf-q4_k_m"],
                       catalog=CATALOG).cells[0]
    assert cell.result.most_slots is not None and cell.requests_at_once == cell.result.most_slots


def test_the_cli_grid_and_table_show_whole_requests(grid):
    args = ["fits", "--models", ",".join(ROWS), "--gpus", CARD]
    out = CliRunner().invoke(cli, args, env={"COLUMNS": "200"}).stdout
    assert "requests at once" in out and "sequences held" not in out
    for c in grid.cells:
        if c.result.fits:
            row = next(line for line in out.splitlines() if line.startswith(c.model)).split()
            assert row[-1] == str(c.requests_at_once), row
    table = CliRunner().invoke(cli, [*args, "--explain"], env={"COLUMNS": "200"}).stdout
    held = {c.model: c.requests_at_once for c in grid.cells}
    for line in table.splitlines():
        cells = [part.strip() for part in line.split("│")]
        if len(cells) > 8 and cells[1] in held:
            assert cells[8] == (str(held[cells[1]]) if held[cells[1]] is not None else "—"), cells
    as_json = json.loads(CliRunner().invoke(cli, [*args, "--json"]).stdout)
    assert [c["requests_at_once"] for c in as_json["cells"]] == [c.requests_at_once for c in grid.cells]


def test_the_api_answers_whole_requests(grid, tmp_path):
    r = TestClient(create_app(tmp_path / "t.db")).post("/api/fits", json={"models": ROWS, "gpus": [CARD]})
    assert r.status_code == 200
    assert [c["requests_at_once"] for c in r.json()["cells"]] == [c.requests_at_once for c in grid.cells]


def test_the_page_counts_requests_at_once_as_the_matrix_does(grid):
    """The page's What runs on my GPUs? on vLLM: each row's requests at once is its what-fits cell's."""
    view = homelab_view(what_runs_on(CARD, 1, CATALOG, engine="vllm"), CATALOG)
    cells = {c.model: c for c in fits_matrix(gpus=[CARD], engine="vllm", catalog=CATALOG).cells}
    rows = [r for r in view.rows if r.fits]
    assert rows and any(cells[r.model].result.total_max_concurrency % 1 for r in rows)
    for row in rows:
        assert row.at_once == f"{cells[row.model].requests_at_once:,}", row.model
