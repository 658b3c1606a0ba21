"""Rendering of ``inferplan validate``: the memory, speed and cross-validation track records."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from inferplan.shells.render import Col, gb, gib, layout
from inferplan.units import fmt_ms


def print_memory_validation(console: Console, v) -> None:
    cols = [Col("point", key=True), Col("weights meas."), Col("weights pred."), Col("weights err"),
            Col("KV meas."), Col("KV pred."), Col("KV err"), Col("fits meas./pred."), Col("split")]
    rows = [[c.id, gib(c.measured_weights_bytes), gib(c.predicted_weights_bytes), _pct(c.weights_error),
             gib(c.measured_kv_bytes), gib(c.predicted_kv_bytes), _pct(c.kv_error),
             f"{_yes(c.measured_fits)}/{_yes(c.predicted_fits)}", c.split] for c in v.checks]
    console.print(layout("start-up memory: predicted vs measured (per GPU)", cols, rows, console.width))
    console.print(f"calibration set: median |error| weights {v.median_abs_weights_error:.2%}, KV cache "
                  f"{v.median_abs_kv_error:.2%}; fit verdicts agree on {v.fit_agreement:.0%} of points")
    releases = Table(title="field set (memory_field*.yaml) by engine release")
    for col in ("engine release", "points", "KV median |err|", "KV worst |err|", "weights median |err|", "fit agree", "refused"):
        releases.add_column(col, overflow="fold")
    for s in (*v.by_engine_version, v.holdout, v.field):
        releases.add_row(s.label, str(s.points), _pct(s.median_abs_kv_error, "", 1), _pct(s.worst_abs_kv_error, "", 1),
                         _pct(s.median_abs_weights_error, "", 2), _pct(s.fit_agreement, "", 0), str(s.refused))
    console.print(releases)
    rules = Table(title="field set by the engine memory rule each record was planned with")
    for col in ("memory rule", "points", "KV median |err|", "KV worst |err|", "fit agree"):
        rules.add_column(col, overflow="fold")
    for s in v.by_rule:
        rules.add_row(s.label, str(s.points), _pct(s.median_abs_kv_error, "", 1), _pct(s.worst_abs_kv_error, "", 1),
                      _pct(s.fit_agreement, "", 0))
    console.print(rules)
    for c in (c for c in v.checks if c.measured_peak_bytes):
        console.print(f"  {c.id}: allocator peak {gb(c.measured_peak_bytes)} measured, {gb(c.predicted_peak_bytes)} "
                      f"planned (weights + KV cache for the context + activations), {_pct(c.peak_error)}", highlight=False)
    for c in (c for c in v.checks if c.measured_request_bytes):
        conc = (f"maximum concurrency {c.measured_concurrency:.2f}x printed, {c.predicted_concurrency:.2f}x planned "
                f"({_pct(c.concurrency_error)}); " if c.measured_concurrency else "")
        console.print(f"  {c.id}: {conc}one max_model_len request takes {gib(c.measured_request_bytes)} of the pool, "
                      f"{gib(c.predicted_request_bytes)} planned ({_pct(c.request_error)})", highlight=False)
    for c in v.checks:
        for cav in (*c.caveats, *([f"planner refused: {c.refused}"] if c.refused else [])):
            console.print(f"[dim]  {c.id}: {cav}[/]", highlight=False)


def _pct(x: float | None, sign: str = "+", digits: int = 1) -> str:
    return "—" if x is None else f"{x:{sign}.{digits}%}"


def _yes(x: bool | None) -> str:
    return "—" if x is None else ("yes" if x else "no")


def _speed_value(x: float, metric: str) -> str:
    """A measured or predicted speed: times (TPOT, TTFT) are seconds inside and shown in ms."""
    is_time = metric.endswith("_s") and not metric.endswith("_per_s")  # ttft_s, tpot_s; not prefill_tokens_per_s
    return fmt_ms(x, ",.2f") if is_time else f"{x:,.1f}"


def print_speed_validation(console: Console, v, kind: str | None = None, worst: int | None = None,
                           family: str | None = None) -> None:
    def shown(row) -> bool:
        return (kind is None or row.kind == kind) and (family is None or row.family == family)

    rows = [c for c in v.checks if shown(c)]
    if worst:
        rows = sorted((c for c in rows if c.error is not None), key=lambda c: abs(c.error), reverse=True)[:worst]
    title = ("speed: predicted vs measured" + (f" ({kind})" if kind else "") + (f", {family}" if family else "")
             + (f", {worst} largest errors" if worst else ""))
    cols = [Col("point", key=True), Col("split"), Col("build", False), Col("metric"), Col("measured"),
            Col("predicted"), Col("error"), Col("bound", False)]
    table_rows = []
    for c in rows:
        pred = "—" if c.predicted is None else _speed_value(c.predicted, c.metric)
        err = "—" if c.error is None else f"{c.error:+.0%}" + ("" if c.scored else " (not scored)")
        table_rows.append([c.id, c.split, c.engine_build or "—", c.metric, _speed_value(c.measured, c.metric), pred, err,
                           escape(c.bound if c.scored and c.bound else (c.note or ""))])
    console.print(layout(title, cols, table_rows, console.width))
    record = Table(title="track record by engine family, and by model where it has 3 points or more (what each "
                         "estimate quotes; sweeps count as per-user decode and throughput; lean: median of how much "
                         "faster than measured the predictions run)")
    for col in ("family", "kind", "model", "points", "median |error|", "held out", "beyond 30 %", "worst", "lean"):
        record.add_column(col, overflow="fold")
    for r in filter(shown, v.by_family):
        held = "—" if r.holdout_median_abs_error is None else f"{r.holdout_median_abs_error:.0%} ({r.holdout_points})"
        record.add_row(r.family, r.kind, r.model or "all", str(r.points), f"{r.median_abs_error:.0%}", held,
                       str(r.beyond_30_percent), f"{r.worst_error:+.0%}", f"{r.median_speed_bias:+.0%}")
    console.print(record)
    for key, median in v.medians.items():
        console.print(f"median |error| {key}: {median:.1%} (worst {v.worst[key]:.0%})")
    if kind in (None, "decode"):
        for y in v.decode_by_build_year:
            console.print(f"decode on {y.year} engine builds: {y.points} points, median |error| "
                          f"{y.median_abs_error:.1%}, {y.beyond_30_percent} beyond 30 %")


def print_cross_validation(console: Console, cv) -> None:
    table = Table(title=f"leave-source-out: {cv.folds} folds by source over the fit split, each scored by a fit "
                        f"without its sources (PRIOR_WEIGHT {cv.prior_weight})")
    for col in ("kind", "points", "median |error|", "beyond 30 %"):
        table.add_column(col)
    for k in cv.by_kind:
        table.add_row(k.kind, str(k.points), f"{k.median_abs_error:.0%}", str(k.beyond_30_percent))
    table.add_row("all", str(cv.points), f"{cv.median_abs_error:.0%}", str(cv.beyond_30_percent))
    console.print(table)
    console.print(f"leave-source-out: median |error| {cv.median_abs_error:.1%}, mean |log error| "
                  f"{cv.mean_abs_log_error:.4f}, {cv.beyond_30_percent} of {cv.points} beyond 30 %")
