"""The latency validation tables of docs/search.md, rendered afresh from ``validate_latency``.

The document holds four blocks between ``<!-- generated: NAME -->`` and ``<!-- end generated -->``
(as docs/speed.md does, ``docs_tables``): the median errors per split (``latency-medians``), the
sentence that reads the held-out medians against their targets (``latency-summary``; the targets are
data, calibration.yaml's ``latency-target-p50`` and ``latency-target-p99``), every point
with both predictions (``latency-points``) and the points not scored (``latency-skipped``).
``python -m inferplan.validation.docs_latency --write`` rewrites them; without ``--write`` it exits 1
and names the blocks that differ. A (slow) test keeps the document equal to a fresh render.
"""

from __future__ import annotations

import math
import sys

from inferplan.catalog.loader import Catalog, load_catalog
from inferplan.validation.docs_tables import DOCS_DIR, markdown_row, write_or_check
from inferplan.validation.latency import METRICS, LatencyCheck, LatencyValidation, validate_latency

DOC = DOCS_DIR / "search.md"
BLOCKS = ("latency-medians", "latency-summary", "latency-points", "latency-skipped")
PERCENTILES = ("p50", "p99")  # each with its target in calibration.yaml: latency-target-p50, latency-target-p99
NAMES = {"ttft_p50_s": "TTFT p50", "ttft_p99_s": "TTFT p99", "tpot_p50_s": "TPOT p50", "tpot_p99_s": "TPOT p99"}


def medians_table(v: LatencyValidation) -> str:
    lines = [markdown_row(["split", "metric", "points", "approximation", "simulation"]), markdown_row(["---"] * 5)]
    for m in v.medians:
        lines.append(markdown_row([m.split, m.metric, str(m.points), f"{m.approximation_abs_error:.0%}",
                           f"{m.simulation_abs_error:.0%}"]))
    return "\n".join(lines) + "\n"


def targets(catalog: Catalog) -> dict[str, float]:
    """The held-out median |predicted / measured − 1| asked of each percentile (calibration.yaml)."""
    return {q: catalog.constant(f"latency-target-{q}") for q in PERCENTILES}


def summary(v: LatencyValidation, target_by_percentile: dict[str, float]) -> str:
    """The held-out medians (approximation / simulation) against the target for their percentile."""
    rows = [m for m in v.medians if m.split == "holdout"]
    if not rows:
        return "No point is held out.\n"

    def said(m) -> str:
        target = target_by_percentile[m.metric.split("_")[1]]
        met = [who for who, e in (("approximation", m.approximation_abs_error), ("simulation", m.simulation_abs_error))
               if e <= target]
        verdict = "both within" if len(met) == 2 else f"the {met[0]} within" if met else "neither within"
        return (f"{NAMES[m.metric]} {m.approximation_abs_error:.0%} / {m.simulation_abs_error:.0%} "
                f"({verdict} {target:.0%})")
    return ("Held out (approximation / simulation, median |predicted / measured − 1| against the target for "
            "its percentile): " + "; ".join(said(m) for m in rows) + ".\n")


def _cell(c: LatencyCheck) -> str:
    def predicted(x: float) -> str:
        return f"{x * 1e3:,.1f} ({x / c.measured - 1:+.0%})" if math.isfinite(x) else "inf (unstable)"
    return f"{c.measured * 1e3:,.1f} / {predicted(c.approximation)} / {predicted(c.simulation)}"


def points_table(v: LatencyValidation) -> str:
    rows: dict[str, dict[str, str]] = {}
    for c in v.checks:
        rows.setdefault(c.id, {"split": c.split, "load": c.load})[c.metric] = _cell(c)
    lines = [markdown_row(["point", "split", "load as modelled", "TTFT p50 ms: measured / approx / sim", "TTFT p99", "TPOT p50",
                   "TPOT p99"]), markdown_row(["---"] * 7)]
    for point, r in rows.items():
        lines.append(markdown_row([point, r["split"], r["load"], *(r.get(m, "—") for m in METRICS)]))
    return "\n".join(lines) + "\n"


def skipped_list(v: LatencyValidation) -> str:
    return "".join(f"- {s.id} ({s.split}): {s.reason}\n" for s in v.skipped) or "- none\n"


def render_tables(catalog: Catalog | None = None) -> dict[str, str]:
    """Every generated block of docs/search.md, by name."""
    catalog = catalog or load_catalog()
    v = validate_latency(catalog)
    return {"latency-medians": medians_table(v), "latency-summary": summary(v, targets(catalog)),
            "latency-points": points_table(v),
            "latency-skipped": skipped_list(v)}


def main(args: list[str] | None = None) -> int:  # pragma: no cover - a maintenance script
    return write_or_check(DOC, render_tables, sys.argv[1:] if args is None else args)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
