"""Rendering of latency-under-load results: the validation table and ``inferplan simulate``."""

from __future__ import annotations

import math

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from inferplan.shells.render import Col, layout
from inferplan.shells.render_local import TAIL_LABELS
from inferplan.report.numbers import UNBOUNDED, UNBOUNDED_NOTE, milliseconds_text
from inferplan.search.arrivals import plural


def _pct(error: float) -> str:
    return UNBOUNDED if math.isinf(error) else f"{error:+.0%}"


def print_latency_validation(console: Console, v) -> None:
    cols = [Col("point", key=True), Col("split"), Col("load", False), Col("metric"), Col("measured"),
            Col("approximation"), Col("err"), Col("simulation"), Col("err")]
    rows = [[c.id, c.split, escape(c.load), f"{TAIL_LABELS.get(c.metric, c.metric)} (ms)", milliseconds_text(c.measured), milliseconds_text(c.approximation), _pct(c.approximation_error),
             milliseconds_text(c.simulation), _pct(c.simulation_error)] for c in v.checks]
    console.print(layout("Latency under load: predicted vs measured (ms; error = predicted / measured - 1)", cols, rows,
                         console.width))
    if any(math.isinf(x) for c in v.checks for x in (c.approximation, c.simulation)):
        console.print(UNBOUNDED_NOTE, highlight=False)
    medians = Table(title="Median |error| per split")
    for col in ("split", "metric", "points", "approximation", "simulation"):
        medians.add_column(col)
    for m in v.medians:
        medians.add_row(m.split, TAIL_LABELS.get(m.metric, m.metric), str(m.points), f"{m.approximation_abs_error:.0%}", f"{m.simulation_abs_error:.0%}")
    console.print(medians)
    for s in v.skipped:
        console.print(f"not scored: {s.id} ({s.split}): {s.reason}", highlight=False)


METRICS = ("ttft", "tpot", "e2e")


def print_simulation(console: Console, result) -> None:
    sim = result.simulation
    for note in result.notes:
        console.print(note.replace("prefix_cache_hit_rate", "--prefix-cache-hit-rate"), highlight=False, markup=False)
    if result.approximation is None:
        _print_pools(console, result)
        return
    table = Table(title=f"{result.load}: simulation ({plural(sim.requests, 'request')}, seed "
                        f"{sim.seed}, {plural(sim.replicas, 'replica')}, {sim.router}) "
                        "beside the approximation (ms)")
    # one row per percentile and source, one column per metric: fits 80 columns with 7-digit milliseconds
    table.add_column("", no_wrap=True)
    for metric in METRICS:
        table.add_column(metric.upper(), justify="right", overflow="fold")
    for q in ("p50", "p95", "p99"):
        for source, figures in (("sim", result.simulation), ("approx", result.approximation)):
            table.add_row(f"{q} {source}", *(milliseconds_text(getattr(figures, f"{metric}_{q}_s")) for metric in METRICS))
    console.print(table)
    a = result.approximation
    if any(math.isinf(getattr(a, f"{metric}_{q}_s")) for metric in METRICS for q in ("p50", "p95", "p99")):
        console.print(UNBOUNDED_NOTE, highlight=False)
    console.print(f"utilisation {_utilisation(a.utilisation)} ({'stable' if a.stable else 'UNSTABLE: the queue grows'}); "
                  f"mean running per replica: simulated {result.simulation.mean_running:.1f}, approximated {a.mean_running:.1f}; "
                  f"{result.simulation.requests_per_s:.2f} requests/s served in the simulation", highlight=False)


def _print_pools(console: Console, result) -> None:
    sim, pools = result.simulation, result.pools
    table = Table(title=f"{result.load}: simulation ({plural(sim.requests, 'request')}, seed {sim.seed}) (ms)")
    table.add_column("", no_wrap=True)
    for metric in METRICS:
        table.add_column(metric.upper(), justify="right", overflow="fold")
    for q in ("p50", "p95", "p99"):
        table.add_row(q, *(milliseconds_text(getattr(sim, f"{metric}_{q}_s")) for metric in METRICS))
    console.print(table)
    link = f" over {pools.kv_transfer_link}" if pools.kv_transfer_link else " (as given)"
    console.print(f"prefill TP{pools.prefill_tensor_parallel_size} × {pools.prefill_instances}, decode × "
                  f"{pools.decode_instances}; KV hand-over {milliseconds_text(pools.kv_transfer_s)} ms{link}; mean running per decode "
                  f"instance {sim.mean_running:.1f}; {sim.requests_per_s:.2f} requests/s served. The search prices "
                  "separate pools with its own approximation (docs/search.md)", highlight=False)


OVERLOAD_SHOWN = 100  # an offered load past this many times capacity is said as "over" it


def _utilisation(utilisation: float) -> str:
    """Utilisation as a share of capacity below it; past it, how many times capacity is offered."""
    if utilisation <= 1:
        return f"{utilisation:.0%}"
    if utilisation >= OVERLOAD_SHOWN:
        return f"over {OVERLOAD_SHOWN} × capacity (overloaded)"
    return f"{utilisation:.3g} × capacity (overloaded)"
