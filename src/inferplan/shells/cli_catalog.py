"""``inferplan catalog`` and ``inferplan model``: browse the sourced catalogue, import a config.json."""

from __future__ import annotations

from typing import Optional

import typer

from inferplan.shells import render
from inferplan.shells.cli_common import JsonOpt, console, emit_json, run

catalog_app = typer.Typer(no_args_is_help=True, help="Browse the sourced catalogue.")
model_app = typer.Typer(no_args_is_help=True, help="Import models from Hugging Face config.json files.")

# spelled out so `--help` does not import the catalogue; a test keeps it equal to catalog.query.KINDS
CATALOG_KINDS_HELP = ("accelerators | systems | models | quantizations | kv-cache-dtypes | engines | calibration | "
                      "memory-points | speed-points | serving-profiles | rental-prices | api-prices | workload-presets | "
                      "cost-defaults | rack-profiles | engine-builds | speed-accuracy | latency-points | sources")


@catalog_app.command("list")
def catalog_list(
    kind: str = typer.Argument("models", help=CATALOG_KINDS_HELP),
    as_json: bool = JsonOpt,
) -> None:
    """List catalogue entries of one kind."""
    from inferplan.catalog.query import list_entries

    entries = run(list_entries, kind)
    if as_json:
        emit_json([e.model_dump(mode="json") for e in entries])
    else:
        console.print(render.catalog_table(kind, entries))


@catalog_app.command("show")
def catalog_show(
    name: str = typer.Argument(..., help="An id or alias."),
    kind: Optional[str] = typer.Option(None, "--kind", help="Restrict to one kind (e.g. accelerators)."),
    as_json: bool = JsonOpt,
) -> None:
    """Show one catalogue entry with every number's source."""
    from inferplan.catalog.query import show_entry

    kind_found, entry = run(show_entry, name, kind)
    if as_json:
        emit_json(entry)
    else:
        render.print_entry(console, kind_found, entry)


@model_app.command("import")
def model_import(
    path: str = typer.Argument(..., help="config.json, a model folder, or a repo id in the local Hugging Face cache."),
    as_json: bool = JsonOpt,
) -> None:
    """Read a model's architecture and size from local files (no network)."""
    from inferplan.catalog.query import describe_import
    from inferplan.errors import InferplanError, InvalidScenarioError

    def described():
        if not path.strip():  # "" would read as the current folder
            raise InvalidScenarioError("name a config.json, a model folder or a cached repo id, not a blank", field="PATH")
        try:
            return describe_import(path)
        except InferplanError as exc:  # the import names --model, the flag of fit and perf; here it is PATH
            exc.field = "PATH" if exc.field == "--model" else exc.field
            raise

    summary = run(described)
    if as_json:
        emit_json(summary)
    else:
        render.print_import(console, summary)
