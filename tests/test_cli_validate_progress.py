"""`inferplan validate` takes half a minute: on a terminal it names what it is checking while it runs; its
spinner and progress bar stay on stderr and leave stdout to the output (a ``--json`` error included), and a
stderr that is not a terminal gets nothing."""

import io
import json

from rich.console import Console
from typer.testing import CliRunner

from inferplan.errors import InferplanError
from inferplan.shells import cli_validate
from inferplan.shells.cli import app


def _terminal(monkeypatch) -> io.StringIO:
    terminal = io.StringIO()
    monkeypatch.setattr(cli_validate, "err_console", Console(file=terminal, force_terminal=True, width=80))
    return terminal


def test_validate_names_what_it_checks_on_a_terminal(monkeypatch):
    terminal = _terminal(monkeypatch)
    done = CliRunner().invoke(app, ["validate", "--memory"], prog_name="inferplan")
    assert done.exit_code == 0
    assert "checking the start-up memory points" in terminal.getvalue()


def _raises(*args, **kwargs):
    raise InferplanError("no measured points", field="catalog", allowed="a catalogue with measured points")


def test_validate_json_error_goes_to_stdout_while_the_spinner_runs_on_a_terminal(monkeypatch):
    import inferplan.validation.memory as memory

    terminal = _terminal(monkeypatch)
    monkeypatch.setattr(memory, "validate_memory", _raises)
    done = CliRunner().invoke(app, ["validate", "--memory", "--json"], prog_name="inferplan")
    assert done.exit_code == 2
    assert json.loads(done.stdout)["error"]["message"] == "no measured points"
    assert '"error"' not in terminal.getvalue()


def test_validate_json_error_goes_to_stdout_while_the_cross_validation_progress_runs(monkeypatch):
    import inferplan.validation.crossval as crossval
    import inferplan.validation.speed as speed

    terminal = _terminal(monkeypatch)
    monkeypatch.setattr(speed, "validate_speed", lambda: type("Result", (), {"checks": []})())
    monkeypatch.setattr(crossval, "cross_validate", _raises)
    done = CliRunner().invoke(app, ["validate", "--speed", "--cross-validate", "--json"], prog_name="inferplan")
    assert done.exit_code == 2
    assert json.loads(done.stdout)["error"]["message"] == "no measured points"
    assert '"error"' not in terminal.getvalue()


def test_guard_validate_writes_no_spinner_where_stderr_is_not_a_terminal(monkeypatch):
    """Guard (passes with or without the spinner): a stderr that is not a terminal gets no spinner frames."""
    piped = io.StringIO()
    monkeypatch.setattr(cli_validate, "err_console", Console(file=piped, stderr=True))
    done = CliRunner().invoke(app, ["validate", "--memory"], prog_name="inferplan")
    assert done.exit_code == 0 and piped.getvalue() == ""
