"""The README is a newcomer's guide that stays true: short, opening with the two set-up commands CI
runs, every command it shows still runs and prints the output it shows, and every relative link in
it and in docs/ leads to a file."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
INFERPLAN = Path(sys.executable).parent / "inferplan"
MAX_LINES = 150


def bash_blocks(text: str) -> list[list[str]]:
    """The lines of every ```bash block, in order."""
    return [block.strip().splitlines() for block in re.findall(r"```bash\n(.*?)```", text, flags=re.S)]


def shown_commands(text: str) -> list[str]:
    """Every `inferplan …` command line of the bash blocks, its trailing comment dropped."""
    lines = [line for block in bash_blocks(text) for line in block]
    return [shlex.split(line, comments=True) for line in lines if line.startswith("inferplan ")]


def relative_links(text: str) -> list[str]:
    """Targets of Markdown links that point into the repository (no scheme, not only an anchor)."""
    targets = re.findall(r"\]\(([^)\s]+)\)", text)
    return [t.split("#", 1)[0] for t in targets if not re.match(r"[a-z]+:", t) and not t.startswith("#")]


def test_the_readme_fits_in_its_line_budget():
    assert len(README.read_text().splitlines()) <= MAX_LINES


def test_the_readme_opens_with_the_two_setup_commands_ci_runs():
    text = README.read_text()
    first_code = text.index("```")
    assert text[first_code:].startswith("```bash\n"), "the first code block is the set-up commands"
    serve, tests = bash_blocks(text)[0]
    assert len(bash_blocks(text)[0]) == 2
    assert serve == "python3 -m venv .venv && .venv/bin/pip install -q -e . && .venv/bin/inferplan serve"
    ci = [line for line in (ROOT / ".ci" / "run").read_text().splitlines()
          if line.strip() and not line.lstrip().startswith("#") and "pytest" in line]
    assert ci == [tests], ".ci/run's test command and the README's second command differ"


def test_the_readme_names_the_default_web_scenario():
    assert "Qwen3-235B FP8 with SGLang on HGX B200" in " ".join(README.read_text().split())


def test_the_readme_shows_the_five_questions_commands():
    verbs = [argv[1] for argv in shown_commands(README.read_text())]
    for verb in ("fit", "fits", "perf", "plan", "serve"):
        assert verb in verbs, f"no `inferplan {verb}` example in README.md"


@pytest.mark.parametrize("argv", shown_commands(README.read_text()), ids=" ".join)
def test_every_command_the_readme_shows_runs(argv):
    if argv[1] == "serve":  # a server does not return: check it is a command the CLI knows
        argv = [*argv, "--help"]
    done = subprocess.run([str(INFERPLAN), *argv[1:]], cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, "COLUMNS": "100"}, timeout=120)
    assert done.returncode == 0, done.stderr


def shown_outputs(text: str) -> list[tuple[list[str], list[str]]]:
    """Each one-command ```bash block that a ```text block follows: the command, and the output lines
    shown (trimmed output: a line with an ellipsis stands for lines left out)."""
    pairs = re.findall(r"```bash\n(inferplan [^\n]*)\n```\n```text\n(.*?)```", text, flags=re.S)
    return [(shlex.split(command, comments=True), [line for line in output.splitlines() if "…" not in line])
            for command, output in pairs]


@pytest.mark.parametrize("argv, shown", shown_outputs(README.read_text()), ids=lambda x: " ".join(x[:2]))
def test_the_output_the_readme_shows_is_the_present_output(argv, shown):
    done = subprocess.run([str(INFERPLAN), *argv[1:]], cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, "COLUMNS": "100"}, timeout=120)
    printed = {line.strip() for line in done.stdout.splitlines()}
    assert [line for line in shown if line.strip() not in printed] == []


def test_the_readme_shows_the_output_of_four_commands():
    assert len(shown_outputs(README.read_text())) >= 4


@pytest.mark.parametrize("doc", [README, *sorted((ROOT / "docs").glob("*.md"))], ids=lambda p: p.name)
def test_every_relative_link_leads_to_a_file(doc):
    missing = [t for t in relative_links(doc.read_text()) if t and not (doc.parent / t).exists()]
    assert not missing, f"{doc.name} links to files that do not exist: {missing}"


def test_the_link_check_sees_a_broken_link():
    assert relative_links("see [x](docs/nowhere.md#a), [y](https://example.org/), [z](#here)") == ["docs/nowhere.md"]
