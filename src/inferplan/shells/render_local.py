"""Rendering for this machine and the user's own measurements (text only: the figures come from the library)."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from inferplan.performance import here
from inferplan.shells.render import Col, gib, layout
from inferplan.units import GiB, fmt_ms


def _one_request() -> str:
    """The request the speeds on this machine are estimated for, as the library states it."""
    return f"one request at a time ({here.SPEED_INPUT_TOKENS} prompt / {here.SPEED_OUTPUT_TOKENS} output tokens)"


def print_machine(console: Console, machine) -> None:
    table = Table(title="this machine")
    for col in ("accelerator", "count", "memory each", "catalogue"):
        table.add_column(col)
    for g in machine.groups:
        table.add_row(escape(g.name), str(g.count), gib(g.memory_bytes), escape(g.label))
    if machine.groups:
        console.print(table)
    ram = gib(machine.ram_bytes) if machine.ram_bytes else "not read"
    console.print(f"CPU: {escape(machine.cpu or 'not read')}"
                  f"{f' ({machine.cores} logical CPUs)' if machine.cores else ''}; RAM: {ram}", highlight=False)
    for note in (*machine.notes, *(n for g in machine.groups for n in g.notes)):
        console.print(f"[dim]{escape(note)}[/]", highlight=False)


METRIC_LABELS = {"ttft_s": "TTFT", "tpot_s": "TPOT", "output_tokens_per_s_total": "output tok/s",
                 "prefill_tokens_per_s": "prefill tok/s"}


def _figure(metric: str, value: float) -> str:
    return fmt_ms(value, ",.2f") if metric.endswith("_s") and not metric.endswith("per_s") else f"{value:,.1f}"


def print_runs(console: Console, runs) -> None:
    from inferplan.measurements.records import failure_text

    if not runs:
        console.print("no stored measurements: `inferplan measurements import FILE …` adds some")
        return
    # ids and dates whole; at 80 columns the points, file and author are left out (measurements show ID has them)
    cols = [Col("id", key=True), Col("date", key=True), Col("model", key=True), Col("hardware"), Col("engine"),
            Col("quant"), Col("points", False), Col("file", False), Col("by", False)]
    rows = [[str(r.id), r.measured_on.isoformat(), escape(r.model), f"{r.gpus}× {r.accelerator} ({_split(r)})",
             escape(f"{r.engine} {r.engine_version}"), r.quantization, str(len(r.points)), escape(r.file),
             escape(r.measured_by)] for r in runs]
    console.print(layout("your measurements", cols, rows, console.width))
    for r in runs:  # at any width: the run offered another load than it states
        if failed := failure_text(r):
            console.print(f"[yellow]run {r.id}:[/] {escape(failed)}", highlight=False)


def _split(r) -> str:
    """A run's layout as stated: "TP 2", "TP 1 × PP 2", "TP 1 × DP 4, EP"."""
    pp = f" × PP {r.pipeline_parallel_size}" if r.pipeline_parallel_size > 1 else ""
    dp = f" × DP {r.data_parallel_size}" if r.data_parallel_size else ""
    return f"TP {r.tensor_parallel_size}{pp}{dp}" + (", EP" if r.enable_expert_parallel else "")


def print_comparison(console: Console, result) -> None:
    from inferplan.measurements.records import by_whom, run_settings

    r = result.run
    console.print(f"run {r.id}: {r.model} on {r.gpus}× {r.accelerator}, {escape(r.engine)} {escape(r.engine_version)}, "
                  f"{r.quantization}; measured {r.measured_on}{escape(by_whom(r))} ({r.format}: {escape(r.file)})",
                  highlight=False)

    stated = run_settings(r)
    if stated:
        console.print(f"launched with {escape(stated)}", highlight=False)
    if r.note:
        console.print(f"[dim]{escape(r.note)}[/]", highlight=False)
    table = Table(title="predicted (calibrated model) vs measured")
    for col in ("concurrency", "input/output", "figure", "measured", "predicted", "error"):
        table.add_column(col, overflow="fold")
    for p in result.points:
        if p.problem and not p.metrics:
            table.add_row(str(p.concurrency), f"{p.input_tokens}/{p.output_tokens}", "—", "—", "—", escape(p.problem))
        for m in p.metrics:
            table.add_row(str(p.concurrency), f"{p.input_tokens}/{p.output_tokens}", METRIC_LABELS[m.metric],
                          _figure(m.metric, m.measured), "—" if m.predicted is None else _figure(m.metric, m.predicted),
                          "— (below)" if m.error is None else f"{m.error:+.1%}")
    console.print(table)
    for p in result.points:
        if p.problem and p.metrics:
            console.print(f"no prediction at concurrency {p.concurrency}, {p.input_tokens}/{p.output_tokens} tokens: "
                          f"{escape(p.problem)}", highlight=False)
    if (kv := result.kv_cache_tokens) is not None:
        console.print(f"KV cache: {kv.measured:,.0f} tokens reported, the memory plan gives {kv.predicted:,.0f} ({kv.error:+.1%}; "
                      f"{escape(result.memory_rule or '')})", highlight=False)
    for note in result.notes:
        console.print(f"[dim]{escape(note)}[/]", highlight=False)
    if result.median_abs_error:
        console.print("median |error|: " + ", ".join(f"{METRIC_LABELS[k]} {v:.1%}" for k, v in result.median_abs_error.items()))
    _print_tails(console, result)


TAIL_LABELS = {"ttft_p50_s": "TTFT p50", "ttft_p99_s": "TTFT p99", "tpot_p50_s": "TPOT p50", "tpot_p99_s": "TPOT p99"}


def _print_tails(console: Console, result) -> None:
    points = [p for p in result.points if p.tails]
    if not points:
        return
    for p in points:  # the point's concurrency, lengths and load head its own table: six columns fit 80
        table = Table(title=f"latency percentiles at concurrency {p.concurrency}, {p.input_tokens}/{p.output_tokens} "
                            f"tokens, {escape(p.tails.load)}: measured vs the approximation and the simulation")
        for col in ("figure", "measured", "approximation", "error", "simulation", "error"):
            table.add_column(col, overflow="fold")
        for c in p.tails.percentiles:
            table.add_row(TAIL_LABELS[c.metric], _figure(c.metric, c.measured), _figure(c.metric, c.approximation),
                          f"{c.approximation_error:+.1%}", _figure(c.metric, c.simulation), f"{c.simulation_error:+.1%}")
        console.print(table)
        if p.tails.trust:
            console.print(escape(p.tails.trust))
    console.print("median |error| (approximation / simulation): " + ", ".join(
        f"{TAIL_LABELS[m.metric]} {m.approximation_abs_error:.1%} / {m.simulation_abs_error:.1%}"
        for m in result.tail_median_abs_error))


def print_offloads(console: Console, offloads, ram_bytes: int | None) -> None:
    if not offloads:
        return
    table = Table(title=f"with weights in this machine's {ram_bytes / GiB:,.1f} GiB of host RAM, {_one_request()}")
    for col in ("model", "quant", "setting", "host RAM", "TTFT", "output tokens/s"):
        table.add_column(col, overflow="fold")
    for row in offloads:
        o = row.offload
        speed = (fmt_ms(o.ttft_s), f"{o.output_tokens_per_s_per_user:,.1f}") if o.ttft_s is not None else ("—", "—")
        table.add_row(row.model, row.quantization, o.flag, f"{o.host_memory_bytes_needed / GiB:,.1f} GiB", *speed)
    console.print(table)


def print_speeds(console: Console, speeds) -> None:
    if not speeds:
        return
    table = Table(title=f"how fast, {_one_request()}")
    for col in ("model", "quant", "TTFT", "output tokens/s", "source"):
        table.add_column(col)
    for s in speeds:
        table.add_row(s.model, s.quantization, fmt_ms(s.ttft_s), f"{s.output_tokens_per_s_per_user:,.1f}", s.source)
    console.print(table)

