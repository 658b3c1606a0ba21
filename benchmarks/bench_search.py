"""How many candidate deployments ``inferplan search`` evaluates per second.

A candidate is one distinct (replica cell, replicas, running-sequence cap, prefill/decode pool
split) that is priced and checked against every target. The script prints the figures; it asserts
nothing (speed targets are not tests). Run: ``.venv/bin/python benchmarks/bench_search.py``.
"""

from __future__ import annotations

import time

from _timing import median_seconds

from inferplan.catalog.loader import load_catalog
from inferplan.search import evaluate
from inferplan.search.load import resolve_load
from inferplan.search.request import SearchRequest, Targets
from inferplan.search.run import model_cells, search
from inferplan.search.space import build_space

CASES = {
    "Qwen3-32B, every shipping system, 200 chat-seat users (the README's search)": SearchRequest(
        models=("qwen3-32b",), users=200, workload="chat-seat", targets=Targets(ttft_p95_s=2.0), top=3),
    "Qwen3-32B, every shipping system, 5 req/s of 2,000 + 500 tokens": SearchRequest(
        models=("qwen3-32b",), request_rate_per_s=5, input_len=2000, output_len=500,
        targets=Targets(ttft_p95_s=2.0, tpot_p95_s=0.05)),
    "DeepSeek-V3, every shipping system, 500 chat users": SearchRequest(
        models=("deepseek-v3",), users=500, workload="chat-seat", targets=Targets(ttft_p95_s=2.0)),
}


def main() -> None:
    catalog = load_catalog()
    search(SearchRequest(models=("qwen3-8b",), request_rate_per_s=1, input_len=100, output_len=10,
                         systems=("hgx-h100",)), catalog)  # warm the model and rate caches once
    for name, req in CASES.items():
        start = time.perf_counter()
        result = search(req, catalog)
        wall = time.perf_counter() - start
        print(f"{name}: {result.candidates:,} candidates on {result.cells:,} replica cells in {wall:.2f} s "
              f"({result.candidates / wall:,.0f} candidates/s); {len(result.results)} ranked, "
              f"{len(result.infeasible)} families explained")
        grids, candidates = _arrays_only(catalog, req)
        print(f"  of which the array evaluation (queueing approximation and prices over every candidate), median of 3: "
              f"{candidates:,} candidates in {grids:.2f} s ({candidates / grids:,.0f} candidates/s, "
              f"100,000 in {100_000 * grids / candidates:.2f} s)")


def _arrays_only(catalog, req: SearchRequest) -> tuple[float, int]:
    """The same search's candidates with every cell already modelled: the vectorised part alone."""
    rl = resolve_load(catalog, req)
    models, _ = model_cells(catalog, build_space(catalog, req, input_len=rl.input_len, output_len=rl.output_len), rl,
                            disaggregate=True)
    grids = evaluate.evaluate_cells(models, rl, pricing="both")
    seconds = median_seconds(lambda: evaluate.evaluate_cells(models, rl, pricing="both"), repeat=3)
    return seconds, sum(len(g) for cell in grids for g in cell)


if __name__ == "__main__":
    main()
