"""A refusal of what a person gave (a config.json to import, a catalogue name or search) names the field and
what it takes: the CLI prints both and exits 2, the API answers 422 (404 for a name) with the place and
``allowed``; and no config-import refusal in the package, nor in the file readers it raises through, leaves
``allowed`` out."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from inferplan.catalog.hf_import import architecture_from_config, safetensors_header_bytes
from inferplan.errors import ConfigImportError
from inferplan.input_files import read_bytes
from inferplan.shells.api import create_app
from inferplan.shells.cli import app

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "inferplan"
LLAMA = Path(__file__).parent / "data" / "configs_2026" / "meta-llama__Llama-3.1-8B-Instruct.json"


def _llama_without(key: str) -> dict:
    return {k: v for k, v in json.loads(LLAMA.read_bytes()).items() if k != key}


def test_a_config_missing_a_key_says_the_key_it_takes():
    with pytest.raises(ConfigImportError) as err:
        architecture_from_config(_llama_without("vocab_size"))
    assert err.value.field == "vocab_size" and err.value.allowed == "a config.json stating vocab_size"


def test_a_config_that_is_no_object_says_what_it_takes():
    with pytest.raises(ConfigImportError) as err:
        architecture_from_config([1, 2])
    assert err.value.field == "config.json" and "JSON object" in err.value.allowed


def test_the_cli_exits_2_with_what_a_config_import_takes(tmp_path):
    config = tmp_path / "config.json"
    config.write_text(json.dumps(_llama_without("vocab_size")))
    missing = CliRunner().invoke(app, ["fit", "--model", str(config), "--gpu", "H100"])
    assert missing.exit_code == 2 and "(allowed: a config.json stating vocab_size)" in missing.output
    empty = tmp_path / "empty"
    empty.mkdir()
    folder = CliRunner().invoke(app, ["fit", "--model", str(empty), "--gpu", "H100"])
    assert folder.exit_code == 2 and "--model" in folder.output
    assert "(allowed: a config.json, a model folder holding one, or a repo id" in " ".join(folder.output.split())


def test_a_config_that_is_no_json_says_what_it_takes(tmp_path):
    config = tmp_path / "config.json"
    config.write_text('{"hidden_size": 1,\n')
    out = CliRunner().invoke(app, ["fit", "--model", str(config), "--gpu", "H100", "--json"])
    assert out.exit_code == 2
    error = json.loads(out.stdout)["error"]
    assert "is not valid JSON" in error["message"] and error["allowed"] == "JSON text (RFC 8259)"


def test_a_safetensors_header_that_is_no_json_says_what_it_takes(tmp_path):
    shard = tmp_path / "model.safetensors"
    shard.write_bytes((5).to_bytes(8, "little") + b"{oops")
    with pytest.raises(ConfigImportError) as err:
        safetensors_header_bytes(shard)
    assert err.value.allowed == "JSON text (RFC 8259)"


def test_a_file_that_cannot_be_read_says_what_it_takes(tmp_path):
    with pytest.raises(ConfigImportError) as err:
        read_bytes(tmp_path / "gone.json", field="model", error=ConfigImportError)
    assert err.value.field == "model" and "exists" in err.value.allowed


def test_the_api_names_the_place_and_what_a_catalogue_query_takes(tmp_path):
    client = TestClient(create_app(tmp_path / "test.db"))
    blank = client.get("/api/search", params={"q": " -"})
    assert blank.status_code == 422
    assert blank.json()["detail"][0]["loc"] == ["query", "q"]
    assert blank.json()["detail"][0]["allowed"] == "letters or digits of an id, a name or an alias"
    source = client.get("/api/catalog/sources/no-such-source")
    assert source.status_code == 404 and source.json()["detail"][0]["loc"] == ["path", "name"]
    assert source.json()["detail"][0]["allowed"] == "the id of a source the catalogue lists"


def _calls(text: str, name: str):
    for match in re.finditer(rf"(?:raise|return) {name}\(", text):
        depth, i = 1, match.end()
        while depth:
            depth += {"(": 1, ")": -1}.get(text[i], 0)
            i += 1
        yield text[match.start():i]


# the readers the importer hands ConfigImportError to, raising it as ``error``
READERS = [PACKAGE / "input_files.py", PACKAGE / "input_codecs.py"]


def test_every_config_import_refusal_says_what_is_allowed():
    calls = [(path, call) for path in sorted(PACKAGE.rglob("*.py"))
             for call in _calls(path.read_text(encoding="utf-8"), "ConfigImportError")]
    calls += [(path, call) for path in READERS for call in _calls(path.read_text(encoding="utf-8"), "error")]
    bare = [f"{path.relative_to(PACKAGE)}: {' '.join(call.split())[:80]}" for path, call in calls if "allowed=" not in call]
    assert not bare, bare


def test_an_unknown_entry_says_where_each_shell_lists_the_names():
    out = CliRunner().invoke(app, ["catalog", "show", "no-such-entry-anywhere", "--json"])
    assert out.exit_code == 2
    allowed = json.loads(out.stdout)["error"]["allowed"]
    assert "`inferplan catalog list KIND`" in allowed  # the CLI has no search command
    assert "the API's GET /api/search?q= finds one from part of its name" in allowed
