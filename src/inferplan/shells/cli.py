"""The ``inferplan`` command: parse flags into a domain object, call one library function, render.

No arithmetic lives here beyond unit conversion for display. Every ``InferplanError`` and every
validation error becomes one line naming the flag, and exit code 2.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Optional

import typer
from pydantic import ValidationError
from rich.console import Console

from inferplan.errors import InferplanError
from inferplan.shells import render

app = typer.Typer(no_args_is_help=True, add_completion=False, help="Plan self-hosted open-weight LLM deployments.")
catalog_app = typer.Typer(no_args_is_help=True, help="Browse the sourced catalogue.")
model_app = typer.Typer(no_args_is_help=True, help="Import models from Hugging Face config.json files.")
app.add_typer(catalog_app, name="catalog")
app.add_typer(model_app, name="model")

console = Console()
err_console = Console(stderr=True, soft_wrap=True)

# pydantic field -> the flag a user typed
FLAGS = {
    "tensor_parallel_size": "--tensor-parallel-size",
    "pipeline_parallel_size": "--pipeline-parallel-size",
    "data_parallel_size": "--data-parallel-size",
    "gpu_memory_utilization": "--gpu-memory-utilization",
    "max_model_len": "--max-model-len",
    "max_num_batched_tokens": "--max-num-batched-tokens",
    "max_num_seqs": "--max-num-seqs",
    "kv_cache_dtype": "--kv-cache-dtype",
    "kv_bytes_per_token": "--kv-bytes-per-token",
    "input_len": "--input-len",
    "output_len": "--output-len",
    "speculative_tokens": "--speculative-tokens",
    "acceptance_rate": "--acceptance-rate",
    "prefix_cache_hit_rate": "--prefix-cache-hit-rate",
}


# options shared by several commands
ModelOpt = typer.Option(..., "--model", help="Catalogue id/alias, config.json path, model folder or cached repo id.")
GpuOpt = typer.Option(None, "--gpu", help="Accelerator id or alias (H100, RTX 4090 ...).")
SystemOpt = typer.Option(None, "--system", help="System id (hgx-b200, gb300-nvl72 ...).")
EngineOpt = typer.Option("vllm", "--engine", help="vllm | sglang | trtllm | llamacpp | mlx")
GpusOpt = typer.Option(None, "--gpus", help="GPUs in the deployment.")
TpOpt = typer.Option(1, "--tensor-parallel-size", "-tp")
PpOpt = typer.Option(1, "--pipeline-parallel-size", "-pp")
DpOpt = typer.Option(None, "--data-parallel-size", "-dp")
EpOpt = typer.Option(False, "--enable-expert-parallel")
UtilOpt = typer.Option(None, "--gpu-memory-utilization")
MaxLenOpt = typer.Option(None, "--max-model-len")
BatchedOpt = typer.Option(None, "--max-num-batched-tokens")
SeqsOpt = typer.Option(None, "--max-num-seqs")
KvOpt = typer.Option("auto", "--kv-cache-dtype", help="auto | bf16 | fp8 | int8 | int4 | int2-kivi | q8_0 | q4_0")
QuantOpt = typer.Option(None, "--quantization", "-q", help="bf16 | fp8 | int8 | awq | gptq | nvfp4 | mxfp4 | q4_k_m | q8_0 ...")
JsonOpt = typer.Option(False, "--json", help="Print JSON.")


def fail(message: str) -> None:
    err_console.print(f"[bold red]error:[/] {message}", highlight=False)
    raise typer.Exit(code=2)


def run(fn, *args, **kwargs):
    """Call a library function; turn expected errors into a one-line message and exit code 2."""
    try:
        return fn(*args, **kwargs)
    except InferplanError as exc:
        fail(exc.describe())
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = ".".join(str(p) for p in first["loc"]) or "input"
        flag = FLAGS.get(loc, f"--{loc.replace('_', '-')}" if loc and "." not in loc else loc)
        fail(f"{flag}: {first['msg']}")


def emit_json(obj) -> None:
    sys.stdout.write(obj.model_dump_json(indent=2) if hasattr(obj, "model_dump_json") else json.dumps(obj, indent=2, default=str))
    sys.stdout.write("\n")


@catalog_app.command("list")
def catalog_list(
    kind: str = typer.Argument("models", help="accelerators | systems | models | quantizations | kv-cache-dtypes | engines | sources | calibration"),
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

    summary = run(describe_import, path)
    if as_json:
        emit_json(summary)
    else:
        render.print_import(console, summary)


def _deployment(**kwargs):
    from inferplan.memory.deployment import Deployment

    return run(Deployment, **{k: v for k, v in kwargs.items() if v is not None})




@app.command("fit")
def fit_cmd(
    model: str = ModelOpt,
    gpu: Optional[str] = GpuOpt,
    system: Optional[str] = SystemOpt,
    gpus: Optional[int] = GpusOpt,
    tensor_parallel_size: int = TpOpt,
    pipeline_parallel_size: int = PpOpt,
    data_parallel_size: Optional[int] = DpOpt,
    enable_expert_parallel: bool = EpOpt,
    gpu_memory_utilization: Optional[float] = UtilOpt,
    max_model_len: Optional[int] = MaxLenOpt,
    max_num_batched_tokens: Optional[int] = BatchedOpt,
    max_num_seqs: Optional[int] = SeqsOpt,
    kv_cache_dtype: str = KvOpt,
    quantization: Optional[str] = QuantOpt,
    engine: str = EngineOpt,
    concurrency: Optional[int] = typer.Option(None, "--concurrency", help="Report the largest context at this many concurrent sequences."),
    kv_bytes_per_token: Optional[float] = typer.Option(None, "--kv-bytes-per-token", help="State the KV size per token for a model whose architecture is unpublished."),
    as_json: bool = JsonOpt,
) -> None:
    """Does it fit, and how much is left for the KV cache?"""
    from inferplan.memory.fit import fit

    d = _deployment(
        model=model, gpu=gpu, system=system, gpus=gpus, tensor_parallel_size=tensor_parallel_size,
        pipeline_parallel_size=pipeline_parallel_size, data_parallel_size=data_parallel_size,
        enable_expert_parallel=enable_expert_parallel, gpu_memory_utilization=gpu_memory_utilization,
        max_model_len=max_model_len, max_num_batched_tokens=max_num_batched_tokens, max_num_seqs=max_num_seqs,
        kv_cache_dtype=kv_cache_dtype, quantization=quantization, engine=engine, concurrency=concurrency,
        kv_bytes_per_token=kv_bytes_per_token,
    )
    result = run(fit, d)
    if as_json:
        emit_json(result)
    else:
        render.print_fit(console, result)


def _split(value: Optional[str], flag: str = "") -> Optional[list[str]]:
    if value is None:
        return None
    items = [v.strip() for v in value.split(",") if v.strip()]
    if not items:
        fail(f"{flag or 'list'}: {value!r} names nothing; give comma-separated ids or leave it out for the default")
    return items


@app.command("fits")
def fits_cmd(
    models: Optional[str] = typer.Option(None, "--models", help="Comma-separated model ids (default: every model with a config)."),
    gpus: Optional[str] = typer.Option(None, "--gpus", help="Comma-separated accelerators (default: 80/96/141/288 GB GPUs)."),
    systems: Optional[str] = typer.Option(None, "--systems", help="Comma-separated systems."),
    quantizations: Optional[str] = typer.Option(None, "--quantizations", help="Comma-separated; 'native' = each model's checkpoint."),
    engine: str = EngineOpt,
    max_model_len: int = typer.Option(8192, "--max-model-len"),
    kv_cache_dtype: str = KvOpt,
    as_json: bool = JsonOpt,
) -> None:
    """The what-fits matrix: models × hardware × precisions, with the KV cache left."""
    from inferplan.memory.matrix import fits_matrix

    matrix = run(
        fits_matrix, models=_split(models, "--models"), gpus=_split(gpus, "--gpus"), systems=_split(systems, "--systems"),
        quantizations=_split(quantizations, "--quantizations"), engine=engine, max_model_len=max_model_len,
        kv_cache_dtype=kv_cache_dtype,
    )
    if as_json:
        emit_json(matrix)
    else:
        console.print(render.fits_table(matrix))




@app.command("validate")
def validate_cmd(
    memory: bool = typer.Option(False, "--memory", help="Only the start-up memory points."),
    speed: bool = typer.Option(False, "--speed", help="Only the speed points."),
    kind: str = typer.Option(None, "--kind", help="Table rows of one speed kind only: decode (single-stream) | decode-concurrent | prefill | throughput | profile (medians stay over all points; --json returns every point)."),
    worst: int = typer.Option(None, "--worst", min=1, help="Only the N speed table rows with the largest error (medians stay over all points; --json returns every point)."),
    family: str = typer.Option(None, "--family", help="Speed rows and track record of one calibration family only (sglang, vllm, trtllm, llamacpp-metal, mlx ...)."),
    as_json: bool = JsonOpt,
) -> None:
    """Compare predictions with the measured points shipped in the catalogue."""
    from inferplan.validation.memory import validate_memory
    from inferplan.validation.speed import KINDS, validate_speed

    if kind is not None and kind not in KINDS:
        fail(f"--kind: {kind!r} is not a speed kind (allowed: {' | '.join(KINDS)})")
    both = not (memory or speed)
    if memory and not speed and (kind or worst or family):
        fail("--kind, --worst and --family: they select speed rows; add --speed (or leave out --memory)")
    results = {}
    if memory or both:
        results["memory"] = run(validate_memory)
    if speed or both:
        results["speed"] = run(validate_speed)
        families = sorted({c.family for c in results["speed"].checks})
        if family is not None and family not in families:
            fail(f"--family: {family!r} has no measured speed points (allowed: {' | '.join(families)})")
    if as_json:
        emit_json({k: v.model_dump(mode="json") for k, v in results.items()})
        return
    if "memory" in results:
        render.print_memory_validation(console, results["memory"])
    if "speed" in results:
        render.print_speed_validation(console, results["speed"], kind=kind, worst=worst, family=family)


def _workload(**kwargs):
    from inferplan.performance.workload import Workload

    concurrency = kwargs.pop("concurrency")
    if concurrency is not None and concurrency != "max":
        try:
            concurrency = int(concurrency)
        except ValueError:
            fail("--concurrency: must be a whole number or 'max'")
    return run(Workload, concurrency=1 if concurrency is None else concurrency, **{k: v for k, v in kwargs.items() if v is not None})


@app.command("perf")
def perf_cmd(
    model: str = ModelOpt,
    gpu: Optional[str] = GpuOpt,
    system: Optional[str] = SystemOpt,
    gpus: Optional[int] = GpusOpt,
    tensor_parallel_size: int = TpOpt,
    pipeline_parallel_size: int = PpOpt,
    data_parallel_size: Optional[int] = DpOpt,
    enable_expert_parallel: bool = EpOpt,
    gpu_memory_utilization: Optional[float] = UtilOpt,
    max_model_len: Optional[int] = MaxLenOpt,
    max_num_batched_tokens: Optional[int] = BatchedOpt,
    max_num_seqs: Optional[int] = SeqsOpt,
    kv_cache_dtype: str = KvOpt,
    quantization: Optional[str] = QuantOpt,
    engine: str = EngineOpt,
    backend: Optional[str] = typer.Option(None, "--backend", help="llama.cpp back end: cuda | metal | vulkan | rocm"),
    input_len: int = typer.Option(1024, "--input-len", help="Prompt tokens per request."),
    output_len: int = typer.Option(256, "--output-len", help="Generated tokens per request."),
    concurrency: str = typer.Option("1", "--concurrency", help="Requests in flight, or 'max'."),
    speculative_tokens: int = typer.Option(0, "--speculative-tokens"),
    acceptance_rate: Optional[float] = typer.Option(None, "--acceptance-rate", help="Per draft token, with --speculative-tokens (default 0.7)."),
    prefix_cache_hit_rate: float = typer.Option(0.0, "--prefix-cache-hit-rate"),
    as_json: bool = JsonOpt,
) -> None:
    """How fast: TTFT, TPOT, tokens/s per user and in aggregate."""
    from inferplan.performance.serving import estimate

    w = _workload(input_len=input_len, output_len=output_len, concurrency=concurrency,
                  speculative_tokens=speculative_tokens, acceptance_rate=acceptance_rate,
                  prefix_cache_hit_rate=prefix_cache_hit_rate, backend=backend)
    d = _deployment(
        model=model, gpu=gpu, system=system, gpus=gpus, tensor_parallel_size=tensor_parallel_size,
        pipeline_parallel_size=pipeline_parallel_size, data_parallel_size=data_parallel_size,
        enable_expert_parallel=enable_expert_parallel, gpu_memory_utilization=gpu_memory_utilization,
        max_model_len=input_len + output_len if max_model_len is None else max_model_len, max_num_batched_tokens=max_num_batched_tokens,
        max_num_seqs=max_num_seqs, kv_cache_dtype=kv_cache_dtype, quantization=quantization, engine=engine,
    )
    result = run(estimate, d, w)
    if as_json:
        emit_json(result)
    else:
        render.print_perf(console, result)


@app.command("frontier")
def frontier_cmd(
    model: str = ModelOpt,
    gpu: Optional[str] = GpuOpt,
    system: Optional[str] = SystemOpt,
    gpus: Optional[int] = GpusOpt,
    tensor_parallel_size: int = TpOpt,
    pipeline_parallel_size: int = PpOpt,
    data_parallel_size: Optional[int] = DpOpt,
    enable_expert_parallel: bool = EpOpt,
    kv_cache_dtype: str = KvOpt,
    quantization: Optional[str] = QuantOpt,
    engine: str = EngineOpt,
    input_len: int = typer.Option(1024, "--input-len"),
    output_len: int = typer.Option(1024, "--output-len"),
    speculative_tokens: int = typer.Option(0, "--speculative-tokens"),
    acceptance_rate: Optional[float] = typer.Option(None, "--acceptance-rate", help="Per draft token, with --speculative-tokens (default 0.7)."),
    points: int = typer.Option(24, "--points", min=2, max=256, help="Concurrency levels to sweep."),
    as_json: bool = JsonOpt,
) -> None:
    """The throughput–interactivity frontier: tokens/s per GPU vs tokens/s per user."""
    from inferplan.performance.serving import frontier

    w = _workload(input_len=input_len, output_len=output_len, concurrency="1",
                  speculative_tokens=speculative_tokens, acceptance_rate=acceptance_rate)
    d = _deployment(
        model=model, gpu=gpu, system=system, gpus=gpus, tensor_parallel_size=tensor_parallel_size,
        pipeline_parallel_size=pipeline_parallel_size, data_parallel_size=data_parallel_size,
        enable_expert_parallel=enable_expert_parallel, max_model_len=input_len + output_len,
        kv_cache_dtype=kv_cache_dtype, quantization=quantization, engine=engine,
    )
    result = run(frontier, d, w, points=points)
    if as_json:
        emit_json(result)
    else:
        render.print_frontier(console, result)


@app.command("plan")
def plan_cmd(
    scenario: Path = typer.Argument(..., help="A scenario YAML file (see examples/)."),
    currency: str = typer.Option("usd", "--currency", help="usd | eur (rendering only; JSON carries USD and the FX rate)"),
    draws: int = typer.Option(10_000, "--draws", min=0, max=1_000_000, help="Monte Carlo draws for P10/P50/P90 (0: off)."),
    seed: int = typer.Option(0, "--seed", min=0, max=2**32 - 1, help="Monte Carlo seed."),
    report: Optional[Path] = typer.Option(None, "--report", help="Write a self-contained report: out.html or out.md."),
    as_json: bool = JsonOpt,
) -> None:
    """The Users + ROI simulator: users, loadouts, costs, payback, quote and API comparison."""
    from inferplan.economics.plan import plan
    from inferplan.economics.uncertainty import simulate
    from inferplan.scenario import load_scenario

    if currency not in ("usd", "eur"):
        fail(f"--currency: {currency!r} is not allowed (allowed: usd, eur)")
    s = run(load_scenario, scenario)
    result = run(plan, s)
    uncertainty = run(simulate, result, s, draws=draws, seed=seed) if draws else None
    if report is not None:
        from inferplan.report.files import write_report

        run(write_report, report, result, uncertainty)
        err_console.print(f"report written to {report}")
    if as_json:
        payload = result.model_dump(mode="json")
        payload["uncertainty"] = uncertainty.model_dump(mode="json") if uncertainty else None
        emit_json(payload)
    else:
        render.print_plan(console, result, currency)
        if uncertainty:
            render.print_uncertainty(console, uncertainty)
        elif draws:
            console.print("Monte Carlo: no user is carried at the service target, so there is nothing to draw")


@app.command("racks")
def racks_cmd(
    interactivity: int = typer.Option(100, "--interactivity", help="Output tokens/s per user (50, 100, … 350)."),
    baseline: str = typer.Option("gb200-nvl72-jul-2026-dsr1", "--baseline", help="Rack profile to compare against."),
    as_json: bool = JsonOpt,
) -> None:
    """Published rack curves: output tokens/s per MW and owner cost per million tokens, and their ratios."""
    from inferplan.economics.racks import compare_racks

    result = run(compare_racks, interactivity, baseline)
    if as_json:
        emit_json(result)
    else:
        render.print_racks(console, result)


@app.command("serve")
def serve_cmd(
    host: str = typer.Option("127.0.0.1", "--host", help="Interface to listen on."),
    port: int = typer.Option(8000, "--port", min=1, max=65535, help="TCP port."),
    db: Optional[Path] = typer.Option(None, "--db", help="SQLite file for saved scenarios and quotes (default: the user data directory)."),
) -> None:
    """Serve the web calculator and the HTTP API."""
    import uvicorn

    from inferplan.catalog.loader import load_catalog
    from inferplan.shells.api import create_app

    application = run(create_app, db)
    run(load_catalog)  # read the catalogue before the first request, not during it
    err_console.print(f"inferplan calculator: open http://{host}:{port}/  (API docs: http://{host}:{port}/docs)")
    uvicorn.run(application, host=host, port=port, log_level="warning")


def main() -> None:  # pragma: no cover - console entry
    app()


if __name__ == "__main__":  # pragma: no cover
    app()
