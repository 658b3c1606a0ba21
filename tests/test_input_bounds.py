"""Files a person points the CLI at are bounded in size and nesting; names hold plain text; a
config.json is consistent before its numbers are read."""

import json
import os
from pathlib import Path

import pytest
from pydantic import TypeAdapter, ValidationError
from typer.testing import CliRunner

from inferplan import input_files
from inferplan.catalog.hf_import import architecture_from_config
from inferplan.catalog.loader import load_files
from inferplan.errors import CatalogError, ConfigImportError, InvalidScenarioError
from inferplan.inputs import SafeName, SafeText
from inferplan.scenario import load_scenario, parse_scenario
from inferplan.shells.cli import app
from inferplan.store import Store

runner = CliRunner()
EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "chat-seats-h100.yaml"
LLAMA = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 32,
         "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 128256, "intermediate_size": 14336,
         "torch_dtype": "bfloat16"}
DEEP = input_files.MAX_NESTING_DEPTH + 1


def one_line_error(result, *needles):
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and "RecursionError" not in result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:"), result.output
    for needle in needles:
        assert needle in lines[0]


@pytest.mark.parametrize("text", [
    "model: [" + "[" * 5000 + "]" * 5000 + "]\n",  # flow style, deeper than Python's recursion limit
    "model:\n" + "".join("  " * i + "- \n" for i in range(1, DEEP + 2)),  # block style
    "model: " + "[" * DEEP + "]" * DEEP + "\n",  # just past the cap
])
def test_a_deeply_nested_scenario_is_one_line_naming_the_file(tmp_path, text):
    path = tmp_path / "deep.yaml"
    path.write_text(text)
    one_line_error(runner.invoke(app, ["plan", str(path)]), "deep.yaml", "levels deep")


def test_nesting_up_to_the_cap_is_read(tmp_path):
    depth = input_files.MAX_NESTING_DEPTH
    input_files.check_yaml_depth("a: " + "[" * (depth - 1) + "]" * (depth - 1), where="x", field="x",
                                 error=InvalidScenarioError)
    assert input_files.parse_json("[" * depth + "]" * depth, where="x", field="x", error=ConfigImportError)


def test_a_device_or_pipe_is_refused_not_read(tmp_path):
    one_line_error(runner.invoke(app, ["plan", "/dev/zero"]), "/dev/zero", "not a regular file")
    fifo = tmp_path / "scenario.yaml"
    os.mkfifo(fifo)  # a plain read would wait for a writer for ever
    one_line_error(runner.invoke(app, ["plan", str(fifo)]), "scenario.yaml", "not a regular file")


def test_a_scenario_over_the_size_cap_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(input_files, "MAX_FILE_BYTES", 1000)
    path = tmp_path / "big.yaml"
    path.write_text(EXAMPLE.read_text() + "#" * 2000 + "\n")
    with pytest.raises(InvalidScenarioError, match="bytes"):
        load_scenario(path)
    assert load_scenario(EXAMPLE).name  # the example itself is under the cap


def test_the_size_cap_holds_for_a_file_that_grows_after_stat(tmp_path):
    path = tmp_path / "a.json"
    path.write_text("[" + "1," * 100 + "1]")
    with pytest.raises(ConfigImportError, match="more than 50 bytes|has 203 bytes"):
        input_files.read_bytes(path, field="x", error=ConfigImportError, max_bytes=50)


def test_a_deep_config_json_is_one_line(tmp_path):
    path = tmp_path / "config.json"
    path.write_text('{"hidden_size": ' + "[" * 100_000 + "]" * 100_000 + "}")
    one_line_error(runner.invoke(app, ["model", "import", str(path)]), "config.json", "levels deep")


def test_a_deep_params_json_is_refused(tmp_path):
    (tmp_path / "params.json").write_text('{"dim": 8, "moe": ' + "{\"a\": " * DEEP + "1" + "}" * DEEP + "}")
    one_line_error(runner.invoke(app, ["model", "import", str(tmp_path)]), "params.json", "levels deep")


def test_a_deep_catalogue_file_is_a_catalog_error(tmp_path):
    path = tmp_path / "extra.yaml"
    path.write_text("sources: " + "[" * 3000 + "]" * 3000 + "\n")
    with pytest.raises(CatalogError, match="levels deep"):
        load_files([path], data_dir=tmp_path)


# --- config.json consistency -------------------------------------------------------------------

@pytest.mark.parametrize(("change", "field", "allowed"), [
    ({"num_key_value_heads": 12}, "num_key_value_heads", "divisor of num_attention_heads"),
    ({"torch_dtype": "float13"}, "torch_dtype", "bfloat16, float16, float32"),
    ({"dtype": "int3"}, "dtype", "bfloat16"),
    ({"architectures": []}, "architectures", "non-empty list"),
    ({"architectures": "LlamaForCausalLM"}, "architectures", "non-empty list"),
    ({"architectures": ["Llama\u202eForCausalLM"]}, "architectures", "printable"),
    ({"model_type": "llama\x00"}, "model_type", "printable"),
    ({"hidden_size": 4100}, "head_dim", "multiple of num_attention_heads"),
])
def test_an_inconsistent_config_names_the_key_and_what_is_allowed(change, field, allowed):
    with pytest.raises(ConfigImportError) as info:
        architecture_from_config({**LLAMA, **change})
    assert info.value.field == field and allowed in info.value.allowed
    assert field in str(info.value)


def test_a_stated_head_dim_need_not_multiply_to_the_hidden_size():
    arch = architecture_from_config({**LLAMA, "hidden_size": 4100, "head_dim": 128})
    assert arch.head_dim == 128
    assert architecture_from_config({**LLAMA, "torch_dtype": "float16"}).torch_dtype == "float16"


# --- plain-text names --------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["a\x00b", "evil\u202egnp.exe", "x\u2066y", "line\nbreak", "esc\x1b[31m", "c1\x85c1",
                                  "n" * 201])
def test_a_name_with_control_or_bidi_characters_or_too_long_is_refused(name, tmp_path):
    with pytest.raises(ValidationError):
        TypeAdapter(SafeName).validate_python(name)
    with pytest.raises(InvalidScenarioError) as info:
        parse_scenario(_renamed(name))
    assert info.value.field == "name"
    with pytest.raises(InvalidScenarioError) as info:
        Store(tmp_path / "db.sqlite").save_scenario(name, load_scenario(EXAMPLE))
    assert info.value.field == "name"


def _renamed(name: str) -> str:
    lines = [line for line in EXAMPLE.read_text().splitlines() if not line.startswith("name:")]
    return "\n".join([f"name: {json.dumps(name)}", *lines]) + "\n"


def test_plain_names_and_multiline_text_pass():
    assert TypeAdapter(SafeName).validate_python("Chat seats — H100 (mid) é 日本") == "Chat seats — H100 (mid) é 日本"
    assert TypeAdapter(SafeText).validate_python("line one\n\tline two") == "line one\n\tline two"
    assert TypeAdapter(SafeName).validate_python("a\x00", context={"stored": True}) == "a\x00"  # saved rows still read


def test_the_api_refuses_a_bidi_name_in_a_saved_name_and_a_scenario(tmp_path):
    from fastapi.testclient import TestClient

    from inferplan.shells.api import create_app

    client = TestClient(create_app(tmp_path / "api.db"))
    scenario = {"name": "fine", "model": "llama-3.1-8b", "platform": {"system": "hgx-h100"}}
    saved = client.post("/api/scenarios", json={"name": "evil\u202etxt.exe", "scenario": scenario})
    assert saved.status_code == 422 and "name" in saved.text
    planned = client.post("/api/plan", json={"scenario": {**scenario, "name": "a\x00b"}, "draws": 0})
    assert planned.status_code == 422 and "name" in planned.text
    assert client.post("/api/scenarios", json={"name": "plain", "scenario": scenario}).status_code == 201


def test_the_shipped_catalogue_files_are_within_the_caps():
    from inferplan.catalog.loader import DATA_DIR

    for path in DATA_DIR.glob("**/*.yaml"):
        text = input_files.read_text(path, field=str(path), error=CatalogError)
        input_files.check_yaml_depth(text, where=path.name, field=str(path), error=CatalogError)
