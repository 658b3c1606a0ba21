"""A model name the catalogue lacks in ``deploy`` (deploy/model_name.py): a Hugging Face repo id is
served with a note that its memory was not checked; any other name is refused with the closest ids."""

import json

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from inferplan.deploy.model_name import is_repo_id
from inferplan.shells.api import create_app
from inferplan.shells.cli import app as cli


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    return TestClient(create_app(tmp_path_factory.mktemp("names") / "n.db"))


@pytest.mark.parametrize("name,ok", [
    ("Qwen/Qwen3-8B", True), ("some-org/some-model", True), ("meta-llama/Llama-3.3-70B-Instruct", True),
    ("qwen3-8bb", False), ("not a model at all", False), ("Qwen3\u20118B\U0001F600", False), ("org/a b", False),
    ("a/b/c", False), ("-org/x", False), ("org/x.", False), ("org/a--b", False), ("org/a..b", False),
    ("org/" + "x" * 96, True), ("org/" + "x" * 97, False)])
def test_a_repo_id_has_hugging_faces_shape(name, ok):
    assert is_repo_id(name) is ok


@pytest.mark.parametrize("name", ["qwen3-8bb", "not a model at all", "Qwen3\u20118B\U0001F600"])
def test_an_unknown_name_that_is_no_repo_id_is_refused_with_the_closest_ids(client, name):
    r = client.post("/api/deploy", json={"deployment": {"model": name, "gpu": "h100-sxm"}})
    assert r.status_code == 422, r.text
    assert r.json()["error"]["field"] == "deployment.model" and r.json()["error"]["allowed"]
    if name == "qwen3-8bb":
        assert r.json()["error"]["allowed"].startswith("qwen3-8b")
    out = CliRunner().invoke(cli, ["deploy", "--model", name, "--gpu", "h100"])
    assert out.exit_code == 2 and "--model" in out.output, out.output


def test_a_repo_id_the_catalogue_lacks_is_served_saying_memory_was_not_checked(client):
    r = client.post("/api/deploy", json={"deployment": {"model": "some-org/some-model", "gpu": "h100-sxm"}})
    assert r.status_code == 200, r.text
    command = r.json()["command"]
    assert command["checkpoint"] == "some-org/some-model"
    assert any("memory was not checked" in n for n in command["notes"])
    out = CliRunner().invoke(cli, ["deploy", "--model", "some-org/some-model", "--gpu", "h100", "--json"])
    assert out.exit_code == 0 and any("memory was not checked" in n for n in json.loads(out.stdout)["command"]["notes"])


def test_a_catalogue_model_has_no_such_note(client):
    r = client.post("/api/deploy", json={"deployment": {"model": "qwen3-8b", "gpu": "h100-sxm"}})
    assert r.status_code == 200 and not any("not checked" in n for n in r.json()["command"]["notes"])


def test_a_config_json_and_its_folder_are_still_served_by_the_cli(tmp_path):
    from importlib.resources import files

    config = files("inferplan.catalog.data").joinpath("hf_configs/deepseek-v2-lite.json").read_text()
    (tmp_path / "config.json").write_text(config)
    for model in (str(tmp_path / "config.json"), str(tmp_path)):
        out = CliRunner().invoke(cli, ["deploy", "--model", model, "--gpu", "h100", "--json"])
        assert out.exit_code == 0, out.output
        assert not any("not checked" in n for n in json.loads(out.stdout)["command"]["notes"])
