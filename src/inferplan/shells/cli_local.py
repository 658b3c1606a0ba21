"""``inferplan detect``: this machine's accelerators, CPU and memory, and what runs on it."""

from pathlib import Path
from typing import Optional

import typer

from inferplan.shells.cli_common import LazyModule, JsonOpt, console, emit_json, run, split_list, TokensOpt

render_fits = LazyModule("inferplan.shells.render_fits")
render_local = LazyModule("inferplan.shells.render_local")


def detect_cmd(
    models: Optional[str] = typer.Option(None, "--models", help="Comma-separated model ids (default: the default grid, every model with a config but those the catalogue keeps out of it to hold it to one screen; the output names them)."),
    all_models: bool = typer.Option(False, "--all-models", help="Every catalogue model with a config, the ones the default grid leaves out too."),
    engine: Optional[str] = typer.Option(None, "--engine", help="Engine to plan with (default: llamacpp on Apple silicon, else vllm)."),
    max_model_len: Optional[int] = TokensOpt(None, "--max-model-len", help="Context length of every cell (default 8192)."),
    db: Optional[Path] = typer.Option(None, "--db", help="SQLite file of your runs (inferplan measurements import), used for the speeds."),
    as_json: bool = JsonOpt,
) -> None:
    """What this machine holds (nvidia-smi, rocm-smi/amd-smi, Apple sysctl, /proc/meminfo, lscpu) and what runs on it."""
    from inferplan.catalog.detect import local_machine_catalog
    from inferplan.catalog.loader import load_catalog
    from inferplan.performance.here import what_runs_here
    from inferplan.shells.cli_measurements import user_runs

    catalog, machine = run(local_machine_catalog, run(load_catalog))
    result = run(what_runs_here, machine, catalog, engine=engine, models=split_list(models, "--models"),
                 max_model_len=max_model_len, user_runs=user_runs(db), all_models=all_models)
    if as_json:
        emit_json(result)
        return
    render_local.print_machine(console, result.machine)
    console.print(result.summary, highlight=False)
    if result.matrix is not None:
        console.print(render_fits.fits_table(result.matrix, console.width))
        render_local.print_speeds(console, result.speeds)
        render_local.print_offloads(console, result.offloads, result.machine.ram_bytes)
