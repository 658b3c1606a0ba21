"""Speed of the speed model (a benchmark, not a test).

Targets (issue #3): one estimate well under a millisecond; a 64-point frontier in a few milliseconds.
Run: .venv/bin/python benchmarks/bench_speed.py
"""

from __future__ import annotations


from _timing import median_seconds

from inferplan.catalog.loader import load_catalog
from inferplan.inputs.deployment import Deployment
from inferplan.inputs.workload import Workload
from inferplan.performance.context import ServingContext
from inferplan.performance.frontier import frontier
from inferplan.performance.serving import estimate, estimate_at




def main() -> None:
    catalog = load_catalog()
    d = Deployment(model="llama-3.3-70b", gpu="H100", quantization="fp8", tensor_parallel_size=2, max_model_len=4096)
    w = Workload(input_len=2048, output_len=512, concurrency=32)
    print(f"estimate() incl. memory plan:      {1e3 * median_seconds(lambda: estimate(d, w, catalog), 200):8.3f} ms median")
    ctx = ServingContext(catalog, d, w)
    print(f"one estimate on a planned context: {1e3 * median_seconds(lambda: estimate_at(ctx, 32), 2000):8.3f} ms median")
    print(f"64-point frontier:                 {1e3 * median_seconds(lambda: frontier(d, w, catalog, points=64), 50):8.3f} ms median")


if __name__ == "__main__":
    main()
