"""``inferplan measurements …`` and ``inferplan acceptance``: the user's own benchmark runs in, the
test to run out. Each command parses flags, calls one library function and renders its result."""

from pathlib import Path
from typing import Optional

import typer

from inferplan.shells.cli_common import (DpOpt, EpOpt, LazyModule, JsonOpt, console, emit_json,
                                         err_console, fail, run, TokensOpt)
from inferplan.performance.run_record import RUN_DRAFTS, RUN_OFFLOAD, RUN_SETTINGS
from inferplan.units import plural
from inferplan.shells.cli_deploy import DraftMethodOpt, DraftModelOpt, DraftTokensOpt

RunDraftOpt = typer.Option(None, "--draft-model", help=(
    "The draft checkpoint the run drafted with (draft_model, eagle3): a repo path, or a catalogued EAGLE-3 draft's id "
    "(eagle3 default: the model's one catalogued draft; a model with none needs it)."))
RunAcceptanceOpt = typer.Option(None, "--acceptance-rate", help=(
    "Per draft token, with draft tokens (--speculative-tokens, or a vllm result's); wins over the acceptance the server measured (default: the rate the "
    "acceptance length a vllm or sglang result saves gives, else a catalogued EAGLE-3 draft's published rate, else "
    "0.7, assumed; none with ngram drafts: state it)."))
RunDraftTokensOpt = typer.Option(0, "--speculative-tokens", min=0, help=(
    "Draft tokens per step (0: none, or as a vllm result's spec_decode_draft_tokens / spec_decode_num_drafts give)."))
from inferplan.shells.cli_flags import FORMAT, LAYOUT, LIMITS, deployment_flags

render_local = LazyModule("inferplan.shells.render_local")

measurements_app = typer.Typer(no_args_is_help=True, help="Your own benchmark runs: import, list, show, delete, export.")

DbOpt = typer.Option(None, "--db", help="SQLite file (default: the user data directory, as `serve` uses).")
# a RunProvenance field -> the flag a user typed
FLAGS = {"model": "--model", "gpu": "--gpu", "gpus": "--gpus", "tensor_parallel_size": "--tensor-parallel-size",
         "pipeline_parallel_size": "--pipeline-parallel-size", "data_parallel_size": "--data-parallel-size",
         "enable_expert_parallel": "--enable-expert-parallel",
         "engine": "--engine", "engine_version": "--engine-version", "quantization": "--quantization",
         "format": "--format", "measured_by": "--measured-by", "measured_on": "--measured-on", "note": "--note",
         "driver": "--driver", "kv_cache_tokens": "--kv-cache-tokens", "max_model_len": "--max-model-len",
         "enforce_eager": "--enforce-eager",
         **{f: "--" + f.replace("_", "-") for f in (*RUN_OFFLOAD, *RUN_SETTINGS, *RUN_DRAFTS)},  # deploy's and perf's flag names
         "file": "FILE", "files": "FILE", "id": "ID"}


def store(db: Optional[Path]):
    from inferplan.store import Store

    return run(Store, db)


def user_runs(db: Optional[Path] = None) -> tuple:
    """The stored runs as the performance layer takes them; none when no database exists yet."""
    from inferplan.store_path import default_db_path, holds_measurements

    path = db or default_db_path()
    if not holds_measurements(path):
        return ()
    return store(path).user_runs()


def user_catalog(db: Optional[Path] = None):
    """The catalogue with the stored runs as measured profiles (``plan``), or None: none stored."""
    from inferplan.catalog.loader import load_catalog
    from inferplan.performance.local_catalog import with_user_profiles

    runs = user_runs(db)
    return with_user_profiles(run(load_catalog), runs) if runs else None


def _named(fn, *args, **kwargs):
    from inferplan.shells.cli_common import run_naming

    return run_naming(FLAGS, fn, *args, **kwargs)


def _in_file(fn):
    """``fn`` where a refused place inside a result file (a line, a key: not a provenance field) is not put
    before the message as a flag would be: the message says the file and the place already."""
    from inferplan.errors import InferplanError

    def call(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except InferplanError as exc:
            exc.located = exc.located or bool(exc.field and exc.field not in FLAGS)
            raise
    return call


@measurements_app.command("import")
@deployment_flags(*RUN_OFFLOAD, *RUN_SETTINGS, "enforce_eager")
def import_cmd(
    flags: dict,
    files: list[Path] = typer.Argument(..., metavar="FILE", help="Result files: vllm bench serve JSON, SGLang bench_serving JSONL, llama-bench json/csv/md, genai-perf/AIPerf export JSON, guidellm report JSON, or the documented CSV; gzip, xz, bzip2 or a one-file zip of any."),
    model: Optional[str] = typer.Option(None, "--model", help="Model (default: the one the file names)."),
    gpu: Optional[str] = typer.Option(None, "--gpu", help="Accelerator the run used (or local)."),
    gpus: Optional[int] = typer.Option(None, "--gpus", help="GPUs in the run (default: the tensor parallel size)."),
    tensor_parallel_size: Optional[int] = typer.Option(None, "--tensor-parallel-size", "-tp", help="Default: the file's metadata (vllm bench serve --metadata tensor_parallel_size=N), else 1."),
    pipeline_parallel_size: Optional[int] = typer.Option(None, "--pipeline-parallel-size", "-pp", help="Pipeline stages (default 1; llama.cpp on --gpus N with no split stated: N, its default layer split)."),
    data_parallel_size: Optional[int] = DpOpt,
    enable_expert_parallel: bool = EpOpt,
    engine: Optional[str] = typer.Option(None, "--engine", help="vllm | sglang | trtllm | llamacpp | mlx (default: llamacpp for llama-bench files, else the GPU's default engine, engines.yaml default_on)."),
    engine_version: Optional[str] = typer.Option(None, "--engine-version", help="e.g. 0.11.0, a Docker tag (vllm/vllm-openai:v0.11.0) or a llama.cpp build (6935; llama-bench files state theirs)."),
    quantization: Optional[str] = typer.Option(None, "--quantization", "-q", help="Weight format (default: what the file states — llama-bench's model_type, vllm --metadata quantization=…, a repo name ending -FP8-dynamic — else the model's checkpoint)."),
    fmt: Optional[str] = typer.Option(None, "--format", help="vllm | sglang | llama-bench | genai-perf | guidellm | csv (default: told from the file)."),
    measured_by: Optional[str] = typer.Option(None, "--measured-by", help="Who ran it."),
    measured_on: Optional[str] = typer.Option(None, "--measured-on", help="YYYY-MM-DD (default: the file's date, else today)."),
    driver: Optional[str] = typer.Option(None, "--driver", help="GPU driver version."),
    note: str = typer.Option("", "--note", help="Free text."),
    kv_cache_tokens: Optional[int] = TokensOpt(None, "--kv-cache-tokens", help="KV cache the engine reported at start-up (vLLM: 'GPU KV cache size: N tokens', after 'Memory after warmup' from 0.34)."),
    max_model_len: Optional[int] = TokensOpt(None, "--max-model-len", help="The context length the engine ran with."),
    speculative_tokens: int = RunDraftTokensOpt,
    speculative_method: Optional[str] = DraftMethodOpt,
    draft_model: Optional[str] = RunDraftOpt,
    acceptance_rate: Optional[float] = RunAcceptanceOpt,
    db: Optional[Path] = DbOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Import benchmark result files: every file, or none when one is refused."""
    from inferplan.catalog.loader import load_catalog
    from inferplan.measurements.records import RunProvenance, read_runs
    from inferplan.inputs.deployment import Deployment
    from inferplan.shells.cli_common import catalog_for, local_gpu

    if gpu and gpu.strip().lower() == "local":
        gpu = local_gpu()
    given = _named(RunProvenance, **{k: v for k, v in dict(
        model=model, gpu=gpu, gpus=gpus, tensor_parallel_size=tensor_parallel_size, pipeline_parallel_size=pipeline_parallel_size,
        data_parallel_size=data_parallel_size, enable_expert_parallel=enable_expert_parallel, engine=engine,
        engine_version=engine_version, quantization=quantization, format=fmt, measured_by=measured_by,
        measured_on=measured_on, driver=driver, note=note, kv_cache_tokens=kv_cache_tokens,
        max_model_len=max_model_len, speculative_tokens=speculative_tokens, speculative_method=speculative_method,
        draft_model=draft_model, acceptance_rate=acceptance_rate, **flags).items() if v is not None})
    contents = []
    for f in files:
        try:
            contents.append((f.name, f.read_bytes()))
        except OSError as exc:
            fail(f"FILE: {f}: {exc.strerror or exc}", field="FILE")
    catalog = catalog_for(Deployment(model=given.model or "local", gpu=given.gpu)) if given.gpu else None
    runs = _named(_in_file(read_runs), catalog or run(load_catalog), contents, given)
    saved = run(store(db).add_measurements, runs)
    if as_json:
        emit_json({"imported": [r.model_dump(mode="json") for r in saved]})
        return
    from inferplan.measurements.records import failure_text

    for r in saved:
        console.print(f"imported run {r.id}: {r.file} ({r.format}, {plural(len(r.points), 'point')}) — {r.model} on "
                      f"{r.gpus}× {r.accelerator}, {r.engine} {r.engine_version}", highlight=False)
        if failed := failure_text(r):
            err_console.print(f"[yellow]note:[/] run {r.id}: {failed}", highlight=False)


@measurements_app.command("list")
def list_cmd(db: Optional[Path] = DbOpt, as_json: bool = JsonOpt) -> None:
    """Your stored runs, newest first."""
    runs = run(store(db).list_measurements)
    if as_json:
        emit_json({"measurements": [r.model_dump(mode="json") for r in runs]})
    else:
        render_local.print_runs(console, runs)


@measurements_app.command("show")
def show_cmd(measurement_id: int = typer.Argument(..., metavar="ID"), db: Optional[Path] = DbOpt,
             as_json: bool = JsonOpt) -> None:
    """One run with the planner's prediction beside each measured figure, and the error."""
    from inferplan.measurements.compare import compare_run

    result = run(compare_run, _named(store(db).get_measurement, measurement_id))
    if as_json:
        emit_json(result)
    else:
        render_local.print_comparison(console, result)


@measurements_app.command("delete")
def delete_cmd(measurement_id: int = typer.Argument(..., metavar="ID"), db: Optional[Path] = DbOpt) -> None:
    """Delete one stored run."""
    _named(store(db).delete_measurement, measurement_id)
    err_console.print(f"deleted run {measurement_id}")


@measurements_app.command("export")
def export_cmd(ids: Optional[list[int]] = typer.Argument(None, metavar="[ID]...", help="Runs to export (default: all)."),
               db: Optional[Path] = DbOpt, as_json: bool = JsonOpt) -> None:
    """Runs as catalogue YAML in the speed_points schema, to contribute back."""
    from inferplan.measurements.export import export_yaml, run_as_catalogue

    s = store(db)
    runs = [_named(s.get_measurement, i) for i in ids] if ids else run(s.list_measurements)
    if as_json:
        emit_json([run_as_catalogue(r) for r in runs])
    else:
        print(export_yaml(runs), end="")


@deployment_flags(*LAYOUT, *(f for f in LIMITS if f != "max_model_len"), *FORMAT, *RUN_OFFLOAD)
def acceptance_cmd(
    flags: dict,
    max_model_len: Optional[int] = TokensOpt(None, "--max-model-len", help="Default: the workload's input + output."),
    speculative_tokens: int = DraftTokensOpt,
    speculative_method: Optional[str] = DraftMethodOpt,
    draft_model: Optional[str] = DraftModelOpt,
    acceptance_rate: Optional[float] = typer.Option(None, "--acceptance-rate", help="Per draft token, for the predictions, with --speculative-tokens (default as perf's)."),
    workload_preset: str = typer.Option(..., "--workload", help="Workload preset (chat-seat, coding-developer-median, agent-worker …)."),
    input_len: Optional[int] = TokensOpt(None, "--input-len", help="Prompt tokens per request (default: the preset's)."),
    output_len: Optional[int] = TokensOpt(None, "--output-len", help="Output tokens per request (default: the preset's)."),
    out: Path = typer.Option(..., "--out", help="Folder to write the pack into."),
    as_json: bool = JsonOpt,
) -> None:
    """The acceptance test for a deployment: launch command, load tests, checklist and predictions, in a folder."""
    from inferplan.measurements.acceptance import acceptance_pack
    from inferplan.report.acceptance_files import write_pack
    from inferplan.shells.cli_common import catalog_for, deployment_from, run_naming

    from inferplan.shells.cli_deploy import DEPLOY_FLAGS, speculative_input

    d = deployment_from({**flags, "max_model_len": max_model_len})
    names = {"workload_preset": "--workload", "out": "--out", "input_len": "--input-len", "output_len": "--output-len",
             "acceptance_rate": "--acceptance-rate"}
    speculative = None
    if speculative_tokens:
        speculative = speculative_input(method=speculative_method, tokens=speculative_tokens, draft_model=draft_model)
    pack = run_naming({**DEPLOY_FLAGS, **names}, acceptance_pack, d, workload_preset, catalog_for(d),
                      input_len=input_len, output_len=output_len, speculative=speculative, acceptance_rate=acceptance_rate)
    written = run_naming(names, write_pack, pack, out)
    if as_json:
        emit_json({"pack": pack.model_dump(mode="json"), "files": [str(p) for p in written]})
        return
    for note in pack.notes:
        err_console.print(f"[yellow]note:[/] {note}", highlight=False)
    console.print(f"acceptance pack for {pack.deployment.model} written to {out}/ "
                  f"({', '.join(p.name for p in written)}); launch command from {pack.launch_from}", highlight=False)
