"""The longest context, in whole steps, at which something fits: a bisection over context lengths,
fitting being monotone in the context (a shorter one never needs more memory)."""

from __future__ import annotations

from typing import Callable, TypeVar

CONTEXT_STEP_TOKENS = 256  # suggested context lengths are whole multiples of this

T = TypeVar("T")


def longest_steps(fits_at: Callable[[int], T | None], below: int,
                  floor: int = CONTEXT_STEP_TOKENS) -> tuple[int, T] | None:
    """The longest context under ``below`` tokens, in whole steps of at least ``floor`` tokens, at which
    ``fits_at`` answers (not None), with that answer (None: not even the shortest such step)."""
    first = whole_steps(floor) // CONTEXT_STEP_TOKENS  # the fewest steps tried
    low, high = first, (below - 1) // CONTEXT_STEP_TOKENS  # steps known to fit / to try
    best = fits_at(first * CONTEXT_STEP_TOKENS) if high >= first else None
    if best is None:
        return None
    while low < high:
        mid = (low + high + 1) // 2
        found = fits_at(mid * CONTEXT_STEP_TOKENS)
        if found is not None:
            low, best = mid, found
        else:
            high = mid - 1
    return low * CONTEXT_STEP_TOKENS, best


def whole_steps(tokens: int) -> int:
    """``tokens`` rounded up to whole context steps (at least one step)."""
    return max(1, -(-tokens // CONTEXT_STEP_TOKENS)) * CONTEXT_STEP_TOKENS
