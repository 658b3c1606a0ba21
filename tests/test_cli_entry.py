"""The console entry builds only the sub-command it is asked for; what a user sees does not change."""

import pytest
from typer.testing import CliRunner

from inferplan.shells.cli import app, app_for

runner = CliRunner()
NAMES = sorted({c.name for c in app.registered_commands} | {g.name for g in app.registered_groups})

CASES = [
    ["fit", "--model", "llama-3.1-8b", "--gpu", "H100"],
    ["fit", "--model", "llama-3.1-8b", "--gpu", "H100", "--json"],
    ["fit", "--model", "llama-3.1-8b", "--gpu", "H100", "--gpus", "abc"],
    ["fit", "--model", "llama-3.1-8b", "--gpu", "H100", "--no-such-flag"],
    ["perf", "--model", "llama-3.1-8b", "--gpu", "H100", "--help"],
    ["catalog", "list", "accelerators"],
    ["catalog", "nope"],
]


@pytest.mark.parametrize("name", NAMES)
def test_each_name_gets_an_app_holding_only_it(name):
    lean = app_for([name, "--help"])
    assert lean is not app
    held = [c.name for c in lean.registered_commands] + [g.name for g in lean.registered_groups]
    assert held == [name]


@pytest.mark.parametrize("args", [[], ["--help"], ["nope"], ["-x"]])
def test_anything_else_gets_the_whole_app(args):
    assert app_for(args) is app


@pytest.mark.parametrize("args", CASES, ids=" ".join)
def test_the_lean_app_answers_as_the_whole_app(args):
    whole = runner.invoke(app, args, prog_name="inferplan")
    lean = runner.invoke(app_for(args), args, prog_name="inferplan")
    assert (lean.exit_code, lean.output) == (whole.exit_code, whole.output)


def test_the_console_entry_writes_everything_and_keeps_the_exit_status(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    inferplan = str(Path(sys.executable).parent / "inferplan")
    listing = ["catalog", "list", "models", "--json"]  # cheap to build, and several pipe buffers (64 KiB) long
    whole = runner.invoke(app, listing, prog_name="inferplan").output
    assert len(whole) > 2 * 2**16
    done = subprocess.run([inferplan, *listing], capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout == whole  # flushed in full before the process ends
    bad = subprocess.run([inferplan, "fit", "--model", "nope", "--gpu", "h100"], capture_output=True, text=True)
    assert bad.returncode == 2 and "--model" in bad.stderr
    closed = subprocess.run(f"{inferplan} {' '.join(listing)} | head -1", shell=True, capture_output=True, text=True)
    assert closed.stdout == whole.splitlines(keepends=True)[0] and "Traceback" not in closed.stderr


USAGE_ERRORS = [  # what the option parser refuses -> the flag the one line names, and what it says is allowed
    (["fit", "--model", "llama-3.1-8b", "--gpu", "H100", "--gpus", "abc"], "--gpus", "a whole number"),
    (["perf", "--model", "llama-3.1-8b", "--gpu", "H100", "--input-len", "1.5"], "--input-len", "a whole number"),
    (["fit", "--model", "llama-3.1-8b", "--gpu", "H100", "--host-memory-gb", "lots"], "--host-memory-gb", "a number"),
    (["fit", "--model", "llama-3.1-8b", "--gpux", "H100"], "--gpux", "closest: --gpu, --gpus"),
    (["fit", "--gpu", "H100"], "--model", None),
    (["fit", "--model"], "--model", None),
    (["nope"], None, "fit, fits, perf"),
    (["fit", "--model", "llama-3.1-8b", "--gpu", "H100", "--json=yes"], "--json", "the bare flag"),
    (["validate", "--worst", "0"], "--worst", "at least 1"),
    (["frontier", "--model", "llama-3.1-8b", "--gpu", "H100", "--points", "1000"], "--points", "at most 256"),
    (["deploy", "--model", "llama-3.1-8b", "--gpu", "H100", "--speculative-tokens", "-1"], "--speculative-tokens",
     "at least 0"),  # 0: no speculative decoding
    (["fit", "--model", "llama-3.1-8b", "--gpu", "H100", "--max-model-len", "12x"], "--max-model-len", "128k = 128,000"),
    (["fit", "--model", "llama-3.1-8b", "--gpu", "H100", "--max-model-len", "-5"], "--max-model-len", "128k = 128,000"),
    (["perf", "--model", "llama-3.1-8b", "--gpu", "H100", "--max-num-batched-tokens", "1.0001k"], "--max-num-batched-tokens",
     "128K = 131,072"),
]


@pytest.mark.parametrize(("args", "flag", "allowed"), USAGE_ERRORS, ids=lambda v: " ".join(v) if isinstance(v, list) else None)
def test_the_console_entry_gives_usage_errors_the_one_line_contract(args, flag, allowed):
    import json
    import subprocess
    import sys
    from pathlib import Path

    inferplan = str(Path(sys.executable).parent / "inferplan")
    done = subprocess.run([inferplan, args[0], "--json", *args[1:]], capture_output=True, text=True)
    lines = done.stderr.splitlines()
    assert done.returncode == 2 and len(lines) == 1, done.stderr
    assert lines[0].startswith(f"error: {flag}: " if flag else "error: ")
    error = json.loads(done.stdout)["error"]
    assert error["field"] == flag
    if allowed:
        assert allowed in lines[0] and allowed in error["allowed"]


def test_a_bare_group_still_shows_its_help():
    import subprocess
    import sys
    from pathlib import Path

    done = subprocess.run([str(Path(sys.executable).parent / "inferplan"), "catalog"], capture_output=True, text=True)
    assert done.returncode == 2 and "list" in done.stdout + done.stderr and "error:" not in done.stderr


@pytest.mark.parametrize(("args", "flag"), [(["fit", "--json", "--no-such-flag"], "--no-such-flag"),
                                          (["fit", "--json", "--model", "nope", "--gpu", "H100"], "--model")])
def test_an_input_error_under_json_with_stdout_closed_is_still_the_one_line(args, flag):
    """The reader of stdout gone (`inferplan fit --bogus --json | head -0`): the line on stderr, exit 2, no traceback."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    read, write = os.pipe()
    os.close(read)  # nobody will read what the command writes to stdout
    try:
        done = subprocess.run([str(Path(sys.executable).parent / "inferplan"), *args],
                              stdout=write, stderr=subprocess.PIPE, text=True)
    finally:
        os.close(write)
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == 2 and done.stderr.startswith(f"error: {flag}: ")


def test_a_usage_error_names_an_argument_as_its_command_does(tmp_path):
    """'measurements show 999' refuses with 'ID: no stored measurement 999'; 'show abc' names ID too."""
    import subprocess
    import sys
    from pathlib import Path

    inferplan = str(Path(sys.executable).parent / "inferplan")
    db = str(tmp_path / "m.db")
    unread = subprocess.run([inferplan, "measurements", "show", "abc", "--db", db], capture_output=True, text=True)
    missing = subprocess.run([inferplan, "measurements", "show", "999", "--db", db], capture_output=True, text=True)
    assert unread.returncode == missing.returncode == 2
    assert unread.stderr.startswith("error: ID: cannot read 'abc'") and missing.stderr.startswith("error: ID: ")
    # 'measurements import nofile' names FILE: so does the parser when no file is given
    none = subprocess.run([inferplan, "measurements", "import", "--db", db], capture_output=True, text=True)
    assert none.returncode == 2 and none.stderr.startswith("error: FILE: required")
