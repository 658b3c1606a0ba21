"""Rich rendering for the CLI: tables and panels. Unit conversion only (GiB = 2^30, GB = 10^9)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from pydantic import BaseModel
from rich.cells import cell_len
from rich.console import Console, Group, RenderableType
from rich.markup import escape
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from inferplan.catalog.provenance import Sourced, iter_sourced
from inferplan.units import GB, GiB

if TYPE_CHECKING:
    from inferplan.memory.matrix import FitsCell


def gib(n: float | None) -> str:
    return "—" if n is None else f"{n / GiB:,.2f} GiB"


def gb(n: float | None) -> str:
    return "—" if n is None else f"{n / GB:,.1f} GB"


def _q(q: Sourced | None, scale: float = 1.0, fmt: str = "{:,.0f}") -> str:
    return "—" if q is None else fmt.format(q.value / scale)


@dataclass(frozen=True)
class Col:
    """A table column: ``key`` columns hold what a user types next (ids) and are never cut; a column
    that is not ``essential`` is left out when the table would not fit the terminal."""

    name: str
    essential: bool = True
    key: bool = False


def _width(cell: str) -> int:
    """Terminal columns of a cell's widest line (its markup not counted)."""
    return max((Text.from_markup(line).cell_len if "[" in line else cell_len(line) for line in cell.split("\n")),
               default=0)


def layout(title: str, cols: list[Col], rows: list[list[str]], width: int) -> RenderableType:
    """A table that fits ``width`` columns of terminal: every column when it fits, else the essential
    ones, else one record per block (key cells first, then each field on its own line)."""
    def needed(shown: list[int]) -> int:
        return sum(max([_width(cols[i].name), *(_width(r[i]) for r in rows)]) + 3 for i in shown) + 1

    shown = list(range(len(cols)))
    if needed(shown) > width:
        shown = [i for i in shown if cols[i].essential]
    if needed(shown) > width:
        lines = [Text(title, style="bold")]
        for r in rows:
            lines.append(Text.from_markup("  ".join(r[i] for i, c in enumerate(cols) if c.key), style="bold"))
            fields = " · ".join(f"{c.name} {r[i]}" for i, c in enumerate(cols) if not c.key and r[i] and i in shown)
            lines.append(Padding(Text.from_markup(fields), (0, 0, 0, 4)))
        return Group(*lines)
    table = Table(title=title)
    for i in shown:
        c = cols[i]
        table.add_column(c.name, no_wrap=c.key, overflow="fold",
                         min_width=max([_width(c.name), *(_width(r[i]) for r in rows)]) if c.key else None)
    for r in rows:
        table.add_row(*(r[i] for i in shown))
    return table


def catalog_table(kind: str, entries: list[BaseModel], width: int = 200) -> RenderableType:
    title = f"{kind} ({len(entries)})"
    if kind.startswith("accel"):
        cols = [Col("id", key=True), Col("name", False), Col("memory"), Col("bandwidth"), Col("bf16 TFLOPS", False),
                Col("native", False), Col("status", False)]
        rows = [[a.id, a.name, gb(a.memory_bytes.value), _q(a.memory_bandwidth_bytes_per_s, GB, "{:,.0f} GB/s"),
                 _q(a.peak_flop_per_s.get("bf16"), 1e12), ",".join(a.native_formats), a.status.value] for a in entries]
    elif kind.startswith("system"):
        cols = [Col("id", key=True), Col("name", False), Col("GPUs"), Col("memory", False), Col("power", False),
                Col("price USD (low–high)"), Col("status", False)]
        rows = []
        for s in entries:
            price = "—"
            if s.price and s.price.usd_low:
                high = s.price.usd_high.value if s.price.usd_high else s.price.usd_low.value
                price = f"${s.price.usd_low.value:,.0f}–{high:,.0f}"
            rows.append([s.id, s.name, f"{s.accelerator_count}× {s.accelerator}", gb(s.memory_bytes.value if s.memory_bytes else None),
                         _q(s.power_w, 1e3, "{:,.1f} kW"), price, s.status.value])
    elif kind.startswith("model"):
        cols = [Col("id", key=True), Col("name", False), Col("status", False), Col("params (total/active)"),
                Col("context", False), Col("checkpoints", False), Col("config", False)]
        rows = []
        for m in entries:
            params = _q(m.total_params, 1e9, "{:,.1f}B")
            if m.active_params:
                params += " / " + _q(m.active_params, 1e9, "{:,.1f}B")
            rows.append([m.id, m.name, m.status, params, _q(m.context_tokens), ", ".join(c.quantization for c in m.checkpoints),
                         "yes" if m.config else (f"proxy:{m.kv_proxy}" if m.kv_proxy else "no")])
    else:
        cols = [Col("id", key=True), Col("summary")]
        rows = [[e.id, str(getattr(e, "name", None) or getattr(e, "title", None) or getattr(e, "label", None)
                           or getattr(e, "method", ""))] for e in entries]
    return layout(title, cols, rows, width)


def print_entry(console: Console, kind: str, entry: BaseModel) -> None:
    console.print(f"[bold]{kind}[/]: {entry.id}")
    for key, value in entry.model_dump(mode="json", exclude_none=True).items():
        if not isinstance(value, (dict, list)):
            console.print(f"  {key}: {value}")
    table = Table("field", "value (SI)", "kind", "source")
    for path, q in iter_sourced(entry):
        table.add_row(path, f"{q.value:,.6g}", q.kind.value, q.source)
    if table.row_count:
        console.print(table)


def print_import(console: Console, s, explain: bool = False) -> None:
    params = f"{s.total_params / 1e9:,.1f}B" + (f" ({s.active_params / 1e9:,.1f}B active per token)" if s.experts else "")
    context = f"{s.context_tokens:,} tokens" if s.context_tokens else "not stated"
    console.print(f"[bold]{escape(s.name)}[/]: {escape(s.hf_architecture)} ({escape(s.model_type)}), {params} parameters", highlight=False)
    console.print(f"  context: {context}; KV cache: {s.kv_cache_bytes_per_token_bf16 / 1024:,.1f} KiB per token at 16 bits"
                  + (f", plus {s.state_bytes_per_sequence_bf16 / 2**20:,.1f} MiB of state per sequence" if s.state_bytes_per_sequence_bf16 else ""))
    checkpoint = gb(s.checkpoint_bytes) + (f" ({escape(s.checkpoint_source)})" if s.checkpoint_source else "") if s.checkpoint_bytes else "no weights found beside the config"
    console.print(f"  checkpoint: {checkpoint}; weights {escape(s.quantization or 'not quantized')}", highlight=False)
    console.print(f"  layers: {s.num_layers} ({', '.join(f'{n} {k}' for k, n in s.layer_kinds.items())}); "
                  f"{s.num_attention_heads} attention / {s.num_kv_heads} KV heads" + (", MLA" if s.mla else "")
                  + (f"; {s.experts} experts, {s.experts_per_token} per token" if s.experts else ""), highlight=False)
    console.print(f"  files in: {escape(s.path)}", highlight=False)
    if explain:
        print_assumptions(console, s.assumptions)
    elif s.assumptions:
        console.print(f"[dim]assumed: {len(s.assumptions)} things (--explain lists them)[/]")


def command_line(command: str, d, changes: dict) -> str:
    """``inferplan <command>`` with the deployment's stated flags and ``changes`` applied: a stated or
    changed field is written unless it holds its default (None: left out); a stated parallel size
    is written even then, as stating one chooses the layout."""
    import shlex

    from inferplan.memory.layout import LAYOUT_FIELDS
    from inferplan.shells.cli_common import FLAGS

    words = ["inferplan", command]
    for field, info in type(d).model_fields.items():
        value = changes[field] if field in changes else getattr(d, field)
        if field not in FLAGS or value is None or (field not in d.model_fields_set and field not in changes):
            continue
        if value == info.default and not (field in LAYOUT_FIELDS and field not in changes):
            continue
        if isinstance(value, bool):
            words += [FLAGS[field]] if value else []
            continue
        words += [FLAGS[field], shlex.quote(f"{value:g}" if isinstance(value, float) else str(value))]
    return " ".join(words)


def print_parts(console: Console, parts: list[Text], indent: int) -> None:
    """Comma-separated figures on as many lines as the terminal needs, each figure whole (a number is
    never parted from its unit), continuation lines indented two more."""
    line = Text(" " * indent)
    for i, part in enumerate(parts):
        piece = part.copy()
        if i < len(parts) - 1:
            piece.append(",")
        if line.plain.strip() and line.cell_len + 1 + piece.cell_len > console.width:
            console.print(line, soft_wrap=True, highlight=False)
            line = Text(" " * (indent + 2))
        elif line.plain.strip():
            line.append(" ")
        line.append_text(piece)
    console.print(line, soft_wrap=True, highlight=False)


def print_fit(console: Console, r, d=None, explain: bool = False) -> None:
    verdict = "[bold green]fits[/]" if r.fits else "[bold red]does not fit[/]"
    p = r.parallel
    layout = f"TP{p.tensor_parallel_size}" + (f" PP{p.pipeline_parallel_size}" if p.pipeline_parallel_size > 1 else "") + (
        f" DP{p.data_parallel_size}" if p.data_parallel_size > 1 else "") + (" EP" if p.expert_parallel else "")
    console.print(f"{r.model} on {p.gpus}× {r.accelerator} ({r.engine}, {r.quantization}, KV {r.kv_cache_dtype}, {layout}) "
                  f"at {r.max_model_len:,} tokens: {verdict}")
    if r.layout_note:
        console.print(r.layout_note, highlight=False)
    console.print(f"  per GPU: {gib(r.gpu_memory_bytes)} total, {gib(r.usable_bytes_per_gpu)} usable by the engine", highlight=False)
    if r.memory_rule:
        console.print(f"  memory rule: {r.memory_rule}", highlight=False)
    parts = [Text(f"weights {gib(r.weights_bytes_per_gpu)}"), Text(f"activations {gib(r.activation_bytes_per_gpu)}"),
             Text(f"runtime {gib(r.overhead_bytes_per_gpu)}")]
    if r.cuda_graph_bytes_per_gpu:
        parts.append(Text(f"CUDA graphs {gib(r.cuda_graph_bytes_per_gpu)}"))
    parts.append(Text(f"KV cache {gib(r.kv_cache_bytes_per_gpu)}", style="bold"))
    print_parts(console, parts, indent=4)
    console.print(f"  KV cache: {r.kv_cache_bytes_per_token / 1024:,.1f} KiB per token, {r.kv_cache_tokens:,} tokens per instance",
                  highlight=False)
    console.print(f"  at once: {r.total_max_concurrency:,.2f} sequences of {r.max_model_len:,} tokens"
                  + (f" ({r.max_concurrency:,.2f} per instance)" if p.data_parallel_size > 1 else ""), highlight=False)
    if r.largest_context_tokens is not None:
        console.print(f"  largest context at {r.concurrency} concurrent sequences: {r.largest_context_tokens:,} tokens")
    if r.host_memory_budget_bytes is not None:
        console.print(f"  host RAM: {gib(r.host_memory_bytes_used)} used of {gib(r.host_memory_budget_bytes)}"
                      + (f"; host KV tier {r.host_kv_cache_tokens:,} tokens per instance" if r.host_kv_cache_tokens else ""),
                      highlight=False)
    if not r.fits:
        if r.shortfall_bytes:
            console.print(f"  shortfall: {gib(r.shortfall_bytes)} per GPU")
        elif r.startup_note:
            console.print(f"  start-up: {r.startup_note}", highlight=False)
        else:
            console.print("  host RAM is short (--host-memory-gb): more host memory, or fewer weights offloaded")
        if not r.smallest_fit and r.shortfall_bytes:
            console.print("  no TP/PP layout of this GPU that the engine launches holds it")
        if r.suggestions and d is not None:
            console.print("[bold]To fit, run one of:[/]")
            for s in r.suggestions:
                console.print(f"  # {s.summary}", highlight=False)
                console.print(f"  {command_line('fit', d, s.changes)}", highlight=False, soft_wrap=True)
        if r.offload_note:
            console.print(f"  {r.offload_note}", highlight=False)
    _assumptions_or_hint(console, r.assumptions, explain)


def _assumptions_or_hint(console: Console, assumptions, explain: bool, extra: str = "") -> None:
    if explain:
        print_assumptions(console, assumptions)
    elif assumptions:
        console.print(f"[dim]{len(assumptions)} assumptions{extra} behind this answer: --explain lists them[/]")


def _plan(p) -> str:
    if p is None:
        return "none"
    return f"{p.gpus}× (TP{p.tensor_parallel_size}" + (f" PP{p.pipeline_parallel_size})" if p.pipeline_parallel_size > 1 else ")")


def fits_grid(matrix, width: int = 200) -> RenderableType | None:
    """One row per model (and precision), one column per hardware: the sequences of the cell's
    context one instance holds at once where it fits, else the fewest GPUs that would hold it.
    A long grid lists the models no column holds below it, one line each no longer; where the
    hardware ids make the grid too wide the columns are lettered and the ids listed under it.
    None when even that would not fit ``width`` columns."""
    hardware = list(dict.fromkeys(c.hardware for c in matrix.cells))
    rows: dict[tuple[str, str], dict[str, FitsCell]] = {}
    for c in matrix.cells:
        rows.setdefault((c.model, c.quantization), {})[c.hardware] = c
    nowhere = [key for key, cells in rows.items() if not any(c.result and c.result.fits for c in cells.values())]
    if len(rows) <= FOLD_ROWS or len(nowhere) == len(rows):  # a long grid keeps one screen: no-fit rows become a list
        nowhere = []
    body = [[m, q, *(_fits_cell(rows[m, q].get(h)) for h in hardware)] for (m, q) in rows if (m, q) not in nowhere]
    same: dict[str, list[str]] = {}  # a row's model -> the models whose rows are identical to it
    if len(rows) > FOLD_ROWS:  # and twin rows one row
        last = {tuple(r[1:]): r[0] for r in body}  # the catalogue lists a line's newest model last
        for r in body:
            if last[tuple(r[1:])] != r[0]:
                same.setdefault(last[tuple(r[1:])], []).append(r[0])
        body = [r for r in body if last[tuple(r[1:])] == r[0]]
    headers = hardware
    needed = sum(max([_width(col), *(_width(r[i]) for r in body)]) + 2 for i, col in enumerate(["model", "quant", *headers]))
    if needed > width:
        headers = [chr(ord("A") + i) for i in range(len(hardware))] if len(hardware) <= 26 else hardware
        cols = ["model", "quant", *headers]
        if sum(max([_width(col), *(_width(r[i]) for r in body)]) + 1 for i, col in enumerate(cols)) > width:
            return None
    table = Table(box=None, show_header=True, header_style="bold", pad_edge=False, padding=(0, 1))
    for i, col in enumerate(["model", "quant", *headers]):
        table.add_column(col, no_wrap=True, justify="left" if i < 2 else "right")
    for r in body:
        table.add_row(*r[:2], *map(_grid_text, r[2:]))
    lengths = sorted({c.result.max_model_len for c in matrix.cells if c.result})
    context = f" at {lengths[-1]:,} tokens" + ("" if len(lengths) == 1 else " (or a model's shorter context)") if lengths else ""
    # no cell planned: the grid is all n/a, so the reasons are the answer (each once)
    reasons = [] if lengths else [Text(f"n/a: {e}", style="dim") for e in dict.fromkeys(c.error for c in matrix.cells if c.error)]
    legend = "" if headers == hardware else ", ".join(f"{letter} = {h}" for letter, h in zip(headers, hardware))
    hint = "--explain: each cell's figures" + (", and why n/a" if any("n/a" in c for r in body for c in r) else "")
    note = Text()  # one paragraph: the columns' names, the models listed rather than shown as rows, the hint
    if legend:
        note.append(legend + " · ", style="dim")
    if nowhere:
        note.append_text(_nowhere_list([(key, [rows[key].get(h) for h in hardware]) for key in nowhere], headers))
        note.append(" · ")
    if same:
        note.append("Same figures: " + "; ".join(" = ".join([m, *t]) for m, t in same.items()) + " · ", style="dim")
    note.append(hint, style="dim")
    return Group(
        Text.from_markup(f"[bold]What fits[/]{context}: sequences held, or [red]no[/] (N× GPUs needed)"),
        table,
        *reasons,
        note,
    )


FOLD_ROWS = 20  # a grid longer than this lists the models that fit nowhere below it instead of as rows


def _grid_text(cell: str) -> Text:
    """A grid cell as rich text: the few cell forms ``_fits_cell`` writes, styled without parsing markup
    (a grid has hundreds of cells)."""
    for tag, style in (("[green]", "green"), ("[red]", "red")):
        if cell.startswith(tag):
            head, _, rest = cell[len(tag):].partition("[/]")
            return Text.assemble((head, style), rest)
    return Text(cell)


def _fits_cell(c: FitsCell | None) -> str:
    if c is None:
        return ""
    r = c.result
    if r is None:
        return "n/a"
    if r.fits:
        return f"[green]{r.total_max_concurrency:,.1f}[/]"
    return "[red]no[/]" + (f" ({c.smallest_fit.gpus}×)" if c.smallest_fit else "")


def _nowhere_list(rows: list[tuple[tuple[str, str], list[FitsCell | None]]], headers: list[str]) -> Text:
    """The models no column holds on one instance, grouped by the fewest GPUs per column."""
    one_quant = len({m for (m, _), _ in rows}) == len(rows)
    groups: dict[tuple[float, ...], list[str]] = {}
    for (m, q), cells in rows:
        fewest = tuple(float(c.smallest_fit.gpus) if c and c.result and c.smallest_fit else float("inf") for c in cells)
        groups.setdefault(fewest, []).append(m if one_quant else f"{m} {q}")
    def label(fewest: tuple[float, ...]) -> str:
        return "/".join("n/a" if n == float("inf") else f"{n:.0f}" for n in fewest)
    items = " · ".join(f"{label(k)}: {', '.join(groups[k])}" for k in sorted(groups))
    return Text.from_markup(f"[red]Fits none[/], fewest GPUs per column: {escape(items)}")


def fits_table(matrix, width: int = 200, explain: bool = False) -> RenderableType:
    if not explain and (grid := fits_grid(matrix, width)) is not None:
        return grid
    cols = [Col("model", key=True), Col("hardware", key=True), Col("quant", key=True), Col("context"),
            Col("weights/GPU", False), Col("KV/GPU"), Col("KV tokens", False), Col("concurrency"), Col("fits"),
            Col("smallest fit", False)]
    rows = []
    for c in matrix.cells:
        r = c.result
        if r is None:
            rows.append([c.model, c.hardware, c.quantization, "—", "—", "—", "—", "—", f"[yellow]{c.error}[/]", ""])
            continue
        rows.append([c.model, c.hardware, c.quantization, f"{r.max_model_len:,}", gib(r.weights_bytes_per_gpu),
                     gib(r.kv_cache_bytes_per_gpu), f"{r.kv_cache_tokens:,}", f"{r.total_max_concurrency:,.1f}",
                     "[green]yes[/]" if r.fits else "[red]no[/]", _plan(c.smallest_fit)])
    return layout("what fits (KV left per GPU, concurrency at each cell's context)", cols, rows, width)


def print_assumptions(console: Console, assumptions) -> None:
    console.print("[dim]assumptions:[/]")
    for a in assumptions:
        console.print(f"[dim]  - {a}[/]", highlight=False)


def print_perf(console: Console, e, explain: bool = False) -> None:
    from inferplan.performance.local_runs import source_words

    source = source_words(e)
    console.print(f"{e.model} on {e.gpus}× {e.accelerator} ({e.engine}, {e.quantization}, math in {e.compute_dtype}) "
                  f"at concurrency {e.concurrency:,}: "
                  f"[bold]{e.output_tokens_per_s_per_user:,.1f} tok/s per user[/], TTFT {e.ttft_s * 1e3:,.0f} ms ({source})")
    if e.layout_note:
        console.print(e.layout_note, highlight=False)
    if e.measured_label:  # the user's own run (measurements import)
        console.print(f"{e.measured_label}: run {e.measured_record} (inferplan measurements show {e.measured_record})")
    table = Table("metric", "value", show_header=True)
    for label, value in (
        ("TTFT", f"{e.ttft_s * 1e3:,.1f} ms"),
        ("TPOT (inter-token latency)", f"{e.tpot_s * 1e3:,.2f} ms"),
        ("output tokens/s per user", f"{e.output_tokens_per_s_per_user:,.1f}"),
        ("output tokens/s total", f"{e.output_tokens_per_s_total:,.0f}"),
        ("output tokens/s per GPU", f"{e.output_tokens_per_s_per_gpu:,.0f}"),
        ("input tokens/s total", f"{e.input_tokens_per_s_total:,.0f}"),
        ("running per instance", f"{e.running_per_instance:,}"),
        ("max concurrency (KV)", f"{e.max_concurrency:,}"),
    ):
        table.add_row(label, value)
    console.print(table)
    if e.rate_note:
        console.print(f"note: {e.rate_note}", highlight=False)
    record = (f", {len(e.validated)} track-record figures" if e.validated else "") + (
        f", {len(e.measured_points)} measured points of this deployment" if e.measured_points else "")
    _assumptions_or_hint(console, e.assumptions, explain, record)


def print_frontier(console: Console, f, explain: bool = False) -> None:
    table = Table(title=f"{f.model} on {f.gpus}× {f.accelerator}, {f.input_len}/{f.output_len} tokens ({f.source})")
    for col in ("concurrency", "tok/s per user", "tok/s per GPU", "TTFT", "bound"):
        table.add_column(col, justify="right")
    for p in f.points:
        table.add_row(f"{p.concurrency:,}", f"{p.output_tokens_per_s_per_user:,.1f}", f"{p.output_tokens_per_s_per_gpu:,.0f}",
                      f"{p.ttft_s * 1e3:,.0f} ms", p.bound)
    console.print(table)
    if f.layout_note:
        console.print(f.layout_note, highlight=False)
    _assumptions_or_hint(console, f.assumptions, explain)


# the figures a plan leads with (report/cards.py keys); --explain shows every card
PLAN_HEADLINE = ("users", "loadouts", "capex", "operating_cost", "break_even", "same_model_api", "payback",
                 "cost_per_mtok", "rent")


def print_plan(console: Console, r, currency: str = "usd", explain: bool = False) -> None:
    from inferplan.report.cards import plan_cards, recommendation_reasons

    console.print(f"[bold]Recommendation: {r.recommendation.route}[/]")
    for reason in recommendation_reasons(r, currency):
        console.print(f"  - {reason}", highlight=False)
    console.print(f"{escape(r.name)} — {r.model} on {r.system} ({r.accelerator}); workload {escape(r.workload.name)}",
                  highlight=False)
    cards = [c for c in plan_cards(r, currency) if c.key != "recommendation" and (explain or c.key in PLAN_HEADLINE)]
    table = Table(title="Users + ROI" + ("" if explain else " (the headline figures; --explain shows all)"), show_header=True)
    for col in ("output", "value", *(("",) if explain else ())):
        table.add_column(col, overflow="fold")
    for card in cards:
        table.add_row(card.label, card.value, *((card.note,) if explain else ()))
    console.print(table)
    _assumptions_or_hint(console, r.assumptions, explain)


def print_racks(console: Console, cmp) -> None:
    table = Table(title=f"{cmp.interactivity_tokens_per_s} output tok/s per user (baseline {cmp.baseline})")
    for col in ("profile", "tok/s per MW", "owner $/M output tokens", "tok/MW vs baseline", "cheaper than baseline"):
        table.add_column(col)
    for row in cmp.rows:
        def f(v, fmt):
            return "not feasible" if v is None else fmt.format(v)
        table.add_row(row["profile"], f(row["output_tokens_per_s_per_mw"], "{:,.0f}"), f(row["owner_cost_usd_per_mtok"], "${:,.3f}"),
                      f(row["tokens_per_mw_vs_baseline"], "{:.2f}×"), f(row["cheaper_than_baseline"], "{:.2f}×"))
    console.print(table)


def print_uncertainty(console: Console, u, r, currency: str = "usd", explain: bool = False) -> None:
    from inferplan.report.cards import uncertainty_rows

    rows = uncertainty_rows(u, r, currency)
    if not explain:
        shown = [f"{row.label.split(' (')[0].lower()} {row.p10}–{row.p90}" for row in rows[1:4]]
        console.print(f"P10–P90 over {u.draws:,} draws: " + "; ".join(shown)
                      + f"; {u.never_pays_back_share:.0%} of draws never pay back", highlight=False)
        return
    table = Table(title=f"Uncertainty: {u.draws:,} Monte Carlo draws (seed {u.seed})")
    for col in ("output", "P10", "P50", "P90"):
        table.add_column(col)
    for row in rows:
        table.add_row(row.label, row.p10, row.p50, row.p90)
    if u.payback_months is None:
        table.add_row("Payback (draws that pay back)", "—", "—", "—")
    console.print(table)
    console.print(f"{u.never_pays_back_share:.0%} of draws never pay back")
