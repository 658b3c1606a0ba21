"""A stored SI number reads with six significant digits and, from a million on, its SI prefix — the prefix taken
after rounding, so a value at a prefix's edge reads once, and never in exponent notation."""

from __future__ import annotations

import pytest

from inferplan.report.numbers import si_text


@pytest.mark.parametrize(("value", "text"), [
    (0, "0"), (-0.0, "0"), (0.5, "0.5"), (12.3456789, "12.3457"), (999_999, "999,999"), (999_999.4, "999,999"),
    (999_999.9999, "1 M"), (-999_999.9999, "-1 M"), (1e6, "1 M"), (999_999_999.7, "1 G"), (999_999_499, "999.999 M"),
    (32_762_100_000, "32.7621 G"), (3.35e12, "3.35 T"), (-2.5e9, "-2.5 G"), (999_999.9999e12, "1 E"),
    (1e21, "1,000 E"), (1.5e-7, "0.00000015"), (1.23456789e-12, "0.00000000000123457"),
])
def test_edge_values_read_once_with_their_prefix_never_in_exponent_notation(value, text):
    assert si_text(value) == text
    assert "e" not in text.lower().replace(" e", "")  # the exa prefix is the only e
