"""``inferplan catalog`` and ``inferplan model``: browse the sourced catalogue, import a config.json."""

from typing import Optional

import typer

from inferplan.shells.cli_common import LazyModule, ExplainOpt, JsonOpt, console, emit_json, run, run_naming

render_catalog = LazyModule("inferplan.shells.render_catalog")

catalog_app = typer.Typer(no_args_is_help=True, help="Browse the sourced catalogue.")
model_app = typer.Typer(no_args_is_help=True, help="Import models from Hugging Face config.json files.")

# spelled out so `--help` does not import the catalogue; a test keeps it equal to catalog.query.KINDS
CATALOG_KINDS_HELP = ("accelerators | systems | models | quantizations | kv-cache-dtypes | engines | calibration | "
                      "memory-points | speed-points | serving-profiles | rental-prices | api-prices | workload-presets | "
                      "cost-defaults | rack-profiles | sites | engine-builds | speed-accuracy | engine-flags | gpu-resources | latency-points | benchmark-datasets | bench-tunings | memory-rules | kt-cpu-paths | moe-kernels | moe-kernel-rules | weight-rules | admission-rules | mtp-rules | eagle3-drafts | engine-support | gpu-refusals | integrated-gpu-refusals | ollama-runners | metal-working-sets | sources")


@catalog_app.command("list")
def catalog_list(
    kind: str = typer.Argument("models", help=CATALOG_KINDS_HELP),
    as_json: bool = JsonOpt,
) -> None:
    """List catalogue entries of one kind."""
    from inferplan.catalog.query import kind_name, list_entries

    entries = run(list_entries, kind)
    kind = kind_name(kind)
    if as_json:
        emit_json([e.model_dump(mode="json") for e in entries])
    else:
        console.print(render_catalog.catalog_table(kind, entries, console.width))
        note = render_catalog.sizes_note(entries) if kind == "accelerators" else None
        if note:
            console.print(note, highlight=False)


def models_cmd(as_json: bool = JsonOpt) -> None:
    """List the catalogue's models (as `catalog list models`): by family, then size."""
    catalog_list("models", as_json)


def gpus_cmd(as_json: bool = JsonOpt) -> None:
    """List the catalogue's GPUs and other accelerators (as `catalog list accelerators`): by vendor, then class
    (desktop, workstation, unified memory, desktop superchip, server PCIe, baseboard module, superchip,
    cloud-only), then memory."""
    catalog_list("accelerators", as_json)


@catalog_app.command("show")
def catalog_show(
    name: str = typer.Argument(..., help="An id or alias."),
    kind: Optional[str] = typer.Option(None, "--kind", help="Restrict to one kind (e.g. accelerators)."),
    as_json: bool = JsonOpt,
) -> None:
    """Show one catalogue entry with every number's source."""
    from inferplan.catalog.query import show_entry

    kind_found, entry = run_naming({"kind": "--kind"}, show_entry, name, kind)
    if as_json:
        emit_json(entry)
    else:
        render_catalog.print_entry(console, kind_found, entry)


@catalog_app.command("stale")
def catalog_stale(
    days: int = typer.Option(180, "--days", help="List numbers whose source was checked more than this many days ago."),
    as_json: bool = JsonOpt,
) -> None:
    """Catalogue numbers due for a re-check: oldest source date first."""
    from rich.table import Table

    from inferplan.catalog.freshness import stale_entries
    from inferplan.errors import InferplanError

    def entries():
        try:
            return stale_entries(days)
        except InferplanError as exc:
            exc.field = "--days" if exc.field == "days" else exc.field
            raise

    rows = run(entries)
    if as_json:
        emit_json([row.model_dump(mode="json") for row in rows])
        return
    if not rows:
        console.print(f"Every catalogue number was checked within the last {days} days.")
        return
    table = Table("kind", "id", "numbers", "source", "checked", "age (days)", title=f"Checked more than {days} days ago")
    for row in rows:
        table.add_row(row.kind, row.id, ", ".join(row.numbers), row.source, str(row.checked), str(row.age_days))
    console.print(table)


@model_app.command("import")
def model_import(
    path: str = typer.Argument(..., help="config.json, a model folder, or a repo id in the local Hugging Face cache."),
    as_json: bool = JsonOpt,
    explain: bool = ExplainOpt,
) -> None:
    """Read a model's architecture and size from local files (no network)."""
    from inferplan.errors import InvalidScenarioError
    from inferplan.memory.resolve import describe_import

    def described():
        if not path.strip():  # "" would read as the current folder
            raise InvalidScenarioError("name a config.json, a model folder or a cached repo id, not a blank", field="PATH")
        return describe_import(path)

    summary = run_naming({"model": "PATH"}, described)  # the import names the model; here it is the argument PATH
    if as_json:
        emit_json(summary)
    else:
        render_catalog.print_import(console, summary, explain)
