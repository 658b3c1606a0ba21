"""The end of a range of whole numbers where a setting stops fitting, fitting being monotone in it: the smallest
``--n-cpu-moe`` or whole GiB of ``--cpu-offload-gb`` that fits, the largest ``--n-gpu-layers``."""

from __future__ import annotations

from typing import Callable, TypeVar

T = TypeVar("T")  # what a fitting probe answers (its fit)


def monotone_search(lowest: int, highest: int, fits_at: Callable[[int], T | None], *,
                    smallest: bool) -> tuple[int, T] | None:
    """The smallest (or largest) value in [lowest, highest] that fits (``fits_at`` None: it does not), fitting being
    monotone in it."""
    low, high = lowest, highest
    best = fits_at(high if smallest else low)  # the end that frees the most GPU memory
    if best is None:
        return None
    while low < high:
        mid = (low + high) // 2 if smallest else (low + high + 1) // 2
        r = fits_at(mid)
        if smallest and r is not None:
            high, best = mid, r
        elif smallest:
            low = mid + 1
        elif r is not None:
            low, best = mid, r
        else:
            high = mid - 1
    return low, best
