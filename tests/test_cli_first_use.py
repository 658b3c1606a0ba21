"""What a first-time user's slips get on the command line: each refusal names the flag and says what it
takes, and never offers what the field does not have (a default model)."""

import json

from typer.testing import CliRunner

from inferplan.shells.cli import app

runner = CliRunner()


def error_of(args: list[str]) -> dict:
    done = runner.invoke(app, [*args, "--json"], prog_name="inferplan")
    assert done.exit_code == 2, done.output
    return json.loads(done.stdout.splitlines()[-1])["error"]


def test_a_plan_without_hardware_says_what_names_it():
    error = error_of(["perf", "--model", "qwen3-32b"])
    assert error["field"] == "--gpu" and error["allowed"] == "an accelerator id or alias, or a system id"


def test_a_blank_model_is_not_offered_a_default_it_lacks():
    error = error_of(["fit", "--model", " ", "--gpu", "h100"])
    assert error["field"] == "--model" and "default" not in error["message"]


def test_dash_h_is_help_everywhere_and_the_root_says_its_version():
    import subprocess
    import sys
    from importlib.metadata import version
    from pathlib import Path

    for args in (["fit"], ["catalog", "list"], []):
        short, long = (runner.invoke(app, [*args, flag], prog_name="inferplan") for flag in ("-h", "--help"))
        assert short.exit_code == long.exit_code == 0 and short.output == long.output and "Usage:" in short.output
    done = subprocess.run([str(Path(sys.executable).parent / "inferplan"), "--version"], capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout == f"inferplan {version('inferplan')}\n"


def test_a_stray_argument_is_told_what_the_command_takes_as_arguments():
    import subprocess
    import sys
    from pathlib import Path

    inferplan = str(Path(sys.executable).parent / "inferplan")
    for args, allowed in ((["fit", "qwen3-32b", "rtx-4090"], "MODEL as its argument, and every other input by its flag"),
                          (["racks", "100"], "no arguments: every input by its flag")):
        done = subprocess.run([inferplan, *args, "--json"], capture_output=True, text=True)
        assert done.returncode == 2 and json.loads(done.stdout)["error"]["allowed"] == allowed, done.stderr


def test_every_command_answers_version_as_the_root_does_and_keeps_it_out_of_its_help():
    from importlib.metadata import version

    from inferplan.shells.cli import app_for

    said = f"inferplan {version('inferplan')}\n"
    for args in (["fit"], ["fit", "--model", "llama-3.1-8b"], ["catalog", "list"], ["catalog"], ["measurements", "list"]):
        for cli in (app, app_for(args[:1])):  # the whole app, and the one a start builds for the command
            done = runner.invoke(cli, [*args, "--version"], prog_name="inferplan")
            assert done.exit_code == 0 and done.output == said, (args, done.output)
    assert "--version" not in runner.invoke(app, ["fit", "--help"]).output


def test_the_command_list_reads_in_the_readme_order_with_each_line_whole_at_60_columns():
    done = runner.invoke(app, ["--help"], prog_name="inferplan", env={"COLUMNS": "60"}, terminal_width=60)
    listed = done.stdout.split("Commands:\n", 1)[1].splitlines()
    names = [line.split()[0] for line in listed if line.strip()]
    assert names[:6] == ["fit", "fits", "perf", "frontier", "plan", "search"]
    assert [line for line in listed if line.endswith("...") or len(line) > 60] == []  # no summary cut short
