"""The what-fits matrix is bounded in the library (``memory.matrix.MAX_FITS_CELLS``): a question of more cells
is refused before any cell is planned, naming the longest list given; the API names its JSON key, the CLI its flag."""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from inferplan.catalog.loader import load_catalog
from inferplan.errors import InvalidScenarioError
from inferplan.memory import matrix
from inferplan.memory.matrix import MAX_FITS_CELLS, check_size, fits_matrix
from inferplan.shells.api import create_app
from inferplan.shells.cli import app as cli

CATALOG = load_catalog()
MODELS = [m.id for m in CATALOG.models if m.config][:20]
GPUS = [a.id for a in CATALOG.accelerators][:10]
QUANTIZATIONS = [q.id for q in CATALOG.quantizations][:6]  # 20 × 10 × 6 = 1,200 cells, the models the longest list


def test_the_bound_counts_models_by_hardware_by_quantizations():
    names = [f"m{i}" for i in range(10)]  # counted, not looked up: the count comes before any name is resolved
    check_size(CATALOG, models=names, gpus=names, quantizations=names)  # 1,000 cells: at the bound
    with pytest.raises(InvalidScenarioError) as err:
        check_size(CATALOG, models=names, gpus=names[:5], systems=names[:6], quantizations=names)
    assert err.value.field == "models" and "10 models × 11 GPUs or systems × 10 quantizations is 1,100 cells" in str(err.value)
    assert MAX_FITS_CELLS == 1_000 and f"at most {MAX_FITS_CELLS:,} cells" in err.value.allowed


def test_a_matrix_past_the_bound_is_refused_before_any_cell_is_planned(monkeypatch):
    def planned(*_args, **_kwargs):
        raise AssertionError("a cell was planned")

    monkeypatch.setattr(matrix, "fit", planned)
    monkeypatch.setattr(matrix, "resolve_model", planned)
    with pytest.raises(InvalidScenarioError) as err:
        fits_matrix(models=MODELS, gpus=GPUS, quantizations=QUANTIZATIONS, catalog=CATALOG)
    assert err.value.field == "models" and "is 1,200 cells" in str(err.value)
    with pytest.raises(InvalidScenarioError) as every:  # the models unnamed: every catalogue model with a config
        fits_matrix(all_models=True, gpus=GPUS[:6], quantizations=QUANTIZATIONS[:3], catalog=CATALOG)
    assert every.value.field == "gpus"
    assert f"{sum(1 for m in CATALOG.models if m.config)} models × 6 GPUs or systems × 3 quantizations" in str(every.value)


def test_the_cli_names_the_flag_of_the_longest_list():
    args = ["fits", "--models", ",".join(MODELS), "--gpus", ",".join(GPUS), "--quantizations", ",".join(QUANTIZATIONS)]
    r = CliRunner().invoke(cli, args, env={"COLUMNS": "200"})
    assert r.exit_code == 2
    line = " ".join(r.stderr.split())
    assert "--models: 20 models × 10 GPUs or systems × 6 quantizations is 1,200 cells" in line
    assert f"at most {MAX_FITS_CELLS:,} cells" in line
    as_json = CliRunner().invoke(cli, [*args, "--json"], env={"COLUMNS": "200"})
    error = json.loads(as_json.stdout)["error"]
    assert as_json.exit_code == 2 and error["field"] == "--models" and "1,200 cells" in error["message"]
    every = CliRunner().invoke(cli, ["fits", "--all-models", "--gpus", ",".join(GPUS[:6]), "--quantizations",
                                     ",".join(QUANTIZATIONS[:3])], env={"COLUMNS": "200"})
    assert every.exit_code == 2 and "--gpus: " in " ".join(every.stderr.split())


def test_the_api_names_the_key_of_the_longest_list(tmp_path):
    client = TestClient(create_app(tmp_path / "t.db"))
    r = client.post("/api/fits", json={"models": MODELS, "gpus": GPUS, "quantizations": QUANTIZATIONS})
    assert r.status_code == 422
    error = r.json()["error"]
    assert error["field"] == "models" and "is 1,200 cells" in error["message"]
    assert f"at most {MAX_FITS_CELLS:,} cells" in error["allowed"]
