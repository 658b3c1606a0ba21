"""A bare number is a count, never an accelerator name: `--gpu 2` used to match trainium2 by its digits.
`fits` lists GPU types in --gpus and takes a count of each in --gpu-count (the web homelab box's count)."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from inferplan.errors import UnknownHardwareError
from inferplan.memory.matrix import fits_matrix
from inferplan.shells.api import create_app
from inferplan.shells.cli import app

runner = CliRunner()


@pytest.mark.parametrize("name", ["2", "3", " 8 ", "300", "100"])
def test_a_bare_number_is_not_an_accelerator_name(catalog, name):
    with pytest.raises(UnknownHardwareError) as err:
        catalog.accelerator(name)
    assert err.value.field == "gpu" and "count" in str(err.value) and "gpus" in str(err.value)


def test_fit_refuses_a_count_given_as_the_gpu():
    r = runner.invoke(app, ["fit", "--model", "qwen3-8b", "--gpu", "2"])
    assert r.exit_code == 2 and r.stderr.startswith("error: --gpu: '2' is a number"), r.output
    assert "trainium" not in r.output


def test_fits_asks_whether_a_number_in_its_gpu_list_meant_a_count():
    r = runner.invoke(app, ["fits", "--gpus", "2"])
    assert r.exit_code == 2 and "did you mean a count? (--gpu-count 2)" in r.stderr, r.output


def test_fits_runs_each_gpu_type_as_a_count_of_gpus(catalog):
    one = fits_matrix(models=["qwen3-32b"], gpus=["rtx-4090"], quantizations=["int4-awq"], catalog=catalog).cells[0]
    two = fits_matrix(models=["qwen3-32b"], gpus=["rtx-4090"], quantizations=["int4-awq"], gpu_count=2,
                      catalog=catalog).cells[0]
    assert two.hardware == "2× rtx-4090" and two.result.parallel.gpus == 2
    assert two.result.kv_cache_tokens > one.result.kv_cache_tokens
    r = runner.invoke(app, ["fits", "--models", "qwen3-8b", "--gpus", "rtx-4090", "--gpu-count", "2"])
    assert r.exit_code == 0 and "2× rtx-4090" in r.stdout, r.output


def test_the_api_takes_the_count_and_refuses_a_number_as_a_type(tmp_path):
    client = TestClient(create_app(tmp_path / "t.db"))
    ok = client.post("/api/fits", json={"models": ["qwen3-8b"], "gpus": ["rtx-4090"], "gpu_count": 2})
    assert ok.status_code == 200 and ok.json()["cells"][0]["hardware"] == "2× rtx-4090"
    bad = client.post("/api/fits", json={"gpus": ["2"]})
    assert bad.status_code == 422 and bad.json()["error"]["field"] == "gpus"
    assert "did you mean a count" in bad.json()["error"]["message"]


@pytest.mark.parametrize("number, card", [("4090", "rtx-4090"), ("3090", "rtx-3090"), ("5090", "rtx-5090")])
def test_a_model_number_still_names_its_card(catalog, number, card):
    """Four digits is a card's model number, not a count: --gpu 4090 is the RTX 4090."""
    assert catalog.accelerator(number).id == card
