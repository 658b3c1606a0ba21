"""An unknown option is answered with the options it most likely meant: a name people type for one a
command spells otherwise, an engine's own spelling of a setting, or a misspelling; never an unrelated
option. A command planning one model takes it as its argument as well as --model."""

import pytest
import typer
from typer.testing import CliRunner

from inferplan.shells.cli import app, app_for
from inferplan.shells.cli_option_names import closest_options, option_aliases
from inferplan.shells.cli_usage import click_errors, describe

runner = CliRunner()


def refused(args: list[str]) -> tuple[str, str | None, str | None]:
    """(message, flag, allowed) the command line gets from the option parser."""
    command = typer.main.get_command(app_for(args))
    with pytest.raises(click_errors.ClickException) as info:
        command.main(args, prog_name="inferplan", standalone_mode=False)
    return describe(info.value)


@pytest.mark.parametrize(("args", "closest"), [
    (["fit", "--model", "qwen3-32b", "--accelerator", "rtx-4090"], "--gpu"),
    (["perf", "--gpu-type", "h100"], "--gpu"),
    (["search", "--gpu", "h100"], "--accelerators"),
    (["fits", "--gpu", "h100"], "--gpus"),
    (["search", "--gpus", "8"], "--max-gpus"),
    (["fit", "--num-gpus", "2"], "--gpus"),
    (["fit", "--tp", "2"], "--tensor-parallel-size"),
    (["deploy", "--tp-size", "2"], "--tensor-parallel-size"),  # SGLang's spelling (engine_flags.yaml)
    (["fit", "--ctx-size", "8k"], "--max-model-len"),  # llama.cpp's
    (["fit", "--context-length", "8k"], "--max-model-len"),  # SGLang's
    (["fit", "--mem-fraction-static", "0.9"], "--gpu-memory-utilization"),
    (["fit", "--max_num_seqs", "8"], "--max-num-seqs"),  # vLLM's Python name
    (["fit", "--quant", "awq"], "--quantization"),
    (["search", "--model", "qwen3-32b", "-q", "fp8"], "--quantizations"),  # fit's and deploy's short name
    (["perf", "--users", "8"], "--concurrency"),
    (["fit", "--gpux", "H100"], "--gpu"),  # a misspelling
    (["fit", "--max-model", "8k"], "--max-model-len"),  # the start of one
])
def test_an_unknown_option_is_answered_with_the_one_it_meant(args, closest):
    message, flag, allowed = refused(args)
    named = allowed.partition("closest: ")[2].split(", ")
    assert flag == args[-2] and named[0] == closest, allowed
    assert f"closest: {closest}" in message


@pytest.mark.parametrize(("args", "unrelated"), [
    (["fit", "--accelerator", "rtx-4090"], "--hicache-ratio"),
    (["fit", "--zzz", "1"], "closest"),
])
def test_an_unknown_option_is_never_answered_with_an_unrelated_one(args, unrelated):
    assert unrelated not in refused(args)[2]


def test_every_alias_names_options_and_commands_that_exist():
    command = typer.main.get_command(app)

    def leaves(group, path):
        for name, sub in group.commands.items():
            yield from leaves(sub, [*path, name]) if hasattr(sub, "commands") else [(" ".join([*path, name]), sub)]

    options = {name: {o for p in sub.params for o in (*p.opts, *p.secondary_opts)} for name, sub in leaves(command, [])}
    for alias in option_aliases().aliases:
        scope = alias.commands or tuple(options)
        assert set(scope) <= set(options), alias.commands
        assert all(any(o in options[c] for c in scope) for o in alias.options), alias.options
        assert all(n.startswith("-") for n in alias.names), alias.names


def test_names_compare_whatever_their_case_and_underscores():
    assert closest_options("--GPU_Type", "fit", ["--gpu", "--gpus"])[0] == "--gpu"


def test_the_model_is_taken_as_the_argument_as_it_is_as_model():
    as_option = runner.invoke(app, ["fit", "--model", "llama-3.1-8b", "--gpu", "H100", "--json"], prog_name="inferplan")
    as_argument = runner.invoke(app, ["fit", "llama-3.1-8b", "--gpu", "H100", "--json"], prog_name="inferplan")
    assert as_argument.exit_code == as_option.exit_code == 0
    assert as_argument.output == as_option.output


def test_search_takes_its_model_as_the_argument_too():
    as_option = runner.invoke(app, ["search", "--model", "qwen3-32b", "--users", "10", "--top", "0"], prog_name="inferplan")
    as_argument = runner.invoke(app, ["search", "qwen3-32b", "--users", "10", "--top", "0"], prog_name="inferplan")
    assert as_argument.exit_code == as_option.exit_code == 2  # the same refusal of --top: the model is taken either way
    assert as_argument.output == as_option.output and as_option.output.startswith("error: --top: ")


@pytest.mark.parametrize(("args", "says"), [
    (["perf", "--gpu", "H100"], "--model: required by 'inferplan perf'"),
    (["search", "--users", "10"], "name a model"),
    (["search", "qwen3-32b", "--model", "llama-3.1-8b", "--users", "10"], "give the model once"),
    (["deploy", "qwen3-32b", "--model", "llama-3.1-8b", "--gpu", "H100"], "give the model once"),
])
def test_no_model_or_two_models_are_refused_naming_model(args, says):
    done = runner.invoke(app, args, prog_name="inferplan")
    assert done.exit_code == 2 and done.output.startswith("error: --model: ") and says in done.output


@pytest.mark.parametrize(("args", "allowed"), [
    (["fit", "--host-memory-gb", "80GiB"], "a number of GiB (2^30 bytes) without a unit, e.g. 80 (80GiB in GiB)"),
    (["fit", "--host-memory-gb", "80GB"],
     "a number of GiB (2^30 bytes) without a unit, e.g. 74.51 (80GB in GiB; 80 if they are GiB)"),
    (["search", "--ttft-p95", "2s"], "a number of seconds without a unit, e.g. 2 (2s in seconds)"),
    (["search", "--ttft-p95", "500ms"], "a number of seconds without a unit, e.g. 0.5 (500ms in seconds)"),
    (["search", "--e2e-p95", "1500ms"], "a number of seconds without a unit, e.g. 1.5 (1500ms in seconds)"),
    (["simulate", "--burst-period", "2e"], "a number of seconds, without a unit"),
    (["fit", "--gpu-memory-utilization", "90%"], "a fraction (0.5 for 50%) without a unit, e.g. 0.9 (90% as a fraction)"),
    (["search", "--prefix-cache-hit-rate", "50%"], "a fraction (0.5 for 50%) without a unit, e.g. 0.5 (50% as a fraction)"),
    (["search", "--ttft-p95", "2xyz"], "a number of seconds, without a unit"),  # a unit it cannot convert: no number
    (["search", "--ttft-p95", "80GB"], "a number of seconds, without a unit"),
    (["search", "--request-rate", "2rps"], "a number per second, without a unit"),
    (["fit", "--kv-offloading-size", "8GB"], "a number without a unit, in the unit its --help names"),
    (["fit", "--gpus", "2k"], "a whole number"),  # a multiplier, not a unit: no number to offer
])
def test_a_number_given_with_a_unit_is_refused_with_it_in_the_flag_s_own_unit(args, allowed):
    message, flag, said = refused(args)
    assert flag == args[-2] and said == allowed and message.startswith(f"cannot read {args[-1]!r}")
