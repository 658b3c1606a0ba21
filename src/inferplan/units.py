"""Units: SI inside, named conversions for rendering and for reading catalogue data.

Every quantity inside inferplan is stored in SI base units with the unit in the name
(``memory_bytes``, ``bandwidth_bytes_per_s``, ``peak_flop_per_s``, ``power_w``, ``price_usd``).
The constants below are the only place binary and decimal prefixes are defined.
"""

from __future__ import annotations

KiB = 2**10
MiB = 2**20
GiB = 2**30
TiB = 2**40

KB = 10**3
MB = 10**6
GB = 10**9
TB = 10**12

# Unit spellings accepted in catalogue YAML: unit -> (dimension, factor to the SI value).
# Dimensions are the suffixes used in field names.
UNITS: dict[str, tuple[str, float]] = {
    "bytes": ("bytes", 1.0),
    "KiB": ("bytes", KiB),
    "MiB": ("bytes", MiB),
    "GiB": ("bytes", GiB),
    "TiB": ("bytes", TiB),
    "KB": ("bytes", KB),
    "MB": ("bytes", MB),
    "GB": ("bytes", GB),
    "TB": ("bytes", TB),
    "bytes/s": ("bytes_per_s", 1.0),
    "Gb/s": ("bytes_per_s", 1e9 / 8),  # network line rates (gigabits)
    "GB/s": ("bytes_per_s", GB),
    "TB/s": ("bytes_per_s", TB),
    "FLOP/s": ("flop_per_s", 1.0),
    "TFLOPS": ("flop_per_s", 1e12),
    "PFLOPS": ("flop_per_s", 1e15),
    "W": ("w", 1.0),
    "kW": ("w", 1e3),
    "MW": ("w", 1e6),
    "USD": ("usd", 1.0),
    "kUSD": ("usd", 1e3),
    "MUSD": ("usd", 1e6),
    "EUR": ("eur", 1.0),
    "kEUR": ("eur", 1e3),
    "MEUR": ("eur", 1e6),
    "count": ("count", 1.0),
    "thousand": ("count", 1e3),
    "million": ("count", 1e6),
    "billion": ("count", 1e9),
    "trillion": ("count", 1e12),
    "ratio": ("ratio", 1.0),
    "percent": ("ratio", 0.01),
    "bits": ("bits", 1.0),
    "s": ("s", 1.0),
    "ms": ("s", 1e-3),
    "us": ("s", 1e-6),
    "USD/EUR": ("usd_per_eur", 1.0),
}


def to_gbit_per_s(bytes_per_s: float) -> float:
    """Bytes per second to gigabits per second (network line rates), for rendering only."""
    return bytes_per_s * 8 / 1e9
