"""Rich rendering of the what-fits matrix for the CLI (``inferplan fits``, ``inferplan local``): a grid of
models by hardware where it fits the terminal, else a table of every cell's figures."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Group, RenderableType
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from inferplan.shells.render import Col, cell_width, gib, layout

if TYPE_CHECKING:
    from inferplan.memory.matrix import FitsCell

FOLD_ROWS = 20  # a grid longer than this lists the models that fit nowhere below it instead of as rows


def _plan(p) -> str:
    if p is None:
        return "none"
    return f"{p.gpus}× (TP{p.tensor_parallel_size}" + (f" PP{p.pipeline_parallel_size})" if p.pipeline_parallel_size > 1 else ")")


def fits_grid(matrix, width: int = 200) -> RenderableType | None:
    """One row per model (and precision), one column per hardware: the whole requests of the cell's
    context one instance admits at once where it fits (``FitsCell.requests_at_once``), else the fewest
    GPUs that would hold it.
    A long grid lists the models no column holds below it, one line each no longer; where the
    grid is too wide a no-fit cell says "needs N" for "no (needs N GPUs)" ("as TP4 PP2" for "no at TP8
    (fits TP4 PP2)", the column's GPUs split another way) and, if that is not enough,
    the columns are lettered and the ids listed under it.
    None when even that would not fit ``width`` columns."""
    return _grid(matrix, width, short=False) or _grid(matrix, width, short=True)


def engines_shown(matrix) -> tuple[str, dict[str, str]]:
    """The engine every column is planned on, for the title (" on llamacpp"), and each column's name with its
    engine where the columns differ (``h100-sxm (vllm)``; else the name alone)."""
    engine_of = {c.hardware: c.engine for c in matrix.cells}
    engines = set(engine_of.values())
    if len(engines) == 1:
        return f" on {engines.pop()}", {h: h for h in engine_of}
    return "", {h: f"{h} ({e})" for h, e in engine_of.items()}


def _grid(matrix, width: int, *, short: bool) -> RenderableType | None:
    hardware = list(dict.fromkeys(c.hardware for c in matrix.cells))
    on, named = engines_shown(matrix)
    rows: dict[tuple[str, str], dict[str, FitsCell]] = {}
    for c in matrix.cells:
        rows.setdefault((c.model, c.quantization), {})[c.hardware] = c
    fits_somewhere = {c.model for c in matrix.cells if c.result and c.result.fits}
    nowhere = [key for key in rows if key[0] not in fits_somewhere]
    if len(rows) <= FOLD_ROWS or len(nowhere) == len(rows):  # a long grid keeps one screen: no-fit rows become a list
        nowhere = []
    body = [[m, q, *(_fits_cell(rows[m, q].get(h), short) for h in hardware)] for (m, q) in rows if (m, q) not in nowhere]
    same: dict[str, list[str]] = {}  # a row's model -> the models whose rows are identical to it
    if len(rows) > FOLD_ROWS:  # and twin rows one row
        def twin(r: list[str]) -> tuple:  # the figures shown and the plan behind them (a slot count is often shared)
            plans = ((c.result.kv_cache_tokens, round(c.result.weights_bytes_per_gpu)) if c and c.result else None
                     for c in (rows[r[0], r[1]].get(h) for h in hardware))
            return (*r[1:], *plans)
        last = {twin(r): r[0] for r in body}  # the catalogue lists a line's newest model last
        for r in body:
            if last[twin(r)] != r[0]:
                same.setdefault(last[twin(r)], []).append(r[0])
        body = [r for r in body if last[twin(r)] == r[0]]
    headers = [named[h] for h in hardware]
    needed = sum(max([cell_width(col), *(cell_width(r[i]) for r in body)]) + 2 for i, col in enumerate(["model", "quant", *headers]))
    if needed > width and not short:  # the long cells only where the hardware ids fit too
        return None
    if needed > width:
        headers = [chr(ord("A") + i) for i in range(len(hardware))] if len(hardware) <= 26 else hardware
        cols = ["model", "quant", *headers]
        if sum(max([cell_width(col), *(cell_width(r[i]) for r in body)]) + 1 for i, col in enumerate(cols)) > width:
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
    legend = "" if headers == [named[h] for h in hardware] else ", ".join(
        f"{letter} = {named[h]}" for letter, h in zip(headers, hardware))
    slots = ("figures are --parallel slots: the most whose cache fits (fit's most_slots; the launch opens one "
             "unless --max-num-seqs says more) · ") if any(c.result and c.result.most_slots is not None for c in matrix.cells) else ""
    hint = slots + "--explain: each cell's figures" + ("; n/a: the cell could not be planned (--explain says why)" if any("n/a" in c for r in body for c in r) else "")
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
        Text.from_markup(f"[bold]What fits[/]{context}{on}: requests at once, or [red]no[/] (needs N GPUs)"),
        table,
        *reasons,
        note,
    )


def _grid_text(cell: str) -> Text:
    """A grid cell as rich text: the few cell forms ``_fits_cell`` writes, styled without parsing markup
    (a grid has hundreds of cells)."""
    for tag, style in (("[green]", "green"), ("[red]", "red")):
        if cell.startswith(tag):
            head, _, rest = cell[len(tag):].partition("[/]")
            return Text.assemble((head, style), rest)
    return Text(cell)


def _fits_cell(c: FitsCell | None, short: bool = False) -> str:
    if c is None:
        return ""
    r = c.result
    if r is None:
        return "n/a"
    if r.fits:
        return f"[green]{c.requests_at_once:,}[/]" + (" emulated" if "emulated" in c.runs else "")
    s = c.smallest_fit
    if s is None:
        return "[red]no[/]"
    if s.gpus == r.parallel.gpus:  # the same GPUs hold it in another layout
        return f"[red]as {_split(s)}[/]" if short else f"[red]no[/] at {_split(r.parallel)} (fits {_split(s)})"
    return f"[red]needs {s.gpus}[/]" if short else f"[red]no[/] (needs {s.gpus} GPUs)"


def _split(p) -> str:
    return f"TP{p.tensor_parallel_size}" + (f" PP{p.pipeline_parallel_size}" if p.pipeline_parallel_size > 1 else "")


def _nowhere_list(rows: list[tuple[tuple[str, str], list[FitsCell | None]]], headers: list[str]) -> Text:
    """The models no column holds on one instance, grouped by the fewest GPUs per column ("—": a column on
    another engine than the row's, which has no cell for it; "n/a": a cell no count of it holds)."""
    one_quant = len({m for (m, _), _ in rows}) == len(rows)
    absent = -1.0  # a column the row has no cell in
    groups: dict[tuple[float, ...], list[str]] = {}
    for (m, q), cells in rows:
        fewest = tuple(absent if c is None else float(c.smallest_fit.gpus) if c.result and c.smallest_fit
                       else float("inf") for c in cells)
        groups.setdefault(fewest, []).append(m if one_quant else f"{m} {q}")
    def label(fewest: tuple[float, ...]) -> str:
        return "/".join("—" if n == absent else "n/a" if n == float("inf") else f"{n:.0f}" for n in fewest)
    order = sorted(groups, key=lambda k: tuple(float("inf") if n == absent else n for n in k))
    items = " · ".join(f"{label(k)}: {', '.join(groups[k])}" for k in order)
    legend = [w for w, on in (("n/a: no count of it holds it", "n/a" in items),
                              ("—: not on the row's engine", "—" in items)) if on]
    said = f" ({'; '.join(legend)})" if legend else ""
    return Text.from_markup(f"[red]Fits none[/], fewest GPUs per column{said}: {escape(items)}")


def smaller_build_line(matrix) -> Text | None:
    """Where a model fits no column in the builds planned (each model's best published one, the formats
    not stated): the flags that plan a 4-bit GGUF instead, and the page's box that tries every engine and
    format each model has (None: every model fits somewhere)."""
    fits_somewhere = {c.model for c in matrix.cells if c.result and c.result.fits}
    if all(c.model in fits_somewhere for c in matrix.cells):
        return None
    flags = "--quantizations q4_k_m" + ("" if all(c.engine == "llamacpp" for c in matrix.cells) else " --engine llamacpp")
    return Text(f"A model that fits none may fit in fewer bits: {flags} plans 4-bit GGUF builds; the web page's What "
                "runs on my GPUs? (inferplan serve) tries every engine and format each model has, and weights in host "
                "RAM", style="dim")


def left_out_line(matrix) -> Text | None:
    """The catalogue models the default grid leaves out, and the flags that add them (None: none left out)."""
    if not matrix.left_out:
        return None
    n = len(matrix.left_out)
    return Text(f"Not in the default grid: {n} more catalogue model{'s' if n > 1 else ''} ({', '.join(matrix.left_out)}); "
                "--all-models adds them, --models names the ones to show", style="dim")


def fits_table(matrix, width: int = 200, explain: bool = False) -> RenderableType:
    """The grid where it fits ``width`` (else, or with ``explain``, a table of every cell's figures), and the
    line naming the catalogue models the default grid left out."""
    shown = (None if explain else fits_grid(matrix, width)) or _cells_table(matrix, width)
    left_out = left_out_line(matrix)
    return shown if left_out is None else Group(shown, left_out)


def _cells_table(matrix, width: int) -> RenderableType:
    cols = [Col("model", key=True), Col("hardware", key=True), Col("quant", key=True), Col("context"),
            Col("weights/GPU", False), Col("KV/GPU"), Col("KV tokens", False), Col("at once"), Col("fits"),
            Col("smallest fit", False)]
    on, named = engines_shown(matrix)
    rows = []
    for c in matrix.cells:
        r = c.result
        if r is None:
            rows.append([c.model, named[c.hardware], c.quantization, "—", "—", "—", "—", "—", f"[yellow]{c.error}[/]", ""])
            continue
        quant = f"{c.quantization} ({c.runs})" if "emulated" in c.runs else c.quantization
        rows.append([c.model, named[c.hardware], quant, f"{r.max_model_len:,}", gib(r.weights_bytes_per_gpu),
                     gib(r.kv_cache_bytes_per_gpu), f"{r.kv_cache_tokens:,}",
                     _at_once(c),
                     "[green]yes[/]" if r.fits else "[red]no[/]", _plan(c.smallest_fit)])
    return layout(f"what fits{on} (KV left per GPU, requests at once at each cell's context)", cols, rows, width)


def _at_once(c: FitsCell) -> str:
    """A cell's whole requests at once (slots on an engine with a context per slot); "—" where it does not fit."""
    if c.requests_at_once is None:
        return "—"
    return f"{c.requests_at_once:,} slots" if c.result.most_slots is not None else f"{c.requests_at_once:,}"
