"""Byte units and the month's length are defined once, in inferplan.units: no other module binds a name
to a power of two of bytes or to the month's 730 hours, and no shell divides by a literal power of two
to render GiB or MiB."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "inferplan"
MODULES = sorted(p for p in PACKAGE.rglob("*.py") if p.name != "units.py" or p.parent != PACKAGE)
POWER = r"2\s*\*\*\s*(?:10|20|30|40)\b"
BOUND = re.compile(rf"^\s*\w+\s*=\s*{POWER}\s*(?:#.*)?$", re.M)  # GIB = 2**30, gib = 2**30
MONTH = re.compile(r"\b730\b")
RENDERED = re.compile(rf"/\s*{POWER}")


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_module_but_units_defines_a_byte_unit_or_the_month(path):
    text = path.read_text(encoding="utf-8")
    assert not BOUND.findall(text), f"{path.relative_to(PACKAGE)}: use inferplan.units' KiB/MiB/GiB/TiB"
    assert not MONTH.findall(text), f"{path.relative_to(PACKAGE)}: use inferplan.units' HOURS_PER_MONTH"
    if "shells" in path.relative_to(PACKAGE).parts:
        assert not RENDERED.findall(text), f"{path.relative_to(PACKAGE)}: divide by inferplan.units' GiB/MiB"


def test_the_month_is_a_365_day_years_twelfth_in_hours_and_seconds():
    from inferplan.units import HOURS_PER_MONTH, SECONDS_PER_MONTH

    assert HOURS_PER_MONTH == 730 and SECONDS_PER_MONTH == 730 * 3600
