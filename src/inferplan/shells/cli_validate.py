"""``inferplan validate``: predictions against the measured points shipped in the catalogue."""

from pathlib import Path
from typing import Optional

import typer

from inferplan.shells.cli_common import LazyModule, JsonOpt, console, emit_json, err_console, fail, run

render_validate = LazyModule("inferplan.shells.render_validate")
render_local = LazyModule("inferplan.shells.render_local")


def validate_cmd(
    memory: bool = typer.Option(False, "--memory", help="Only the start-up memory points."),
    speed: bool = typer.Option(False, "--speed", help="Only the speed points."),
    latency: bool = typer.Option(False, "--latency", help="Only the latency-under-load points (p50/p99 TTFT and TPOT: approximation and simulation)."),
    kind: str = typer.Option(None, "--kind", help="Table rows of one speed kind only: decode (single-stream) | decode-concurrent | prefill | throughput | profile | offload-decode | offload-prefill (weights in host RAM) (medians stay over all points; --json returns every point)."),
    worst: int = typer.Option(None, "--worst", min=1, help="Only the N speed table rows with the largest error (medians stay over all points; --json returns every point)."),
    family: str = typer.Option(None, "--family", help="Speed rows and track record of one calibration family only (sglang, vllm, trtllm, llamacpp-metal, mlx ...)."),
    cross_validate: bool = typer.Option(False, "--cross-validate", help="Also the leave-source-out error: refit with each third of the sources left out and score those (about 15-20 minutes)."),
    mine: bool = typer.Option(False, "--mine", help="Your own imported runs instead (inferplan measurements import): predicted vs measured, each error; measured p50/p99 TTFT and TPOT beside the approximation and the simulation."),
    db: Optional[Path] = typer.Option(None, "--db", help="SQLite file of your runs (with --mine; default: the user data directory)."),
    as_json: bool = JsonOpt,
) -> None:
    """Compare predictions with the measured points shipped in the catalogue (--mine: with your own runs)."""
    if mine:
        _mine(db, as_json)
        return
    from inferplan.validation.memory import validate_memory
    from inferplan.validation.speed import KINDS, validate_speed

    if kind is not None and kind not in KINDS:
        fail(f"--kind: {kind!r} is not a speed kind (allowed: {' | '.join(KINDS)})", field="--kind", allowed=" | ".join(KINDS))
    both = not (memory or speed or latency)
    if memory and not speed and (kind or worst or family or cross_validate):
        fail("--kind, --worst, --family and --cross-validate: they are about speed points; add --speed (or leave out --memory)",
             field="--memory")
    results = {}
    if memory or both:
        results["memory"] = _checked("checking the start-up memory points", validate_memory)
    if speed or both:
        results["speed"] = _checked("checking the speed points", validate_speed)
        families = sorted({c.family for c in results["speed"].checks})
        if family is not None and family not in families:
            fail(f"--family: {family!r} has no measured speed points (allowed: {' | '.join(families)})", field="--family",
                 allowed=" | ".join(families))
    if latency or both:
        from inferplan.validation.latency import validate_latency

        results["latency"] = _checked("checking the latency points (each simulated)", validate_latency)
    if cross_validate:
        results["cross_validation"] = _cross_validation()
    if as_json:
        emit_json({k: v.model_dump(mode="json") for k, v in results.items()})
        return
    if "memory" in results:
        render_validate.print_memory_validation(console, results["memory"])
    if "speed" in results:
        render_validate.print_speed_validation(console, results["speed"], kind=kind, worst=worst, family=family)
    if "latency" in results:
        from inferplan.shells.render_latency import print_latency_validation

        print_latency_validation(console, results["latency"])
    if "cross_validation" in results:
        render_validate.print_cross_validation(console, results["cross_validation"])


def _checked(label: str, check):
    """``check``'s result, a spinner on stderr naming what it checks while it runs (on a terminal; the whole
    validation takes half a minute). stdout is not redirected through the spinner: a ``--json`` error stays
    on stdout."""
    from rich.live import Live
    from rich.spinner import Spinner

    with Live(Spinner("dots", f"{label} …"), console=err_console, transient=True, refresh_per_second=12.5,
              redirect_stdout=False, redirect_stderr=False):
        return run(check)


def _mine(db: Optional[Path], as_json: bool) -> None:
    from inferplan.measurements.compare import compare_runs
    from inferplan.shells.cli_measurements import store

    results = run(compare_runs, run(store(db).list_measurements))
    if as_json:
        emit_json({"mine": [r.model_dump(mode="json") for r in results]})
        return
    if not results:
        console.print("no stored measurements: `inferplan measurements import FILE …` adds some")
    for r in results:
        render_local.print_comparison(console, r)


def _cross_validation():
    from rich.progress import Progress

    from inferplan.validation.crossval import cross_validate

    # stdout stays stdout while the bar runs: a --json error is written there
    with Progress(console=err_console, transient=True, redirect_stdout=False, redirect_stderr=False) as progress:
        task = progress.add_task("refitting without each fold's sources", total=None)
        return run(cross_validate, progress=lambda done, total, label: progress.update(
            task, completed=done, total=total, description=label))
