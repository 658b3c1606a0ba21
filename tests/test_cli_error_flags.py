"""A library refusal whose prose names inputs reads, on every command, with the flags a user types:
the words the error names as inputs become flags, a value spelled like an input stays as written."""

import json
import re

import pytest
from typer.testing import CliRunner

from inferplan.errors import InvalidScenarioError
from inferplan.inputs.deployment import Deployment
from inferplan.shells.cli import app
from inferplan.shells.cli_common import FLAGS

runner = CliRunner()
OLD_RULE = ("--model", "llama-3.1-8b", "--gpu", "h100", "--model-runner", "V1", "--engine-version", "0.6.4")


def refusal(*args):
    r = runner.invoke(app, [*args, "--json"])
    assert r.exit_code == 2, r.output
    return json.loads(r.stdout)["error"]


def fields_named(text):
    """The Deployment inputs a text names as the library spells them (with an underscore)."""
    return {f for f in Deployment.model_fields if "_" in f and f in FLAGS and re.search(rf"(?<![\w-]){f}\b", text)}


@pytest.mark.parametrize("command", [("fit",), ("perf",), ("deploy",), ("simulate", "--request-rate", "1")])
def test_every_command_says_the_inputs_a_refusal_names_as_flags(command):
    error = refusal(*command, *OLD_RULE)
    said = f"{error['message']} (allowed: {error['allowed']})"
    assert fields_named("an engine_version of") == {"engine_version"}  # the check below can fail
    assert error["field"] == "--model-runner" and "--engine-version" in error["allowed"]
    assert not fields_named(said), said


@pytest.mark.parametrize("command", ["fit", "perf"])
def test_a_refusal_about_a_speculative_method_names_the_tokens_flag(command):
    error = refusal(command, "--model", "llama-3.1-8b", "--gpu", "h100", "--speculative-method", "ngram")
    assert "--speculative-tokens" in error["message"] and "--speculative-tokens" in error["allowed"]
    assert "speculative_tokens" not in error["message"] + error["allowed"]


def test_a_value_spelled_like_an_input_stays_a_value():
    # draft_model is both the speculative method and the checkpoint's input: the error lists its inputs
    error = refusal("perf", "--model", "llama-3.1-8b", "--gpu", "h100", "--speculative-tokens", "2",
                       "--speculative-method", "ngram", "--draft-model", "some/draft")
    assert error["field"] == "--draft-model"
    assert "eagle3 or draft_model method" in error["message"]
    assert error["allowed"] == "with --speculative-method eagle3 (or draft_model), or leave it out"


def test_an_error_lists_the_inputs_its_prose_names():
    listed = InvalidScenarioError("x", field="draft_model", names=("speculative_method",))
    assert listed.names == ("speculative_method",) and InvalidScenarioError("x").names is None


@pytest.mark.parametrize("field", sorted(f for f in Deployment.model_fields if "_" in f and f in FLAGS))
def test_each_deployment_input_a_message_names_is_said_as_its_flag(field, capsys):
    import typer

    from inferplan.shells.cli_common import run

    def refuse():
        raise InvalidScenarioError(f"{field} 2 is refused beside {field}", field=field, allowed=f"leave {field} out")

    with pytest.raises(typer.Exit):
        run(refuse)
    line = capsys.readouterr().err.replace("\n", " ")
    flag = FLAGS[field]
    assert line.count(flag) == 4 and not re.search(rf"(?<![\w-]){field}\b", line), line


def test_a_what_fits_cell_says_the_inputs_its_refusal_names_as_flags():
    r = runner.invoke(app, ["fits", "--models", "llama-3.1-8b", "--gpus", "h100", "--max-model-len", "1000000"],
                      env={"COLUMNS": "300"})
    assert "--max-model-len 1,000,000 is longer" in r.output and "max_model_len" not in r.output


def test_the_speculative_methods_an_error_allows_stay_values():
    error = refusal("perf", "--model", "llama-3.1-8b", "--gpu", "h100", "--speculative-tokens", "2",
                    "--speculative-method", "medusa")
    assert error["field"] == "--speculative-method" and error["allowed"] == "ngram, draft_model, eagle3, mtp"


def test_a_quoted_word_is_a_value_and_stays_as_written():
    from inferplan.shells.cli_common import flags_in

    said = flags_in("'draft_model' is refused; draft_model and max_model_len", {"draft_model": "--draft-model",
                                                                                "max_model_len": "--max-model-len"})
    assert said == "'draft_model' is refused; --draft-model and --max-model-len"


@pytest.mark.parametrize("given, flag", [(("--models", "llama-3.1-8b,no-such-model"), "--models"),
                                         (("--model", "no-such-model"), "--model"), (("no-such-model",), "--model")])
def test_search_names_the_model_flag_as_it_was_given(given, flag):
    """An unknown model in --models is refused naming --models, the flag the user typed, not --model."""
    error = refusal("search", *given, "--users", "10")
    assert error["field"] == flag and "no-such-model" in error["message"]
