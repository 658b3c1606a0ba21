"""The one timing helper the benchmarks share."""

from __future__ import annotations

import statistics
import time


def median_seconds(fn, repeat: int) -> float:
    """Median wall time of ``repeat`` calls."""
    out = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return statistics.median(out)
