"""The predicted-vs-measured chart of the user's runs: one Vega-Lite spec the page draws as it is.

Each figure a run measured is a point at (measured, predicted) on log axes, one panel per figure
kind (TTFT, TPOT, output tokens/s, prompt tokens/s), with the line predicted = measured; the tooltip
carries the run, the load level and the error."""

from __future__ import annotations

from inferplan.measurements.compare import RunComparison
from inferplan.measurements.records import run_settings
from inferplan.report.charts import SCHEMA

FIGURES = {  # metric -> (panel title, display factor from SI, unit)
    "ttft_s": ("TTFT", 1e3, "ms"),
    "tpot_s": ("TPOT", 1e3, "ms"),
    "output_tokens_per_s_total": ("output tokens/s", 1.0, "tokens/s"),
    "prefill_tokens_per_s": ("prompt tokens/s", 1.0, "tokens/s"),
}


def chart_values(comparisons: list[RunComparison]) -> list[dict]:
    rows = []
    for c in comparisons:
        for p in c.points:
            for m in (m for m in p.metrics if m.predicted is not None):  # a point the model could not predict has no dot
                title, factor, unit = FIGURES[m.metric]
                rows.append({"figure": f"{title} ({unit})", "measured": m.measured * factor, "predicted": m.predicted * factor,
                             "error": round(m.error * 100, 1), "run": c.run.id,
                             "load": f"c={p.concurrency}, {p.input_tokens}/{p.output_tokens} tokens"})
    return rows


def predicted_vs_measured(comparisons: list[RunComparison]) -> dict:
    values = chart_values(comparisons)
    axis = {"type": "quantitative", "scale": {"type": "log", "zero": False}}
    return {
        "$schema": SCHEMA, "title": "Your runs: predicted vs measured",
        "description": "Your runs: the planner's predicted figures against the measured ones, one panel per figure",
        "data": {"values": values},
        "facet": {"field": "figure", "type": "nominal", "title": None}, "columns": 2,
        "resolve": {"scale": {"x": "independent", "y": "independent"}},
        "spec": {"width": 220, "height": 180, "layer": [
            {"mark": {"type": "point", "filled": True, "size": 60},
             "encoding": {"x": {"field": "measured", **axis}, "y": {"field": "predicted", **axis},
                          "color": {"field": "run", "type": "nominal"},
                          "tooltip": [{"field": "run"}, {"field": "load"}, {"field": "measured", "format": ",.2f"},
                                      {"field": "predicted", "format": ",.2f"}, {"field": "error", "title": "error %"}]}},
            {"mark": {"type": "line", "color": "gray", "strokeDash": [4, 4]},
             "transform": [{"fold": ["measured", "predicted"], "as": ["k", "v"]}],
             "encoding": {"x": {"field": "v", **axis, "title": "measured"}, "y": {"field": "v", **axis, "title": "predicted"}}},
        ]},
    }


TAIL_TITLES = {"ttft_p50_s": "TTFT p50", "ttft_p99_s": "TTFT p99", "tpot_p50_s": "TPOT p50", "tpot_p99_s": "TPOT p99"}


def run_text(c: RunComparison) -> str:
    """One line per stored run, as the page lists it: what ran, and the median errors (on the
    means, and where the file printed percentiles, the approximation's and the simulation's)."""
    r = c.run
    errors = ", ".join(f"{FIGURES[k][0] if k in FIGURES else k} {v * 100:.1f}%" for k, v in c.median_abs_error.items())
    tails = ", ".join(f"{TAIL_TITLES.get(t.metric, t.metric)} {t.approximation_abs_error * 100:.0f}% / "
                      f"{t.simulation_abs_error * 100:.0f}%" for t in c.tail_median_abs_error)
    stated = run_settings(r)
    text = (f"#{r.id} {r.measured_on}: {r.model} on {r.gpus}× {r.accelerator}, {r.engine} {r.engine_version}"
            f"{f' ({stated})' if stated else ''}, {len(r.points)} points ({r.format}: {r.file}) — median |error| {errors or '—'}")
    trust = dict.fromkeys(p.tails.trust for p in c.points if p.tails and p.tails.trust)  # which figure to compare
    return (text + (f"; under load (approximation / simulation) {tails}" if tails else "")
            + "".join(f"; {n}" for n in (*trust, *c.notes)))

