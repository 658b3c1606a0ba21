"""Rendering a ``SearchResult`` for the terminal: a list layout (every id whole within 100
columns), the cheaper near misses and the relaxed target that admits each, the families that failed and why, the cost/interactivity front and the API beside."""

from __future__ import annotations

from typing import Callable

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from inferplan.report.search_view import (api_text, cost_text, deployment_text, headline, infeasible_lines,
                                          latency_text, near_miss_text, near_misses_title, pareto_text, summary_text)
from inferplan.search.result import SearchResult
from inferplan.shells.command_lines import script_lines


def print_search(console: Console, r: SearchResult, *, show_deploy: bool = False,
                 flags: dict[str, str] | None = None, next_command: Callable[[dict], str] | None = None) -> None:
    """``flags``: each target's command-line flag, to say a near miss's relaxed target as one;
    ``next_command``: a next step's request changes as the command to run."""
    console.print(f"[bold]{escape(summary_text(r))}[/]")
    for note in r.notes:
        console.print(f"[dim]{escape(note)}[/]")
    if r.results:
        table = Table(show_lines=True, width=min(console.width, 100))
        table.add_column("#", justify="right", width=3)
        table.add_column("deployment", overflow="fold", ratio=3)
        table.add_column("cost", overflow="fold", ratio=2)
        table.add_column("latency", overflow="fold", ratio=2)
        for d in r.results:
            table.add_row(str(d.rank), escape(deployment_text(d)), escape(cost_text(d)), escape(latency_text(d)))
        console.print(table)
        _print_picks(console, r, show_deploy=show_deploy)
    else:
        console.print(f"[bold red]{escape(headline(r))}[/]", highlight=False)
        for step in r.infeasible_summary.next_steps:
            console.print(f"  - {step.text}", highlight=False, markup=False)
            if next_command is not None:
                console.print(f"    {next_command(step.changes)}", soft_wrap=True, highlight=False, markup=False)
    if r.near_misses:
        console.print(f"[bold]{escape(near_misses_title(r))}:[/]")
        for n in r.near_misses:
            console.print(f"  {near_miss_text(n, r.objective, flags)}", highlight=False, markup=False)
    if r.infeasible:
        lines = infeasible_lines(r)
        shown = lines if not r.results else _every_reason(r, lines, GROUPS_SHOWN)
        console.print(f"[bold]{len(r.infeasible)} families with no deployment that works, by reason[/]"
                      + (f" (the first groups of each reason, {len(shown)} of {len(lines)}; --json lists all)"
                         if len(shown) < len(lines) else "") + ":")
        for line in shown:
            console.print(f"  {line}", highlight=False, markup=False)
    if r.pareto:
        console.print("[bold]cost against interactivity[/] (no deployment is both cheaper and faster per user):")
        for p in r.pareto[:8]:
            console.print(f"  {pareto_text(p)}", highlight=False, markup=False)
    for a in r.api:
        console.print(api_text(a), highlight=False, markup=False)


GROUPS_SHOWN = 12  # failed-family groups printed beside results


def _every_reason(r: SearchResult, lines: tuple[str, ...], cap: int) -> tuple[str, ...]:
    """At most ``cap`` of the groups' ``lines``, in the library's order, each reason's first ones alike so every
    reason is shown (a reason's share: the cap over the reasons, at least one)."""
    reasons = [g.reason for g in r.infeasible_summary.groups]
    share = max(1, cap // len(set(reasons)))
    seen: dict[str, int] = {}
    kept = []
    for reason, line in zip(reasons, lines):
        seen[reason] = seen.get(reason, 0) + 1
        if seen[reason] <= share:
            kept.append(line)
    return tuple(kept[:cap])


def _print_picks(console: Console, r: SearchResult, *, show_deploy: bool) -> None:
    """Each pick's notes under the table, numbered by rank, and with ``show_deploy`` its launch command
    broken to the terminal's width with shell continuations, never folded inside a cell, so it pastes as one
    command (``command_lines.script_lines``)."""
    for d in r.results:
        if d.notes:
            console.print(f"[bold]#{d.rank} notes[/]")
            for note in d.notes:
                console.print(f"  {escape(note)}", highlight=False)
        if show_deploy:
            console.print(f"[bold]#{d.rank} launch[/]")
            for line in script_lines(d.deploy, console.width):
                console.print(line, soft_wrap=True, markup=False, highlight=False)
