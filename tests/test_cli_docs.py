"""docs/cli.md's reference block is what the typer app renders now: a new command, option, help
text or default fails here until `python -m inferplan.shells.cli_docs --write` is run."""

from __future__ import annotations

from typing import Optional

import typer

from inferplan.shells import cli_docs


def test_docs_cli_md_is_the_fresh_render_of_the_app():
    text = cli_docs.DOC.read_text()
    assert cli_docs.current_block(text) == cli_docs.render(), (
        "docs/cli.md is out of date: run .venv/bin/python -m inferplan.shells.cli_docs --write")


def test_the_hand_written_notes_stay_below_the_generated_block():
    text = cli_docs.DOC.read_text()
    notes = text.index("<!-- cli-notes:start")
    assert text.index(cli_docs.END) < notes < text.index("<!-- cli-notes:end -->")


def _toy_app() -> typer.Typer:
    app = typer.Typer(help="A toy.")
    tools = typer.Typer(help="Tools.")
    app.add_typer(tools, name="tools")

    @app.command("go")
    def go(speed: int = typer.Option(3, "--speed", "-s", help="How fast | really."),
           name: Optional[str] = typer.Option(None, "--name"), loud: bool = typer.Option(False, "--loud")) -> None:
        """Go somewhere."""

    @tools.command("fix")
    def fix(path: str = typer.Argument(..., help="What to fix.")) -> None:
        """Fix a thing."""

    return app


def test_every_command_option_help_and_default_is_rendered():
    block = cli_docs.render(_toy_app())
    assert block.startswith(cli_docs.START) and block.rstrip().endswith(cli_docs.END)
    for expected in ("## `inferplan go`", "Go somewhere.", "| `--speed`, `-s` | `3` | How fast \\| really. |",
                     "| `--name` | — |", "| `--loud` | off |", "## `inferplan tools`", "Tools.",
                     "### `inferplan tools fix`", "Usage: `inferplan tools fix PATH`", "| `PATH` | required | What to fix. |"):
        assert expected in block, expected


def test_write_replaces_only_the_block_and_check_sees_a_stale_one(tmp_path, monkeypatch):
    doc = tmp_path / "cli.md"
    doc.write_text(f"{cli_docs.START}\nold reference\n{cli_docs.END}\n\nnotes by hand\n")
    monkeypatch.setattr(cli_docs, "DOC", doc)
    monkeypatch.setattr(cli_docs, "render", lambda app=None: f"{cli_docs.START}\nnew reference\n{cli_docs.END}\n")
    assert cli_docs.main(["--check"]) == 1
    assert cli_docs.main(["--write"]) == 0
    assert doc.read_text() == f"{cli_docs.START}\nnew reference\n{cli_docs.END}\n\nnotes by hand\n"
    assert cli_docs.main(["--check"]) == 0


def _help_commands(*path: str) -> list[str]:
    """The commands ``inferplan <path> --help`` lists, in its order."""
    from typer.testing import CliRunner

    from inferplan.shells.cli import app

    listing = CliRunner().invoke(app, [*path, "--help"]).output.split("Commands:\n", 1)[1]
    return [line.split()[0] for line in listing.splitlines() if line.startswith("  ") and line.strip()]


def test_the_reference_lists_the_commands_in_the_order_help_does():
    block = cli_docs.render()
    top = [line.split("`")[1].split()[1] for line in block.splitlines() if line.startswith("## `inferplan ")]
    assert top == _help_commands()
    for group in ("catalog", "measurements", "model"):
        subs = [line.split("`")[1].split()[2] for line in block.splitlines() if line.startswith(f"### `inferplan {group} ")]
        assert subs == _help_commands(group), group
