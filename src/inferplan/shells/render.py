"""Rich rendering for the CLI: the table layout the renderers share, and the fit, speed and plan answers (the
catalogue in ``render_catalog.py``, the what-fits matrix in ``render_fits.py``). Unit conversion only (GiB = 2^30,
GB = 10^9)."""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass

from rich.cells import cell_len
from rich.console import Console, Group, RenderableType
from rich.markup import escape
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from inferplan.shells.command_lines import script_lines
from inferplan.units import GB, GiB, fmt_kib, fmt_ms, plural


def gib(n: float | None) -> str:
    return "—" if n is None else f"{n / GiB:,.2f} GiB"


def gb(n: float | None) -> str:
    return "—" if n is None else f"{n / GB:,.1f} GB"


@dataclass(frozen=True)
class Col:
    """A table column: ``key`` columns hold what a user types next (ids) and are never cut; a column
    that is not ``essential`` is left out when the table would not fit the terminal."""

    name: str
    essential: bool = True
    key: bool = False


def cell_width(cell: str) -> int:
    """Terminal columns of a cell's widest line (its markup not counted)."""
    return max((Text.from_markup(line).cell_len if "[" in line else cell_len(line) for line in cell.split("\n")),
               default=0)


def layout(title: str, cols: list[Col], rows: list[list[str]], width: int) -> RenderableType:
    """A table that fits ``width`` columns of terminal: every column when it fits, else the essential
    ones, else one record per block (key cells first, then each field on its own line)."""
    def needed(shown: list[int]) -> int:
        return sum(max([cell_width(cols[i].name), *(cell_width(r[i]) for r in rows)]) + 3 for i in shown) + 1

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
                         min_width=max([cell_width(c.name), *(cell_width(r[i]) for r in rows)]) if c.key else None)
    for r in rows:
        table.add_row(*(r[i] for i in shown))
    return table


def command_line(command: str, d, changes: dict) -> str:
    """``inferplan <command>`` with the deployment's stated flags and ``changes`` applied: every changed field
    and every stated one (None: left out) is written, unless it holds both the field's default and the
    flag's; the flag's default may differ from the field's (no --engine plans llama.cpp on Apple where the
    field's default is vLLM)."""
    import shlex

    from inferplan.shells.cli_common import FLAGS, PAIRED
    from inferplan.shells.cli_flags import FLAGS as OPTIONS

    words = ["inferplan", command]
    for field, info in type(d).model_fields.items():
        value = changes[field] if field in changes else getattr(d, field)
        if field not in FLAGS or value is None or (field not in d.model_fields_set and field not in changes):
            continue
        if field not in changes and field in OPTIONS and value == info.default == OPTIONS[field][1].default:
            continue
        if isinstance(value, bool):  # a switch the CLI takes both ways is written as stated, one only on when True
            on = FLAGS[field]
            words += [on if value else on.replace("--", "--no-", 1)] if field in PAIRED else [on] if value else []
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


def print_fit(console: Console, r, d=None, explain: bool = False, simulate: str | None = None) -> None:
    """fit's answer; ``simulate``: the command that prices the wait of the sequences above the running cap
    (None: fit states a setting simulate takes no flag for, so none is printed)."""
    verdict = "[bold green]fits[/]" if r.fits else "[bold red]does not fit[/]"
    p = r.parallel
    layout = f"TP{p.tensor_parallel_size}" + (f" PP{p.pipeline_parallel_size}" if p.pipeline_parallel_size > 1 else "") + (
        f" DP{p.data_parallel_size}" if p.data_parallel_size > 1 else "") + (" EP" if p.expert_parallel else "")
    console.print(f"{r.model} on {p.gpus}× {r.accelerator} ({r.engine}, {r.quantization}, KV {r.kv_cache_dtype}, {layout}) "
                  f"at {plural(r.max_model_len, 'token')}: {verdict}")
    if r.layout_note:
        console.print(r.layout_note, highlight=False)
    short = f" ({gib(r.usable_short_bytes_per_gpu)} short of any)" if r.usable_short_bytes_per_gpu else ""
    console.print(f"  per GPU: {gib(r.gpu_memory_bytes)} total, {gib(r.usable_bytes_per_gpu)} usable by the engine{short}",
                  highlight=False)
    if r.build_note:
        console.print(f"  build: {r.build_note}", highlight=False)
    if r.memory_rule:
        console.print(f"  memory rule: {r.memory_rule}", highlight=False)
    parts = [Text(f"weights {gib(r.weights_bytes_per_gpu)}")]
    if r.vision_projector_bytes_per_gpu:
        parts.append(Text(f"vision projector {gib(r.vision_projector_bytes_per_gpu)}"))
    parts += [Text(f"activations {gib(r.activation_bytes_per_gpu)}"), Text(f"runtime {gib(r.overhead_bytes_per_gpu)}")]
    if r.cuda_graph_bytes_per_gpu:
        parts.append(Text(f"CUDA graphs {gib(r.cuda_graph_bytes_per_gpu)}"))
    allocated = r.kv_cache_allocated_bytes_per_gpu  # an engine that allocates the cache of its context, not the room
    parts.append(Text(f"KV cache {gib(allocated)} of {gib(r.kv_cache_bytes_per_gpu)} free" if r.fits and allocated
                      and allocated < r.kv_cache_bytes_per_gpu else f"KV cache {gib(r.kv_cache_bytes_per_gpu)}", style="bold"))
    print_parts(console, parts, indent=4)
    per_token = f"{fmt_kib(r.kv_cache_bytes_per_token)} per token"
    if r.kv_cache_copies > 1 and r.kv_cache_bytes_per_token_one_copy is not None:  # a layer held whole on several TP ranks
        tp = p.tensor_parallel_size
        held = (f"replicated on each of the {tp} TP ranks" if round(r.kv_cache_copies) == tp
                else f"replicated {r.kv_cache_copies:g}× over the {tp} TP ranks")
        per_token = (f"{fmt_kib(r.kv_cache_bytes_per_token_one_copy)} per token, {held} "
                     f"({fmt_kib(r.kv_cache_bytes_per_token)} across the instance)")
    if r.kv_cache_bytes_per_token_beyond_window is not None:
        per_token += (f" within the {r.kv_window_tokens:,}-token sliding window, "
                      f"{fmt_kib(r.kv_cache_bytes_per_token_beyond_window)} beyond it")
    console.print(f"  KV cache: {per_token}, {r.kv_cache_tokens:,} tokens per instance", highlight=False)
    if r.started_slots is not None:  # llama-server: what it serves at once is the slots it is started with
        most = ("; not even one fits" if r.most_slots == 0 else  # the weights and one slot's cache are too much
                f"; {r.most_slots:,} fit: --max-num-seqs {r.most_slots}"  # where they differ from the slots it starts
                if r.most_slots and r.most_slots != r.started_slots else "")
        if r.unified_cache_cells is not None:  # b6925-b7432: --parallel 1 opens slots over one cache, each up to all of it
            console.print(f"  at once: {r.max_concurrency:,.0f} sequence{'s' if r.max_concurrency != 1 else ''} of "
                          f"{plural(r.max_model_len, 'token')}, or up to {r.started_slots:,} shorter ones: {r.started_slots:,} "
                          f"slots sharing one {r.unified_cache_cells:,}-cell cache, which the launch's "
                          f"{r.running_cap_flag} 1 opens{most}", highlight=False)
        else:
            console.print(f"  at once: {r.started_slots:,} sequence{'s' if r.started_slots != 1 else ''} of "
                          f"{plural(r.max_model_len, 'token')}, the --parallel slots it is started with{most}", highlight=False)
    elif r.fits and r.sequences_at_once < r.total_max_concurrency:  # the engine's running cap binds before the KV cache
        console.print(f"  at once: {plural(r.total_running_cap, 'sequence')} of {plural(r.max_model_len, 'token')}, the engine's "
                      f"cap ({r.running_cap_flag}); the KV cache holds {r.total_max_concurrency:,.2f}"
                      + (f" ({r.max_concurrency:,.2f} per instance)" if p.data_parallel_size > 1 else ""),
                      highlight=False)
    else:
        console.print(f"  at once: {r.total_max_concurrency:,.2f} sequences of {plural(r.max_model_len, 'token')}"
                      + (f" ({r.max_concurrency:,.2f} per instance)" if p.data_parallel_size > 1 else ""),
                      highlight=False)
    if r.state_running_cap is not None:  # SGLang's state pool caps the running sequences of a hybrid model
        console.print(f"  state pool: {r.state_slots:,} recurrent-state slots, at most {r.state_running_cap:,} "
                      "sequences running per instance", highlight=False)
    if r.largest_context_tokens is not None:
        at_len = r.started_slots is None and r.largest_context_tokens == r.max_model_len  # a longer one is refused
        console.print(f"  largest context at {r.concurrency:,} concurrent sequences: {r.largest_context_tokens:,} tokens"
                      + (", the max_model_len" if at_len else ""),
                      highlight=False)
    if r.hosts_note:  # one instance wider than a host: deploy writes a command per host
        console.print(f"  hosts: {r.hosts_note}", highlight=False)
    if r.concurrency_note:  # the running cap, its flag, and the sequences that queue above it; the command for their wait
        console.print(f"  {r.concurrency_note}" + (":" if simulate and r.queued_sequences else ""), highlight=False)
        if simulate and r.queued_sequences:  # on a line of its own, whole, to copy
            console.print(f"  {simulate}", highlight=False, soft_wrap=True)
    if r.page_cache_note:  # an integrated GPU whose engine reads the device's free memory: a range, not a figure
        console.print(f"  KV cache after a cold start: {gib(r.kv_cache_range_low_bytes_per_gpu)} to "
                      f"{gib(r.kv_cache_range_high_bytes_per_gpu)} per GPU", style="bold yellow", highlight=False)
        console.print(f"  page cache: {r.page_cache_note}", highlight=False)
    if r.kv_cache_fallback_note:  # a runtime the plan cannot know of sizes the cache otherwise
        console.print(f"  KV cache fallback: {r.kv_cache_fallback_note}", style="yellow", highlight=False)
    if r.placement_note:  # weights placed by the engine where none is stated (an Ollama tag: llama-server --fit)
        console.print(f"  placement: {r.placement_note}", highlight=False)
    if r.host_memory_budget_bytes is not None:
        console.print(f"  {'unified memory (GPU and CPU)' if r.host_memory_origin == 'unified' else 'host RAM'}: {gib(r.host_memory_bytes_used)} used of {gib(r.host_memory_budget_bytes)}"
                      + (f" ({gib(r.host_memory_total_bytes)} less {gib(r.host_memory_reserved_bytes)} kept for the OS and the engine)" if r.host_memory_reserved_bytes else "")
                      + (f"; host KV tier {r.host_kv_cache_tokens:,} tokens per instance" if r.host_kv_cache_tokens else ""),
                      highlight=False)
    elif r.host_memory_origin == "unstated":  # a stated split, host RAM not known
        console.print(f"  host RAM: {gib(r.host_memory_bytes_used)} used, and {gib(r.host_memory_reserved_bytes)} kept for the OS "
                      "and the engine (--host-memory-gb not stated: check the machine has both)", highlight=False)
    if not r.fits:
        if r.shortfall_bytes:
            console.print(f"  shortfall: {gib(r.shortfall_bytes)} per GPU")
        elif r.startup_note:
            console.print(f"  start-up: {r.startup_note}", highlight=False)
        if r.host_shortfall_bytes and r.host_memory_origin == "unified":
            console.print(f"  unified memory short by {gib(r.host_shortfall_bytes)}: offloading frees nothing where GPU and CPU share the memory; leave it out, or take smaller weights or a shorter context", highlight=False)
        elif r.host_shortfall_bytes:
            console.print(f"  host RAM short by {gib(r.host_shortfall_bytes)} (--host-memory-gb): {gib(r.host_memory_bytes_used)} needed, "
                          f"{gib(r.host_memory_budget_bytes)} usable; more host memory, or less offloaded to it", highlight=False)
        if not r.smallest_fit and r.shortfall_bytes:
            console.print("  no TP/PP layout of this GPU that the engine launches holds it"
                          + (" with this host RAM" if r.host_shortfall_bytes else ""))
        if r.suggestions and d is not None:
            console.print("[bold]To fit, run one of:[/]")
            for s in r.suggestions:
                print_kept(console, f"  # {s.summary}")
                console.print(f"  {command_line('fit', d, s.changes)}", highlight=False, soft_wrap=True)
        if r.offload_note:
            console.print(f"  {r.offload_note}", highlight=False)
    _assumptions_or_hint(console, [a for a in r.assumptions if a != r.page_cache_note], explain)


_FIGURE_UNIT = re.compile(r"(\d) (?=(?:GiB|GB|MiB|KiB|tokens|tok/s|bits|GPUs?)\b)")


def print_kept(console: Console, text: str) -> None:
    """``text`` wrapped at the console's width, a figure never parted from its unit (rich would break
    "120,320 tokens" across two lines)."""
    glued = _FIGURE_UNIT.sub("\\1\x00", text)
    for line in textwrap.wrap(glued, width=console.width, break_long_words=False, break_on_hyphens=False) or [""]:
        console.print(line.replace("\x00", " "), highlight=False, soft_wrap=True)


def _assumptions_or_hint(console: Console, assumptions, explain: bool, extra: str = "") -> None:
    if explain:
        print_assumptions(console, assumptions)
    elif assumptions:
        console.print(f"[dim]{len(assumptions)} assumptions{extra} behind this answer: --explain lists them[/]")


def print_assumptions(console: Console, assumptions) -> None:
    console.print("[dim]assumptions:[/]")
    for a in assumptions:
        console.print(f"[dim]  - {a}[/]", highlight=False)


def simulate_command(d, w, clients: int) -> str:
    """``inferplan simulate`` of perf's or fit's deployment ``d`` (its stated flags) and workload ``w`` as a closed
    loop of ``clients``: the lengths and draft settings priced, which simulate would otherwise take at its defaults
    (the lengths left out where ``w`` states none: fit's loop at the defaults)."""
    words = [command_line("simulate", d, {})]
    if {"input_len", "output_len"} & w.model_fields_set:
        words.append(f"--input-len {w.input_len} --output-len {w.output_len}")
    if w.speculative_tokens:
        words.append(f"--speculative-tokens {w.speculative_tokens}")
    if w.acceptance_rate is not None:
        words.append(f"--acceptance-rate {w.acceptance_rate:g}")
    if w.prefix_cache_hit_rate:
        words.append(f"--prefix-cache-hit-rate {w.prefix_cache_hit_rate:g}")
    return " ".join([*words, f"--clients {clients}"])


def print_perf(console: Console, e, explain: bool = False, simulate: str | None = None) -> None:
    """perf's answer; ``simulate``: the command that simulates a burst of its load (None: perf states a setting
    simulate takes no flag for, so none is printed)."""
    from inferplan.performance.local_runs import source_words

    source = source_words(e)
    console.print(f"{e.model} on {e.gpus}× {e.accelerator} ({e.engine}, {e.quantization}, math in {e.compute_dtype}) "
                  f"at concurrency {e.concurrency:,}: "
                  f"[bold]{e.output_tokens_per_s_per_user:,.1f} tok/s per user[/], TTFT {fmt_ms(e.ttft_s)} ({source})")
    if e.queue_note:
        console.print(f"[yellow]note:[/] {e.queue_note}", highlight=False)
    if e.layout_note:
        console.print(e.layout_note, highlight=False)
    if e.build_note:
        console.print(f"build: {e.build_note}", highlight=False)
    if e.placement_note:
        console.print(f"placement: {e.placement_note}", highlight=False)
    if e.measured_label:  # the user's own run (measurements import)
        console.print(f"{e.measured_label}: run {e.measured_record} (inferplan measurements show {e.measured_record})")
    table = Table("metric", "value", show_header=True)
    for label, value in (
        ("TTFT", fmt_ms(e.ttft_s, ",.1f")),
        ("TPOT (inter-token latency)", fmt_ms(e.tpot_s, ",.2f")),
        ("output tokens/s per user", f"{e.output_tokens_per_s_per_user:,.1f}"),
        ("output tokens/s total", f"{e.output_tokens_per_s_total:,.0f}"),
        ("output tokens/s per GPU", f"{e.output_tokens_per_s_per_gpu:,.0f}"),
        ("input tokens/s total", f"{e.input_tokens_per_s_total:,.0f}"),
        ("running per instance", f"{e.running_per_instance:,}"),
        ("max concurrency (KV)", f"{e.max_concurrency:,}"),
    ):
        table.add_row(label, value)
    console.print(table)
    if e.load_note:  # its load, wrapped; the command that prices a burst of it on a line of its own, whole, to copy
        console.print(e.load_note + (":" if simulate else ""), highlight=False)
        if simulate:
            console.print(f"  {simulate}", highlight=False, soft_wrap=True)
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
                      fmt_ms(p.ttft_s), p.bound)
    console.print(table)
    if f.layout_note:
        console.print(f.layout_note, highlight=False)
    if f.build_note:
        console.print(f"build: {f.build_note}", highlight=False)
    _assumptions_or_hint(console, f.assumptions, explain)


# the figures a plan leads with (report/cards.py keys); --explain shows every card
PLAN_HEADLINE = ("users", "loadouts", "capex", "operating_cost", "break_even", "same_model_api", "payback",
                 "cost_per_mtok", "cost_per_mtok_at_capacity", "rent")


def print_plan(console: Console, r, currency: str = "usd", explain: bool = False) -> None:
    from inferplan.report.cards import capacity_users_headline, headline_notes, plan_cards, recommendation_reasons

    for note in headline_notes(r):
        console.print(f"[bold]Note:[/] {escape(note)}", highlight=False)
    console.print(f"[bold]Recommendation: {r.recommendation.route}[/]")
    for reason in recommendation_reasons(r, currency):
        console.print(f"  - {reason}", highlight=False)
    if currency == "eur":
        console.print(f"Amounts in EUR at {r.fx_text}; ex VAT", highlight=False)
    console.print(f"{escape(r.name)} — {r.model} on {r.system} ({r.accelerator}); workload {escape(r.workload.name)}",
                  highlight=False)
    cards = [c for c in plan_cards(r, currency) if c.key != "recommendation" and (explain or c.key in PLAN_HEADLINE)]
    table = Table(title="Users + ROI" + ("" if explain else " (the headline figures; --explain shows all)"), show_header=True)
    for col in ("output", "value", *(("",) if explain else ())):
        table.add_column(col, overflow="fold")
    for card in cards:
        table.add_row(card.label, card.value, *((card.note,) if explain else ()))
    console.print(table)
    if not explain and (why := capacity_users_headline(r)):  # the at-capacity card's note, which --explain shows
        console.print(f"At capacity: {escape(why)}", highlight=False)
    _assumptions_or_hint(console, r.assumptions, explain)


def print_racks(console: Console, cmp) -> None:
    table = Table(title=f"{cmp.interactivity_tokens_per_s} output tok/s per user; owner $ per M output tokens; × baseline {cmp.baseline}")
    for col in ("profile", "tok/s/MW", "$/Mtok", "tok/MW ×", "cheaper ×"):  # ids whole at 80 columns, folded if need be
        table.add_column(col, overflow="fold", no_wrap=col != "profile")
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


HOST_HEADERS = ("# host ", "# on ")  # the comment a launch script starts each host's part with (deploy.nodes, pools)


def print_launch(console: Console, text: str, notes: tuple[str, ...], explain: bool = False,
                 pools: bool = False) -> None:
    """A launch command broken to the terminal's width with shell continuations (it still pastes as one
    command: ``command_lines.script_lines``), then its notes; a
    script over several hosts its first host's part unless ``explain``, to keep the answer on one screen;
    ``pools``: the script of a prefill and a decode pool and their router."""
    console.print("[bold]Launch (the prefill and decode pools and their router):[/]" if pools else
                  "[bold]Launch (one replica cell):[/]")
    lines = text.splitlines()
    headers = [i for i, line in enumerate(lines) if line.startswith(HOST_HEADERS)]
    shown = lines if explain or len(headers) < 2 else lines[:headers[1]]
    for line in script_lines("\n".join(shown), console.width):
        console.print(line, soft_wrap=True, markup=False, highlight=False)
    if len(shown) < len(lines):
        console.print(f"  … {len(lines) - len(shown)} more lines: --explain prints the whole script (--json: deploy)",
                      highlight=False)
    for note in notes:
        console.print(f"  note: {note}", markup=False, highlight=False)
