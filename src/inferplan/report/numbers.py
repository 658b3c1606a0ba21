"""A number stored in SI units as a person reads it: six significant digits, from a million on with its SI prefix
("32.7621 G" parameters, "3.35 T" bytes/s), and never in exponent notation, however large or small."""

from __future__ import annotations

import math
from decimal import Decimal

from inferplan.units import plain_number

SI_PREFIXES = " kMGTPE"  # 10^0, 10^3 … 10^18: a larger number counts in E ("1,000 E")
SIGNIFICANT_DIGITS = 6
PREFIXED_FROM_POWER = 6  # a million and up carry a prefix; below it, the plain number with thousands separators


def si_text(value: float) -> str:
    """``value`` to six significant digits: "999,999", "1 M" (999,999.9999 rounds up to a million, so its prefix is
    taken after rounding), "32.7621 G", "0.000000123457"; infinity and NaN as Python writes them."""
    if not math.isfinite(value):
        return str(value)
    rounded = Decimal(f"{value:.{SIGNIFICANT_DIGITS}g}")
    if rounded == 0:
        return "0"
    if rounded.adjusted() < PREFIXED_FROM_POWER:
        return plain_number(rounded)
    power = min(rounded.adjusted() // 3, len(SI_PREFIXES) - 1)
    return f"{plain_number(rounded.scaleb(-3 * power))} {SI_PREFIXES[power]}"
