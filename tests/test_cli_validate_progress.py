"""`inferplan validate` takes half a minute: on a terminal it names what it is checking while it runs, and
writes nothing to a stderr that is not a terminal."""

import io

from rich.console import Console
from typer.testing import CliRunner

from inferplan.shells import cli_validate
from inferplan.shells.cli import app


def test_validate_names_what_it_checks_on_a_terminal(monkeypatch):
    terminal = io.StringIO()
    monkeypatch.setattr(cli_validate, "err_console", Console(file=terminal, force_terminal=True, width=80))
    done = CliRunner().invoke(app, ["validate", "--memory"], prog_name="inferplan")
    assert done.exit_code == 0
    assert "checking the start-up memory points" in terminal.getvalue()


def test_validate_writes_no_spinner_where_stderr_is_not_a_terminal(monkeypatch):
    piped = io.StringIO()
    monkeypatch.setattr(cli_validate, "err_console", Console(file=piped, stderr=True))
    done = CliRunner().invoke(app, ["validate", "--memory"], prog_name="inferplan")
    assert done.exit_code == 0 and piped.getvalue() == ""
