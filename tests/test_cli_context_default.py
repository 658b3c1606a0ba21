"""perf and simulate plan the engine at the request's context where --max-model-len is left out (fit
and deploy at the model's own); each command's help says the default it plans at."""

import json

from typer.testing import CliRunner

from inferplan.shells.cli import app

runner = CliRunner()
# Qwen3-32B Q4_K_M on one RTX 4090 with llama.cpp: its own 40,960-token context does not fit, a request's does
HOME = ["--model", "qwen3-32b", "--gpu", "RTX 4090", "-q", "q4_k_m", "--engine", "llamacpp"]


def _help(command: str) -> str:
    result = runner.invoke(app, [command, "--help"], terminal_width=400)
    assert result.exit_code == 0
    return " ".join(result.output.split())


def test_perf_plans_the_request_context_its_help_names_and_fit_plans_the_models_own():
    default = runner.invoke(app, ["perf", *HOME, "--input-len", "1024", "--output-len", "256", "--json"])
    stated = runner.invoke(app, ["perf", *HOME, "--input-len", "1024", "--output-len", "256", "--json",
                                 "--max-model-len", "1280"])
    assert default.exit_code == 0 and stated.exit_code == 0
    assert json.loads(default.output)["tpot_s"] == json.loads(stated.output)["tpot_s"]
    own = runner.invoke(app, ["perf", *HOME, "--max-model-len", "40960"])
    assert own.exit_code == 2 and "--max-model-len" in own.output
    assert runner.invoke(app, ["fit", *HOME]).exit_code == 1  # fit: the model's own context, which does not fit
    assert "default: the request's, input + output" in _help("perf")
    assert "default: the mean request's input + output, or a trace's longest request" in _help("simulate")
    for command in ("fit", "deploy"):
        assert "(default: the model's own)" in _help(command)


def test_every_option_of_every_command_says_what_it_is():
    import typer

    def commands(group, path: str = ""):
        for name, command in getattr(group, "commands", {}).items():
            yield from commands(command, f"{path} {name}") if hasattr(command, "commands") else [(f"{path} {name}", command)]

    found = list(commands(typer.main.get_command(app)))
    assert any(path == " frontier" for path, _ in found) and any(path == " catalog show" for path, _ in found)
    bare = [f"inferplan{path} {p.opts[0]}" for path, command in found
            for p in command.params if p.param_type_name == "option" and not (p.help or "").strip()]
    assert not bare, bare
