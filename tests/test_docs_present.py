"""Docs, code, data and tests describe the present: no text refers to the work sessions, helpers or
briefs that wrote it, nor tells a rule as its history (history lives in git log). Legitimate uses of the words — an HTTP or user
session, pytest's ``scope="session"``, a helper function, a product brief — match none of the
patterns."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCANNED = (ROOT / "docs", ROOT / "README.md", ROOT / "src", ROOT / "tests")
SUFFIXES = {".py", ".yaml", ".yml", ".json", ".js", ".md"}
SKIPPED_DIRS = {"vendor", "__pycache__", ".venv"}  # third-party bundles are not the project's prose
PATTERN = re.compile("|".join((
    r"\bsessions? \d+", r"\bsession-\d+", r"\bthis session\b", r"\bwork sessions?\b",
    r"\bthis helper\b", r"\bhelper report\b", r"\bbrief [a-z0-9]+[_/][a-z0-9_]+",  # a brief's id: s9/h4, trtllm_lowconc
    # a rule told as its history: what a refit changed, what an import assumed then, a default a method lacks now
    r"\btook it from [\d.]+ to [\d.]+", r"\bassumed then\b", r"\bno default (?:rate )?now\b",
    # a machine no reader knows, where its hardware is what the figure needs
    r"\bthe shared \d+-core machine\b",
)), re.IGNORECASE)


def scanned_files(roots) -> list[Path]:
    files = []
    for root in roots:
        candidates = [root] if root.is_file() else sorted(root.rglob("*"))
        files += [p for p in candidates if p.is_file() and p.suffix in SUFFIXES
                  and not SKIPPED_DIRS & set(p.parts) and p.resolve() != Path(__file__).resolve()]
    return files


def offending_lines(roots) -> list[str]:
    """``file:line: text`` for every line that names a work session, helper or brief."""
    found = []
    for path in scanned_files(roots):
        for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            if PATTERN.search(line):
                found.append(f"{path}:{number}: {line.strip()[:120]}")
    return found


def test_no_text_in_the_project_refers_to_work_sessions_helpers_or_briefs():
    assert scanned_files(SCANNED), "nothing scanned: the roots moved"
    found = offending_lines(SCANNED)
    assert not found, "say what the code or data is now and why, not when it changed:\n" + "\n".join(found)


@pytest.mark.parametrize("line", [
    # the planted lines are split so that this file itself names no work session
    "Entered until sess" "ion 17 as the DCP8 recipe",
    "# the sess" "ion-6 audit read it",
    "Sess" "ions 14-15 gave 17.7 %",
    "what this sess" "ion built",
    "a work session's notes",
    "# No engine_builds entries are added (this helper may write only this file)",
    "collected 2026-11-29 for brief s9/h4. Every point",
    "# Purpose: brief trtllm_lowconc (independent points)",
    "family constants (a refit of the power-mean step time took it from 47.5 to 33.9 us)",
    "whose rate is the 0.7 an import assumed then",
    "for a method that has no default rate now (ngram)",
    "3,000 users rented 15 s, each 70–80 s on the shared 2-core machine",
])
def test_a_planted_session_reference_is_named_with_its_file_and_line(tmp_path, line):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "note.md").write_text(f"first line\n{line}\n")
    (tmp_path / "docs" / "ok.yaml").write_text('note: "agent runs that outlast the session"\n')
    assert offending_lines([tmp_path / "docs"]) == [f"{tmp_path / 'docs' / 'note.md'}:2: {line}"]


@pytest.mark.parametrize("line", [
    '@pytest.fixture(scope="session")',
    "the user's session ends after 30 minutes",
    "TensorRT-LLM's gptSessionBenchmark, static batch of 1",
    "sessions of a chat user last minutes",
    "``validation`` and the top-level helpers)",
    "NVIDIA H100 PCIe GPU product brief PB-11133-001_v02",
    "a method that has no default rate (ngram) is not predicted at it",
])
def test_legitimate_uses_of_the_word_pass(tmp_path, line):
    (tmp_path / "x.py").write_text(line + "\n")
    assert offending_lines([tmp_path]) == []
