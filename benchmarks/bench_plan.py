"""Speed of the Users + ROI simulator (a benchmark, not a test).

Targets (issue #4): a full plan in milliseconds; a 10,000-draw Monte Carlo well under a second.
Run: .venv/bin/python benchmarks/bench_plan.py
"""

from __future__ import annotations

from pathlib import Path

from _timing import median_seconds

from inferplan.catalog.loader import load_catalog
from inferplan.economics.plan import plan
from inferplan.economics.uncertainty import simulate
from inferplan.scenario import load_scenario

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"




def main() -> None:
    catalog = load_catalog()
    for path in sorted(EXAMPLES.glob("*.yaml")):
        s = load_scenario(path)
        r = plan(s, catalog)
        t_plan = median_seconds(lambda: plan(s, catalog), 20)
        t_mc = median_seconds(lambda: simulate(r, s, draws=10_000, catalog=catalog), 20)
        print(f"{path.name:36s} plan {1e3 * t_plan:7.2f} ms   10,000-draw Monte Carlo {1e3 * t_mc:7.2f} ms")


if __name__ == "__main__":
    main()
