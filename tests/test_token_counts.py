"""Token counts as a person writes them on the command line, read as vLLM's command line reads them."""

import json

import pytest
from typer.testing import CliRunner

from inferplan.errors import InvalidScenarioError
from inferplan.shells.cli import app
from inferplan.units import parse_token_count

runner = CliRunner()


@pytest.mark.parametrize(("text", "tokens"), [
    ("131072", 131072), ("128k", 128_000), ("128K", 131_072), ("25.6k", 25_600), ("1m", 1_000_000),
    ("1M", 2**20), ("2g", 2 * 10**9), ("1G", 2**30), ("1t", 10**12), ("1T", 2**40), (" 32k ", 32_000), ("0", 0),
    ("1.001k", 1001),  # exact: 1.001 * 1000 in floating point is 1000.999…
])
def test_the_forms_vllm_reads_mean_what_vllm_makes_of_them(text, tokens):
    assert parse_token_count(text) == tokens


@pytest.mark.parametrize(("text", "says"), [
    ("12x", "cannot read '12x'"), ("1.5", "not a whole number"), ("-5", "negative"),
    ("1.0001k", "is 1000.1 tokens, not a whole number"), ("1.5K", "did you mean 1.5k?"), ("1e5", "cannot read"),
    ("", "cannot read"), ("٣", "cannot read"),  # another script's digit
])
def test_anything_else_is_refused_naming_the_field_and_the_forms(text, says):
    with pytest.raises(InvalidScenarioError, match=says) as refused:
        parse_token_count(text, field="max_model_len")
    assert refused.value.field == "max_model_len" and "128k = 128,000" in refused.value.allowed


def _fit_json(max_model_len: str) -> dict:
    done = runner.invoke(app, ["fit", "--model", "llama-3.1-8b", "--gpu", "H100", "--max-model-len", max_model_len,
                               "--json"], prog_name="inferplan")
    assert done.exit_code == 0, done.output
    return json.loads(done.output)


def test_a_suffixed_context_plans_the_same_as_the_number_it_stands_for():
    assert _fit_json("32k") == _fit_json("32000")
    assert _fit_json("32K") == _fit_json("32768") != _fit_json("32k")


@pytest.mark.parametrize("flag", ["--input-len", "--output-len", "--max-num-batched-tokens"])
def test_every_token_count_flag_takes_the_forms(flag):
    base = ["perf", "--model", "llama-3.1-8b", "--gpu", "H100", "--json"]
    written = runner.invoke(app, [*base, flag, "2k"], prog_name="inferplan")
    plain = runner.invoke(app, [*base, flag, "2000"], prog_name="inferplan")
    assert written.exit_code == 0 and written.output == plain.output


def test_the_help_says_the_forms():
    done = runner.invoke(app, ["fit", "--help"], prog_name="inferplan", env={"COLUMNS": "400"})
    assert "128k (128,000)" in done.output


TOKEN_FLAGS = {"--max-model-len", "--input-len", "--output-len", "--max-num-batched-tokens", "--ubatch-size",
               "--kv-cache-tokens"}


def _commands(command, path=()):
    yield path, command
    for name, sub in getattr(command, "commands", {}).items():
        yield from _commands(sub, (*path, name))


def test_every_command_reads_its_token_count_flags_the_same_way():
    import typer

    seen = []
    for path, command in _commands(typer.main.get_command(app)):
        for param in command.params:
            if TOKEN_FLAGS & set(param.opts):
                seen.append((" ".join(path), param.opts[0]))
                assert param.metavar == "TOKENS", (path, param.opts)  # TokensOpt's: parsed by parse_token_count
    assert {flag for _, flag in seen} == TOKEN_FLAGS and len(seen) > 20, seen
