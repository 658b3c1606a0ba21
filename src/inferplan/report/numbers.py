"""A number stored in SI units as a person reads it: six significant digits, from a million on with its SI prefix
("32.7621 G" parameters, "3.35 T" bytes/s), and never in exponent notation, however large or small."""

from __future__ import annotations

import math
from decimal import Decimal

from inferplan.units import plain_number, whole_count

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


UNBOUNDED = "unbounded"  # a latency that is infinite: the queue in front of it grows without end
UNBOUNDED_NOTE = "unbounded: the load exceeds what the deployment serves, so its queue and the waits grow without end"


def milliseconds_text(seconds: float) -> str:
    """A latency in milliseconds to a tenth ("173,626.7"); an infinite one (a queue that grows without end) as
    "unbounded", which ``UNBOUNDED_NOTE`` explains."""
    return UNBOUNDED if math.isinf(seconds) else f"{seconds * 1e3:,.1f}"


def whole_count_text(count: float) -> str:
    """A count a model gives as a fraction (the sequences of the full context a KV cache holds: 18.9) as the whole
    ones it holds together ("18", ``units.whole_count``); less than one as that share of one ("0.62 of one")."""
    whole = whole_count(count)
    return f"{whole:,}" if whole >= 1 else f"{count:.2f} of one"
