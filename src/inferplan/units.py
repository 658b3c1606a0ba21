"""Units: SI inside, named conversions for rendering and for reading catalogue data.

Every quantity inside inferplan is stored in SI base units with the unit in the name
(``memory_bytes``, ``bandwidth_bytes_per_s``, ``peak_flop_per_s``, ``power_w``, ``price_usd``).
The constants below are the only place binary and decimal prefixes are defined.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal
from functools import partial

from inferplan.errors import InvalidScenarioError

KiB = 2**10
MiB = 2**20
GiB = 2**30
TiB = 2**40

KB = 10**3
MB = 10**6
GB = 10**9
TB = 10**12

BILLION = 10**9  # parameter and token counts as messages write them (70B parameters, 1.5B tokens)

# a month as prices and workloads count it: a 365-day year's hours over 12 months (730 h)
HOURS_PER_MONTH = 365 * 24 / 12
SECONDS_PER_MONTH = HOURS_PER_MONTH * 3600

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


def plain_number(value: int | float | Decimal) -> str:
    """A number as every message and table writes it: thousands separated, never in exponent notation
    ("100,000,000", "0.5", "0.0000001"); infinity and NaN as Python writes them."""
    if isinstance(value, int):
        return f"{value:,}"
    exact = Decimal(repr(value)) if isinstance(value, float) else value
    if not exact.is_finite():
        return str(value)
    return format(exact.normalize(), ",f")


def plural(n: int, word: str) -> str:
    """``n`` and ``word``, with an s unless ``n`` is 1: "1 user", "2,000 requests"."""
    return f"{n:,} {word}" if n == 1 else f"{n:,} {word}s"


def whole_count(count: float) -> int:
    """The whole items in a count a model gives as a fraction: the requests of a context a KV cache holding 18.9
    of them admits together (18); a count computed as 22.9999999 for 23 is 23."""
    return math.floor(round(count, 6))


# How messages write a quantity in a unit: unit -> (the SI amount of one of it, the default number format, what
# follows the number); a count in billions is written 70B.
WRITTEN_UNITS = {"KiB": (KiB, ",.1f", " KiB"), "GiB": (GiB, ".2f", " GiB"), "GB": (GB, ".1f", " GB"),
                 "GB/s": (GB, ".1f", " GB/s"), "billion": (BILLION, ".2f", "B")}


def written_in(value: float, spec: str | None = None, *, unit: str) -> str:
    """``value`` (bytes, bytes a second or a count) as a message writes it in ``unit`` of WRITTEN_UNITS;
    ``spec`` formats the number (the unit's default when None): ``written_in(1.5 * GiB, unit="GiB")`` is
    ``"1.50 GiB"``."""
    amount, default, suffix = WRITTEN_UNITS[unit]
    return f"{value / amount:{spec or default}}{suffix}"


fmt_kib = partial(written_in, unit="KiB")  # fmt_kib(163840) is "160.0 KiB"
fmt_gib = partial(written_in, unit="GiB")  # fmt_gib(3 * GiB, ".1f") is "3.0 GiB"
fmt_gb = partial(written_in, unit="GB")  # fmt_gb(8e9) is "8.0 GB"
fmt_gb_per_s = partial(written_in, unit="GB/s")  # fmt_gb_per_s(1.2e11) is "120.0 GB/s"
fmt_billions = partial(written_in, unit="billion")  # fmt_billions(7.6e9, ".1f") is "7.6B"


def fmt_ms(seconds: float, spec: str = ",.0f") -> str:
    """A time in seconds as a message writes it in milliseconds: ``fmt_ms(0.25)`` is ``"250 ms"``."""
    return f"{seconds * 1e3:{spec}} ms"


def to_gbit_per_s(bytes_per_s: float) -> float:
    """Bytes per second to gigabits per second (network line rates), for rendering only."""
    return bytes_per_s * 8 / 1e9


# Token counts as vLLM's command line reads them (vllm 0.34.0, vllm/utils/argparse_utils.py
# human_readable_int, the type of --max-model-len and --max-num-batched-tokens): a lower-case suffix is
# decimal, an upper-case one binary, and only a decimal suffix takes a fraction (25.6k).
TOKEN_SUFFIXES = {"k": KB, "m": MB, "g": GB, "t": TB, "K": KiB, "M": MiB, "G": GiB, "T": TiB}
TOKEN_COUNT_FORMS = ("a whole number of tokens, or one with a suffix as vLLM reads it: 128k = 128,000 and "
                     "25.6k = 25,600 (k m g t: 10^3 to 10^12), 128K = 131,072 (K M G T: 2^10 to 2^40, whole numbers only)")
_TOKEN_COUNT = re.compile(r"([0-9]+(?:\.[0-9]+)?)([kmgtKMGT]?)")


def parse_token_count(text: str, field: str | None = None) -> int:
    """A token count a person wrote (``131072``, ``128k``, ``128K``, ``25.6k``) as a number of tokens.

    The forms and their meaning are vLLM's; the arithmetic is exact, so a count that comes out
    fractional (``1.0001k``: 1000.1 tokens) is refused where vLLM would drop the fraction, and so are a
    negative count, a fraction without a suffix and a fraction with a binary suffix.
    """
    written = text.strip()
    if written.startswith("-"):
        raise InvalidScenarioError(f"{text!r} is negative; a token count is at least 0", field=field, allowed=TOKEN_COUNT_FORMS)
    match = _TOKEN_COUNT.fullmatch(written)
    if match is None:
        raise InvalidScenarioError(f"cannot read {text!r} as a token count", field=field, allowed=TOKEN_COUNT_FORMS)
    number, suffix = match.groups()
    if "." in number and not suffix:
        raise InvalidScenarioError(f"{text!r} is not a whole number of tokens", field=field, allowed=TOKEN_COUNT_FORMS)
    if "." in number and suffix.isupper():
        raise InvalidScenarioError(f"{text!r}: a binary suffix ({suffix}) takes a whole number (did you mean "
                                   f"{number}{suffix.lower()}?)", field=field, allowed=TOKEN_COUNT_FORMS)
    tokens = Decimal(number) * TOKEN_SUFFIXES.get(suffix, 1)
    if tokens != tokens.to_integral_value():
        raise InvalidScenarioError(f"{text!r} is {tokens.normalize():f} tokens, not a whole number", field=field,
                                   allowed=TOKEN_COUNT_FORMS)
    return int(tokens)


# The unit a name ends in, as names inside inferplan carry it (ttft_p95_s, host_memory_gb, max_power_w): suffix ->
# its UNITS spelling; the longest suffix a name ends in counts (request_rate_per_s is a rate, not seconds). A
# share of a whole (gpu_memory_utilization, prefix_cache_hit_rate, hicache_ratio) is a ratio. The `_gb` inputs
# are GiB, as vLLM's --cpu-offload-gb is.
NAME_UNITS = {"_s": "s", "_per_s": "/s", "_gb": "GiB", "_gb_per_s": "GB/s", "_bytes": "bytes", "_w": "W",
              "_usd": "USD", "_utilization": "ratio", "_utilisation": "ratio", "_share": "ratio", "_rate": "ratio",
              "_ratio": "ratio"}
UNIT_NAMES = {"s": "a number of seconds", "/s": "a number per second", "GiB": "a number of GiB (2^30 bytes)",
              "GB/s": "a number of GB/s (10^9 bytes a second)", "bytes": "a number of bytes", "W": "a number of watts",
              "USD": "a number of US dollars", "ratio": "a fraction (0.5 for 50%)"}  # what a name's unit takes
TYPED_UNITS = {"%": "percent", "sec": "s", "secs": "s", "seconds": "s"}  # spellings people type beyond UNITS'
# a number written with a unit (80GB, 500ms, 90%); a multiplier suffix (128k, 2m) is not taken for a unit
_WITH_UNIT = re.compile(r"\s*(-?\d+(?:\.\d+)?)\s*([A-Za-z%$/]+)\s*")
_MULTIPLIERS = {"k", "m", "b", "t"}
_AS_UNIT = {"s": "in seconds", "ratio": "as a fraction"}


def name_unit(name: str) -> str | None:
    """The unit a field or parameter name ends in (``ttft_p95_s`` -> ``s``), or None when it names none."""
    ends = [suffix for suffix in NAME_UNITS if name.endswith(suffix)]
    return NAME_UNITS[max(ends, key=len)] if ends else None


def typed_unit(text: str) -> str | None:
    """A unit as a person types it (``ms``, ``gb``, ``%``) as its UNITS spelling, or None when unknown or
    ambiguous in its case (``gb/s``: GB/s or Gb/s)."""
    if text in UNITS:
        return text
    if text.lower() in TYPED_UNITS:
        return TYPED_UNITS[text.lower()]
    same = [unit for unit in UNITS if unit.lower() == text.lower()]
    return same[0] if len(same) == 1 else None


def in_unit(number: float, typed: str, unit: str) -> float | None:
    """``number`` of the UNITS unit ``typed`` as a number of ``unit`` (500 ms -> 0.5 s), or None when the two do
    not measure the same thing."""
    (given, given_factor), (wanted, wanted_factor) = UNITS.get(typed, (None, 0)), UNITS.get(unit, ("", 0))
    if given != wanted:
        return None
    exact = Decimal(repr(number)) * Decimal(repr(given_factor)) / Decimal(repr(wanted_factor))
    return float(f"{exact:.4g}")  # an example to type, not a figure to plan with


def unit_hint(written: str, name: str) -> str | None:
    """What to type for a value written with a unit (``500ms``) where the input ``name`` takes a bare number: the
    number in the input's own unit where the two convert (``--ttft-p95 500ms``: 0.5), else the unit it is read in;
    None when ``written`` carries no unit (a multiplier such as 128k is not one)."""
    match = _WITH_UNIT.fullmatch(written)
    if match is None or match[2].lower() in _MULTIPLIERS:
        return None
    number, typed = float(match[1]), typed_unit(match[2])
    unit = name_unit(name)
    if unit is None:
        return "a number without a unit, in the unit its --help names"
    converted = in_unit(number, typed, unit) if typed is not None else None
    what = UNIT_NAMES[unit]
    if converted is None:
        return f"{what}, without a unit"
    example = f"{format(Decimal(repr(converted)).normalize(), 'f')} ({match[1]}{match[2]} {_AS_UNIT.get(unit, 'in ' + unit)}"
    if typed == "GB" and unit == "GiB":  # a memory size is often written GB and meant GiB
        example += f"; {match[1]} if they are GiB"
    return f"{what} without a unit, e.g. {example})"
