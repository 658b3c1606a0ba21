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


def _computed(monkeypatch, **question) -> int:
    """The cells ``fits_matrix`` computes for ``question``, the bound lifted: one ``fit`` a cell on single GPUs."""
    calls = []
    planned = matrix.fit

    def counting(*args, **kwargs):
        calls.append(1)
        return planned(*args, **kwargs)

    with monkeypatch.context() as m:
        m.setattr(matrix, "fit", counting)
        m.setattr(matrix, "MAX_FITS_CELLS", 10**6)
        fits_matrix(catalog=CATALOG, **question)
    return len(calls)


def test_with_no_quantizations_every_build_computed_is_counted(monkeypatch):
    # qwen3-32b and gemma-3-27b are computed in several builds each before one a model is kept
    question = {"models": ["qwen3-32b", "gemma-3-27b", "llama-3.1-8b"], "gpus": ["rtx-4090", "h100-sxm"]}
    computed = _computed(monkeypatch, **question)
    assert computed > 3 * 2  # more builds than models: one build a model would under-count
    monkeypatch.setattr(matrix, "MAX_FITS_CELLS", computed)  # at the bound: computed
    assert len(fits_matrix(catalog=CATALOG, **question).cells) == 3 * 2
    monkeypatch.setattr(matrix, "MAX_FITS_CELLS", computed - 1)  # one cell past it: refused, naming the longest list
    with pytest.raises(InvalidScenarioError) as err:
        check_size(CATALOG, models=question["models"], gpus=question["gpus"])
    assert err.value.field == "models" and f"× 2 GPUs or systems is {computed:,} cells" in str(err.value)
    with pytest.raises(InvalidScenarioError):
        fits_matrix(catalog=CATALOG, **question)


def test_every_model_on_sixteen_gpus_is_refused_by_the_builds_it_computes(monkeypatch):
    """60 models × 16 GPUs is 960, under the bound; the matrix computes every build of each: refused unplanned."""
    gpus = ["rtx-4090", "rtx-3090", "rtx-5090", "h100-sxm", "a100-80gb", "l40s", "h200-sxm", "b200", "mi300x", "l4",
            "a10", "t4", "rtx-4080", "rtx-4070", "rtx-3080", "rtx-3070"]

    def planned(*_args, **_kwargs):
        raise AssertionError("a cell was planned")

    monkeypatch.setattr(matrix, "fit", planned)
    with pytest.raises(InvalidScenarioError) as err:
        fits_matrix(all_models=True, gpus=gpus, catalog=CATALOG)
    assert err.value.field == "gpus" and "× 16 GPUs or systems is" in str(err.value)


def test_every_format_counted_is_at_least_what_is_computed(monkeypatch):
    """``every_build`` (the homelab view's matrix): the engine's own formats counted before any is left out."""
    model = ["qwen3-32b"]
    computed = _computed(monkeypatch, models=model, gpus=["rtx-4090"], engine="llamacpp", every_build=True)
    monkeypatch.setattr(matrix, "MAX_FITS_CELLS", computed - 1)
    with pytest.raises(InvalidScenarioError) as err:
        check_size(CATALOG, models=model, gpus=["rtx-4090"], engine="llamacpp", every_build=True)
    assert err.value.field == "models"  # the longest list given, the first of equals


def test_the_api_checks_a_matrix_size_once_before_any_work(tmp_path, monkeypatch):
    from inferplan.shells import api_fits
    checked, check = [], matrix.check_size
    counting = lambda *a, **k: checked.append(k) or check(*a, **k)  # noqa: E731
    monkeypatch.setattr(matrix, "check_size", counting)
    monkeypatch.setattr(api_fits, "check_size", counting)
    client = TestClient(create_app(tmp_path / "t.db"))
    r = client.post("/api/fits", json={"models": ["qwen3-8b"], "gpus": ["rtx-4090"], "quantizations": ["native"]})
    assert r.status_code == 200 and len(r.json()["cells"]) == 1 and len(checked) == 1
