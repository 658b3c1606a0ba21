"""Speed of the memory engine (a benchmark, not a test): one fit, and the whole fits matrix.

Target (issue #2): the whole `fits` matrix for the catalogue in well under a second.
Run: .venv/bin/python benchmarks/bench_memory.py
"""

from __future__ import annotations

import time

from _timing import median_seconds

from inferplan.catalog.loader import load_catalog
from inferplan.inputs.deployment import Deployment
from inferplan.memory.fit import fit
from inferplan.memory.matrix import fits_matrix




def main() -> None:
    t0 = time.perf_counter()
    catalog = load_catalog()
    print(f"catalogue load (first use):   {1e3 * (time.perf_counter() - t0):8.1f} ms")
    d = Deployment(model="llama-3.3-70b", gpu="H100", quantization="fp8", tensor_parallel_size=2)
    single = median_seconds(lambda: fit(d, catalog), 200)
    print(f"one fit (fits):               {1e3 * single:8.3f} ms median of 200")
    miss = Deployment(model="deepseek-v3", gpu="H100")
    search = median_seconds(lambda: fit(miss, catalog), 20)
    print(f"one fit + smallest-fit search:{1e3 * search:8.3f} ms median of 20")
    matrix = fits_matrix(catalog=catalog)
    runs = median_seconds(lambda: fits_matrix(catalog=catalog), 5)
    print(f"whole fits matrix ({len(matrix.cells)} cells): {1e3 * runs:8.1f} ms median of 5")


if __name__ == "__main__":
    main()
