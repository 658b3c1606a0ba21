"""An amount of money as a person reads it, to the digits it has: whole units for large amounts,
cents, and three significant digits below a unit (a $0.0188 API seat is not "$0.02"; a $0.068
monthly API bill is not "$0")."""

from __future__ import annotations

import math

MAX_DIGITS = 8  # below 10^-8 an amount shows as "<$0.00000001"


def money_text(amount: float, symbol: str = "$", digits: int = 0) -> str:
    """``amount`` with ``digits`` decimals ("$6,978", "$1.05"); with ``digits``, an amount under one unit
    to three significant digits ("$0.0188"); "-$5", never "$-5"; what rounds to nothing shows unsigned,
    and a positive amount below the last place shown says so ("<$0.00000001")."""
    sign = "-" if amount < 0 else ""
    magnitude = abs(amount)
    if digits and 0 < magnitude < 0.995:
        digits = min(MAX_DIGITS, 2 - math.floor(math.log10(magnitude)))
    text = f"{magnitude:,.{digits}f}"
    if round(magnitude, digits) == 0:
        return f"<{symbol}{10 ** -digits:.{digits}f}" if magnitude and digits else f"{symbol}{text}"
    return f"{sign}{symbol}{text}"


def monthly_text(amount: float, symbol: str = "$") -> str:
    """A monthly bill: whole units from 10, below that to the cent or three significant digits."""
    return money_text(amount, symbol, digits=0 if abs(amount) >= 10 else 2)
