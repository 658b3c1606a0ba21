"""Static check: no unused imports, undefined names or shadowed definitions in the package or tests."""

from __future__ import annotations

import io
from pathlib import Path

from pyflakes.api import checkRecursive
from pyflakes.reporter import Reporter

ROOT = Path(__file__).resolve().parents[1]


def test_pyflakes_finds_nothing() -> None:
    out, err = io.StringIO(), io.StringIO()
    count = checkRecursive([str(ROOT / "src" / "inferplan"), str(ROOT / "tests")], Reporter(out, err))
    assert count == 0, out.getvalue() + err.getvalue()


def test_pyflakes_reports_an_unused_import(tmp_path: Path) -> None:
    # The check above is only worth something if pyflakes sees real defects.
    (tmp_path / "bad.py").write_text("import os\n")
    out = io.StringIO()
    assert checkRecursive([str(tmp_path)], Reporter(out, io.StringIO())) == 1
    assert "imported but unused" in out.getvalue()
