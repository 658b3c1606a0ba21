"""Units: SI inside, named conversions for rendering and for reading catalogue data.

Every quantity inside inferplan is stored in SI base units with the unit in the name
(``memory_bytes``, ``bandwidth_bytes_per_s``, ``peak_flop_per_s``, ``power_w``, ``price_usd``).
The constants below are the only place binary and decimal prefixes are defined.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal

from inferplan.errors import InvalidScenarioError

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


def plain_number(value: int | float | Decimal) -> str:
    """A number as every message and table writes it: thousands separated, never in exponent notation
    ("100,000,000", "0.5", "0.0000001"); infinity and NaN as Python writes them."""
    if isinstance(value, int):
        return f"{value:,}"
    exact = Decimal(repr(value)) if isinstance(value, float) else value
    if not exact.is_finite():
        return str(value)
    return format(exact.normalize(), ",f")


def whole_count(count: float) -> int:
    """The whole items in a count a model gives as a fraction: the requests of a context a KV cache holding 18.9
    of them admits together (18); a count computed as 22.9999999 for 23 is 23."""
    return math.floor(round(count, 6))


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
