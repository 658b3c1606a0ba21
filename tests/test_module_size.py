"""Every Python module of the package and every script of the web page (its vendored libraries apart)
stays well under 500 lines, so each reads as one purpose."""

from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "inferplan"
LIMIT_LINES = 500
MODULES = sorted(PACKAGE.rglob("*.py"))
SCRIPTS = sorted(p for p in PACKAGE.rglob("*.js") if "vendor" not in p.relative_to(PACKAGE).parts)


def test_the_package_has_modules_and_page_scripts():
    assert len(MODULES) > 100
    assert {"app.js", "form.js"} <= {p.name for p in SCRIPTS}


@pytest.mark.parametrize("path", MODULES + SCRIPTS, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_module_is_under_the_line_limit(path):
    lines = len(path.read_text(encoding="utf-8").splitlines())
    assert lines < LIMIT_LINES, f"{path.relative_to(PACKAGE)} has {lines} lines; move a cohesive piece out"
