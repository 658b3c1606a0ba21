"""Rendering for this machine and the user's own measurements (text only: the figures come from the library)."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from inferplan.shells.render import gib


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
