"""Rendering a ``SearchResult`` for the terminal: a list layout (every id whole within 100
columns), the families that failed and why, the cost/interactivity front and the API beside."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from inferplan.report.search_view import (api_text, cost_text, deployment_text, infeasible_text, latency_text, pareto_text,
                                          summary_text)
from inferplan.search.result import SearchResult


def print_search(console: Console, r: SearchResult, *, show_deploy: bool = False) -> None:
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
            what = escape(deployment_text(d)) + (f"\n[dim]{escape(d.deploy)}[/]" if show_deploy else "")
            table.add_row(str(d.rank), what, escape(cost_text(d)), escape(latency_text(d)))
        console.print(table)
    else:
        console.print("[bold red]No deployment meets every target.[/] Why, family by family:")
    if r.infeasible:
        shown = r.infeasible if not r.results else r.infeasible[:12]
        console.print(f"[bold]{len(r.infeasible)} families with no deployment that works[/]"
                      + (" (first 12; --json lists all)" if len(shown) < len(r.infeasible) else "") + ":")
        for x in shown:
            console.print(f"  {infeasible_text(x)}", highlight=False, markup=False)
    if r.pareto:
        console.print("[bold]cost against interactivity[/] (no deployment is both cheaper and faster per user):")
        for p in r.pareto[:8]:
            console.print(f"  {pareto_text(p)}", highlight=False, markup=False)
    for a in r.api:
        console.print(api_text(a), highlight=False, markup=False)
