"""Speed of the memory engine (a benchmark, not a test): one fit, and the whole fits matrix.

Target (issue #2): the whole `fits` matrix for the catalogue in well under a second.
Run: .venv/bin/python benchmarks/bench_memory.py
"""

from __future__ import annotations

import statistics
import time

from inferplan.catalog.loader import load_catalog
from inferplan.memory.deployment import Deployment
from inferplan.memory.fit import fit
from inferplan.memory.matrix import fits_matrix


def timed(fn, repeat: int) -> list[float]:
    out = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


def main() -> None:
    t0 = time.perf_counter()
    catalog = load_catalog()
    print(f"catalogue load (first use):   {1e3 * (time.perf_counter() - t0):8.1f} ms")
    d = Deployment(model="llama-3.3-70b", gpu="H100", quantization="fp8", tensor_parallel_size=2)
    single = timed(lambda: fit(d, catalog), 200)
    print(f"one fit (fits):               {1e3 * statistics.median(single):8.3f} ms median of 200")
    miss = Deployment(model="deepseek-v3", gpu="H100")
    search = timed(lambda: fit(miss, catalog), 20)
    print(f"one fit + smallest-fit search:{1e3 * statistics.median(search):8.3f} ms median of 20")
    matrix = fits_matrix(catalog=catalog)
    runs = timed(lambda: fits_matrix(catalog=catalog), 5)
    print(f"whole fits matrix ({len(matrix.cells)} cells): {1e3 * statistics.median(runs):8.1f} ms median of 5")


if __name__ == "__main__":
    main()
