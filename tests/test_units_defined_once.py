"""Byte units and the month's length are defined once, in inferplan.units: no other module binds a name
to a power of two of bytes or to the month's 730 hours, and no module divides or multiplies by a literal
power of two or 1e9 to render or read GiB, GB or billions (units' GiB, GB, BILLION and fmt_* helpers do)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "inferplan"
MODULES = sorted(p for p in PACKAGE.rglob("*.py") if p.name != "units.py" or p.parent != PACKAGE)
POWER = r"2\s*\*\*\s*(?:10|20|30|40)\b"
BOUND = re.compile(rf"^\s*\w+\s*=\s*{POWER}\s*(?:#.*)?$", re.M)  # GIB = 2**30, gib = 2**30
MONTH = re.compile(r"\b730\b")
SHELL_SCALED = re.compile(r"[/*]\s*(?:1024|1e3|1000)\b")  # KiB or milliseconds by hand in a shell
RENDERED = re.compile(rf"/\s*{POWER}|[/*]\s*(?:1e9|1_000_000_000|10\s*\*\*\s*9)\b")


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_module_but_units_defines_a_byte_unit_or_the_month(path):
    text = path.read_text(encoding="utf-8")
    assert not BOUND.findall(text), f"{path.relative_to(PACKAGE)}: use inferplan.units' KiB/MiB/GiB/TiB"
    assert not MONTH.findall(text), f"{path.relative_to(PACKAGE)}: use inferplan.units' HOURS_PER_MONTH"
    assert not RENDERED.findall(text), f"{path.relative_to(PACKAGE)}: use inferplan.units' GiB/GB/BILLION or fmt_gib/fmt_gb"
    if "shells" in path.relative_to(PACKAGE).parts:
        assert not SHELL_SCALED.findall(text), f"{path.relative_to(PACKAGE)}: use inferplan.units' KiB, fmt_kib or fmt_ms"


def test_the_month_is_a_365_day_years_twelfth_in_hours_and_seconds():
    from inferplan.units import HOURS_PER_MONTH, SECONDS_PER_MONTH

    assert HOURS_PER_MONTH == 730 and SECONDS_PER_MONTH == 730 * 3600


def test_the_rendering_helpers_write_each_unit_as_messages_do():
    from inferplan.units import GiB, fmt_billions, fmt_gb, fmt_gb_per_s, fmt_gib, fmt_kib, fmt_ms

    assert fmt_gib(1.5 * GiB) == "1.50 GiB" and fmt_gib(3 * GiB, ".1f") == "3.0 GiB"
    assert fmt_gb(8e9) == "8.0 GB" and fmt_gb(1.234e12, ",.0f") == "1,234 GB"
    assert fmt_gb_per_s(1.2e11) == "120.0 GB/s" and fmt_gb_per_s(5.46e11, "g") == "546 GB/s"
    assert fmt_kib(163840) == "160.0 KiB" and fmt_ms(0.25) == "250 ms" and fmt_ms(0.0123, ",.2f") == "12.30 ms"
    assert fmt_billions(7.6e9, ".1f") == "7.6B" and fmt_billions(2.5e12, ",.2f") == "2,500.00B"


def test_the_layout_in_the_development_guide_names_the_rendering_helpers():
    units = (PACKAGE / "units.py").read_text(encoding="utf-8")
    helpers = {"WRITTEN_UNITS", *re.findall(r"^(fmt_\w+) = ", units, re.M),
               *re.findall(r"^def (fmt_\w+|written_in)\(", units, re.M)}
    guide = (PACKAGE.parents[1] / "docs" / "development.md").read_text(encoding="utf-8")
    line = next(line for line in guide.splitlines() if line.lstrip().startswith("units.py"))
    assert {h for h in helpers if h not in line} == set(), line
