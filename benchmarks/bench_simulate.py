"""Speed of the tail-latency tools (a benchmark, not a test).

Targets (issue #24): the simulation at 100,000 requests in under 10 s; the approximation over
100,000 candidates in about 2 s (the search's budget).
Run: .venv/bin/python benchmarks/bench_simulate.py
"""

from __future__ import annotations

import numpy as np
from _timing import median_seconds

from inferplan.catalog.loader import load_catalog
from inferplan.inputs.deployment import Deployment
from inferplan.inputs.workload import Workload
from inferplan.search.arrivals import Load
from inferplan.search.queueing import CurveTable, approximate_many
from inferplan.search.service import service_curve
from inferplan.search.simulate import simulate

REQUESTS = 100_000
CANDIDATES = 100_000


def main() -> None:
    catalog = load_catalog()
    d = Deployment(model="llama-3.3-70b", gpu="H100", quantization="fp8", tensor_parallel_size=2)
    curve = service_curve(d, Workload(input_len=1024, output_len=256), catalog)
    cases = {
        "poisson 8 req/s, 1 replica": (Load(request_rate_per_s=8, input_tokens=1024, output_tokens=256,
                                             input_tokens_scv=1, output_tokens_scv=1), 1),
        "bursty 30 req/s x3 peak, 4 replicas": (Load(arrival="bursty", peak_to_average=3, request_rate_per_s=30,
                                                     input_tokens=1024, output_tokens=256), 4),
        "closed loop 64 clients": (Load(arrival="closed", clients=64, input_tokens=1024, output_tokens=256,
                                        output_tokens_scv=1), 1),
    }
    for label, (load, replicas) in cases.items():
        seconds = median_seconds(lambda: simulate(curve, load, requests=REQUESTS, seed=0, replicas=replicas), 3)
        print(f"simulate {REQUESTS:,} requests, {label:36s} {seconds:6.2f} s (median of 3; target < 10 s)")
    table = CurveTable.of([curve])
    rng = np.random.default_rng(0)
    rates = rng.uniform(0.5, 40, CANDIDATES)
    replicas = rng.integers(1, 9, CANDIDATES)
    load = Load(request_rate_per_s=8, input_tokens=1024, output_tokens=256, input_tokens_scv=1, output_tokens_scv=1)
    for nodes in (8, 16):
        seconds = median_seconds(lambda: approximate_many(table, load, curve_index=np.zeros(CANDIDATES, np.int64),
                                                          replicas=replicas, request_rate_per_s=rates, nodes=nodes), 3)
        print(f"approximate_many over {CANDIDATES:,} candidates, {nodes:2d} length nodes: {seconds:6.2f} s (median of 3)")


if __name__ == "__main__":
    main()
