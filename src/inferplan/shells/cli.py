"""The ``inferplan`` command: parse flags into a domain object, call one library function, render.

No arithmetic lives here beyond unit conversion for display. Every ``InferplanError`` and every
validation error becomes one line naming the flag, and exit code 2.

The ``cli*`` modules do not postpone annotations: typer reads every command's parameter types when
it builds the app, and would compile each from a string on every start.
"""

import copy
import functools
import inspect
from pathlib import Path
from typing import Optional

import typer
from typer.core import TyperGroup

from inferplan.shells.cli_catalog import catalog_app, gpus_cmd, model_app, models_cmd
from inferplan.shells.cli_common import (
    DeploymentEngineOpt,
    DraftAcceptanceOpt,
    DraftCheckpointOpt,
    LazyModule,
    RequestMaxLenOpt,
    ExplainOpt,
    JsonOpt,
    KvOpt,
    SpeculativeMethodOpt,
    SpeculativeTokensOpt,
    TokensOpt,
    catalog_for,
    console,
    deployment_from,
    emit_json,
    err_console,
    fail,
    flagged_cells,
    run,
    run_naming,
    split_list,
    workload,
)
from inferplan.shells.cli_flags import FORMAT, HOST, LAYOUT, LIMITS, deployment_flags
from inferplan.shells.cli_deploy import deploy_cmd
from inferplan.shells.cli_search import search_cmd
from inferplan.shells.cli_simulate import simulate_cmd
from inferplan.shells.cli_local import detect_cmd
from inferplan.shells.cli_measurements import DbOpt, acceptance_cmd, measurements_app, user_catalog, user_runs
from inferplan.shells.cli_validate import validate_cmd

render = LazyModule("inferplan.shells.render")
render_fits = LazyModule("inferplan.shells.render_fits")


def _print_version(given: bool) -> None:
    if given:
        from importlib.metadata import version

        typer.echo(f"inferplan {version('inferplan')}")
        raise typer.Exit()


# `inferplan --help` lists the commands in the README's order: does it fit, how fast, how many users at what
# cost, the cheapest way, then launching, the page, the catalogue and your own measurements
HELP_ORDER = ("fit", "fits", "perf", "frontier", "plan", "search", "simulate", "deploy", "serve", "models", "gpus",
              "catalog", "racks", "detect", "acceptance", "measurements", "model", "validate")


class _VersionedGroup(TyperGroup):
    """The root group: every command under it, however deep, answers ``--version`` as the root does
    (the root's flag, hidden there, so each command's help lists its own options only)."""

    def list_commands(self, ctx):
        """The commands in the order a newcomer asks (``HELP_ORDER``), any other after them."""
        names = super().list_commands(ctx)
        return sorted(names, key=lambda n: HELP_ORDER.index(n) if n in HELP_ORDER else len(HELP_ORDER))

    def get_command(self, ctx, cmd_name):
        command = super().get_command(ctx, cmd_name)
        version = next((p for p in self.params if "--version" in p.opts), None)
        if command is not None and version is not None:
            hidden = copy.copy(version)
            hidden.hidden, hidden.expose_value = True, False  # the command's own parameters are what it is called with
            _answers_version(command, hidden)
        if command is not None:
            _fold_pairs(command)
        return command


def _fold_pairs(command) -> None:
    """A switch's on/off pair on two lines of the help (``--enable-extensible-kv-cache /`` over
    ``--no-enable-extensible-kv-cache``): on one, the pair is 64 columns, wider than a 60-column terminal."""
    for param in getattr(command, "params", ()):
        if getattr(param, "secondary_opts", None) and "get_help_record" not in vars(param):
            param.get_help_record = functools.partial(_folded_record, type(param).get_help_record.__get__(param))
    for sub in getattr(command, "commands", {}).values():
        _fold_pairs(sub)


def _folded_record(record, ctx):
    found = record(ctx)
    if found is None or " / " not in found[0]:
        return found
    on, off = found[0].split(" / ", 1)
    return f"{on} /\n  {off}", found[1]  # click's option list is indented two columns


def _answers_version(command, version) -> None:
    if not any("--version" in p.opts for p in command.params):
        command.params.append(version)
    for sub in getattr(command, "commands", {}).values():
        _answers_version(sub, version)


# Help in click's own layout (typer's documented ``rich_markup_mode=None``), not rich's boxed panels: click
# puts the help under a long flag where the line is short, so every flag name stays whole at any width
# (the panels cut them at 80 columns). Sub-command groups take the app's mode.
HELP_MARKUP = None
HELP_NAMES = {"help_option_names": ["-h", "--help"]}  # sub-commands and groups take the root's
app = typer.Typer(no_args_is_help=True, add_completion=False, rich_markup_mode=HELP_MARKUP, context_settings=HELP_NAMES,
                  cls=_VersionedGroup, help="Plan self-hosted open-weight LLM deployments.")
app.add_typer(catalog_app, name="catalog")
app.add_typer(model_app, name="model", short_help="Import Hugging Face config.json models")
# inferplan/shells/cli_measurements.py
app.add_typer(measurements_app, name="measurements", short_help="Your own benchmark runs")


NO_FIT_EXIT = 1  # fit's exit status when the deployment does not fit (the answer, not an error)


@app.command("fit", short_help="Does it fit, and what KV cache is left")
@deployment_flags(*LAYOUT, *LIMITS, *FORMAT, "mtp_draft", "concurrency", "kv_bytes_per_token", *HOST)
def fit_cmd(
    flags: dict,
    speculative_tokens: int = SpeculativeTokensOpt,
    speculative_method: Optional[str] = SpeculativeMethodOpt,
    draft_model: Optional[str] = DraftCheckpointOpt,
    as_json: bool = JsonOpt,
    explain: bool = ExplainOpt,
) -> None:
    """Does it fit, and how much is left for the KV cache? When not, what would (and exit code 1)."""
    from inferplan.memory.suggest import fit_or_suggest

    d = deployment_from(flags)
    result = run(fit_or_suggest, d, catalog_for(d), speculative_tokens=speculative_tokens,
                 speculative_method=speculative_method, draft_model=draft_model)
    if as_json:
        emit_json(result)
    else:
        from inferplan.search.fit_queue import fit_queue_loop

        loop = fit_queue_loop(d, result, catalog_for(d)) if _simulate_takes(d, bool(speculative_tokens or speculative_method
                                                                    or draft_model)) else None
        render.print_fit(console, result, d, explain, render.simulate_command(*loop, d.concurrency) if loop else None)
    if not result.fits:  # the answer is printed; the status says it for a script (2 stays a refused input)
        raise typer.Exit(code=NO_FIT_EXIT)


@app.command("fits", short_help="What fits: models × GPUs × precisions")
def fits_cmd(
    models: Optional[str] = typer.Option(None, "--models", help="Comma-separated model ids (default: the default grid, every model with a config but those the catalogue keeps out of it to hold it to one screen; the output names them)."),
    all_models: bool = typer.Option(False, "--all-models", help="Every catalogue model with a config, the ones the default grid leaves out too."),
    gpus: Optional[str] = typer.Option(None, "--gpus", help="Comma-separated accelerator types (default: 80/96/141/288 GB GPUs); a count goes in --gpu-count."),
    gpu_count: int = typer.Option(1, "--gpu-count", min=1, max=64, help="GPUs of each --gpus type, run as one instance (default 1)."),
    systems: Optional[str] = typer.Option(None, "--systems", help="Comma-separated systems."),
    quantizations: Optional[str] = typer.Option(None, "--quantizations", help="Comma-separated; 'native' = each model's first checkpoint (default: each model's best published build)."),
    engine: Optional[str] = DeploymentEngineOpt,
    max_model_len: Optional[int] = TokensOpt(None, "--max-model-len", help="Context length of every cell (default: 8192, or a model's own context when shorter)."),
    kv_cache_dtype: str = KvOpt,
    as_json: bool = JsonOpt,
    explain: bool = ExplainOpt,
) -> None:
    """The what-fits matrix: models × hardware × precisions, with the KV cache left."""
    from inferplan.catalog.loader import is_count
    from inferplan.memory.matrix import fits_matrix

    for g in split_list(gpus, "--gpus") or []:  # here --gpus lists types: a number is a count given in its place
        if is_count(g):
            fail(f"--gpus: {g.strip()!r} is a number, not a GPU type; did you mean a count? (--gpu-count {g.strip()})",
                 field="--gpus", allowed="GPU types, e.g. h100-sxm,rtx-4090")
    matrix = flagged_cells(run(
        fits_matrix, models=split_list(models, "--models"), gpus=split_list(gpus, "--gpus"), systems=split_list(systems, "--systems"),
        quantizations=split_list(quantizations, "--quantizations"), engine=engine, max_model_len=max_model_len,
        kv_cache_dtype=kv_cache_dtype, gpu_count=gpu_count, all_models=all_models,
    ))
    if as_json:
        emit_json(matrix)
    else:
        console.print(render_fits.fits_table(matrix, console.width, explain))
        # the cards named (a home GPU, say) and each model in its published builds: a 4-bit build is the next step
        hint = render_fits.smaller_build_line(matrix) if gpus and not (quantizations or systems) else None
        if hint is not None:
            console.print(hint)


app.command("validate", short_help="Predictions against measurements")(validate_cmd)  # inferplan/shells/cli_validate.py
app.command("search", short_help="The cheapest deployment for a target")(search_cmd)  # inferplan/shells/cli_search.py
app.command("deploy", short_help="Launch command or Kubernetes manifest")(deploy_cmd)  # inferplan/shells/cli_deploy.py
# inferplan/shells/cli_simulate.py
app.command("simulate", short_help="Tail latency under load (p50/p95/p99)")(simulate_cmd)
app.command("detect", short_help="What this machine holds and runs")(detect_cmd)  # inferplan/shells/cli_local.py
# inferplan/shells/cli_measurements.py
app.command("acceptance", short_help="A deployment's acceptance test kit")(acceptance_cmd)
# inferplan/shells/cli_catalog.py: shortcuts for `catalog list`
app.command("models", short_help="List the catalogue's models")(models_cmd)
app.command("gpus", short_help="List the catalogue's GPUs")(gpus_cmd)


@app.command("perf", short_help="How fast: TTFT, TPOT and tokens/s")
@deployment_flags(*LAYOUT, *LIMITS, *FORMAT, *HOST, options={"max_model_len": RequestMaxLenOpt})
def perf_cmd(
    flags: dict,
    backend: Optional[str] = typer.Option(None, "--backend", help="llama.cpp back end, e.g. vulkan (engines.yaml backends; default: the GPU's own stack)."),
    input_len: int = TokensOpt(1024, "--input-len", help="Prompt tokens per request."),
    output_len: int = TokensOpt(256, "--output-len", help="Generated tokens per request."),
    concurrency: str = typer.Option("1", "--concurrency", help="Requests in flight, or 'max'."),
    speculative_tokens: int = typer.Option(0, "--speculative-tokens", min=0, max=32, help="Draft tokens proposed per step (0: no speculative decoding)."),
    speculative_method: Optional[str] = SpeculativeMethodOpt,
    draft_model: Optional[str] = DraftCheckpointOpt,
    acceptance_rate: Optional[float] = DraftAcceptanceOpt,
    prefix_cache_hit_rate: float = typer.Option(0.0, "--prefix-cache-hit-rate", help="Share of prompt tokens served from the prefix cache, 0 to 1 (not prefilled again)."),
    prefix_cache_host_share: float = typer.Option(0.0, "--prefix-cache-host-share", help="Of the cached tokens, the share found in the host KV tier (loaded over PCIe)."),
    db: Optional[Path] = DbOpt,
    as_json: bool = JsonOpt,
    explain: bool = ExplainOpt,
) -> None:
    """How fast: TTFT, TPOT, tokens/s per user and in aggregate (from your own stored runs where one matches)."""
    from inferplan.performance.serving import estimate

    w = workload(input_len=input_len, output_len=output_len, concurrency=concurrency,
                  speculative_tokens=speculative_tokens, acceptance_rate=acceptance_rate,
                  prefix_cache_hit_rate=prefix_cache_hit_rate, prefix_cache_host_share=prefix_cache_host_share,
                  backend=backend.strip().lower() if backend else backend)
    from inferplan.performance.drafts import with_drafts

    stated = deployment_from(flags)
    d = run(with_drafts, catalog_for(stated), stated, w, speculative_method, draft_model)
    result = run(estimate, d, w, catalog_for(d), user_runs=user_runs(db))
    if as_json:
        emit_json(result)
        return
    # simulate of the same deployment and workload, where simulate takes every setting perf states
    alike = _simulate_takes(stated, bool(backend or speculative_method or draft_model or prefix_cache_host_share))
    render.print_perf(console, result, explain, render.simulate_command(stated, w, result.concurrency) if alike else None)


def _simulate_takes(stated, beyond: bool) -> bool:
    """Whether ``inferplan simulate`` takes every deployment setting ``stated`` holds away from its default (a
    closed loop of clients stands for its concurrency), and no other setting is stated that it lacks (``beyond``)."""
    fields = type(stated).model_fields
    away = {f for f in stated.model_fields_set if getattr(stated, f) != fields[f].default}
    return not (beyond or away - {"concurrency"} - set(inspect.signature(simulate_cmd).parameters))


@app.command("frontier", short_help="Tokens/s per GPU against per user")
@deployment_flags(*LAYOUT, *FORMAT)
def frontier_cmd(
    flags: dict,
    input_len: int = TokensOpt(1024, "--input-len", help="Prompt tokens per request."),
    output_len: int = TokensOpt(1024, "--output-len", help="Generated tokens per request."),
    speculative_tokens: int = typer.Option(0, "--speculative-tokens", min=0, max=32, help="Draft tokens proposed per step (0: no speculative decoding)."),
    acceptance_rate: Optional[float] = DraftAcceptanceOpt,
    points: int = typer.Option(24, "--points", min=2, max=256, help="Concurrency levels to sweep."),
    db: Optional[Path] = DbOpt,
    as_json: bool = JsonOpt,
    explain: bool = ExplainOpt,
) -> None:
    """The throughput–interactivity frontier: tokens/s per GPU vs tokens/s per user."""
    from inferplan.performance.frontier import frontier

    w = workload(input_len=input_len, output_len=output_len, concurrency="1",
                  speculative_tokens=speculative_tokens, acceptance_rate=acceptance_rate)
    d = deployment_from(flags)
    result = run(frontier, d, w, catalog_for(d), points=points, user_runs=user_runs(db))
    if as_json:
        emit_json(result)
    else:
        render.print_frontier(console, result, explain)


def _scenario_file(path: Path):
    """The scenario in ``path``; a key refused by its type or bounds says what is wrong and what it takes in the
    API's words (a number too large as too large, bounds written as numbers are)."""
    from pydantic import ValidationError

    from inferplan.economics.scenario import Scenario
    from inferplan.errors import InvalidScenarioError
    from inferplan.scenario import load_scenario
    from inferplan.shells.pydantic_errors import allowed_by, error_message

    try:
        return load_scenario(path)
    except InvalidScenarioError as exc:
        cause = exc.__cause__
        if exc.allowed is not None or not isinstance(cause, ValidationError):
            raise
        first = cause.errors()[0]
        loc = tuple(p for p in first["loc"] if not str(p).startswith("function-"))
        message, said = str(exc), first["msg"].removeprefix("Value error, ")
        if message.endswith(said):  # pydantic's words after file:line: key: (a section's refusal has its own)
            message = message[: len(message) - len(said)] + error_message(first)
        raise InvalidScenarioError(message, field=exc.field, allowed=allowed_by(first, Scenario, loc),
                                   located=exc.located, names=exc.names) from cause


@app.command("plan", short_help="Users + ROI: users, costs, payback")
def plan_cmd(
    scenario: Path = typer.Argument(..., help="A scenario YAML file (see examples/)."),
    currency: str = typer.Option("usd", "--currency", help="usd | eur (rendering only; JSON carries USD and the FX rate)"),
    draws: int = typer.Option(10_000, "--draws", min=0, max=1_000_000, help="Monte Carlo draws for P10/P50/P90 (0: off)."),
    seed: int = typer.Option(0, "--seed", min=0, max=2**32 - 1, help="Monte Carlo seed."),
    report: Optional[Path] = typer.Option(None, "--report", help="Write a self-contained report: out.html or out.md."),
    db: Optional[Path] = DbOpt,
    as_json: bool = JsonOpt,
    explain: bool = ExplainOpt,
) -> None:
    """The Users + ROI simulator: users, loadouts, costs, payback, quote and API comparison (capacity from your own runs where they match)."""
    from inferplan.economics.plan import plan
    from inferplan.economics.uncertainty import no_draws_reason, simulate
    from inferplan.search.deploying import plan_launch

    currency = currency.strip().lower()
    if currency not in ("usd", "eur"):
        fail(f"--currency: {currency!r} is not allowed (allowed: usd, eur)", field="--currency", allowed="usd, eur")
    s = run_naming({}, _scenario_file, scenario)  # errors name the scenario's keys
    catalog = user_catalog(db)
    result = run_naming({}, plan, s, catalog)
    uncertainty = run_naming({}, simulate, result, s, draws=draws, seed=seed, catalog=catalog) if draws else None
    launch = plan_launch(catalog, s, result)  # the sized cell's command, as search --deploy writes a pick's
    if report is not None:
        from inferplan.report.files import write_report

        run(write_report, report, result, uncertainty, currency)
        err_console.print(f"report written to {report}")
    if as_json:
        payload = result.model_dump(mode="json")
        payload["uncertainty"] = uncertainty.model_dump(mode="json") if uncertainty else None
        payload["deploy"], payload["deploy_notes"] = launch.text, list(launch.notes)
        emit_json(payload)
    else:
        render.print_plan(console, result, currency, explain)
        if uncertainty:
            render.print_uncertainty(console, uncertainty, result, currency, explain)
        elif draws:
            console.print(f"Monte Carlo: {no_draws_reason(result)}")
        render.print_launch(console, launch.text, launch.notes, explain, pools=s.prefill_pool is not None)


@app.command("racks", short_help="Rack curves: tokens/s per MW, $/Mtok")
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


@app.command("serve", short_help="The web calculator and HTTP API")
def serve_cmd(
    host: str = typer.Option("127.0.0.1", "--host", help="Interface to listen on (on loopback only loopback Host headers are answered)."),
    port: int = typer.Option(8000, "--port", min=1, max=65535, help="TCP port."),
    db: Optional[Path] = typer.Option(None, "--db", help="SQLite file for saved scenarios and quotes (default: the user data directory)."),
    workers: Optional[int] = typer.Option(None, "--workers", min=1, max=64, help="Worker processes (default: one per CPU)."),
) -> None:
    """Serve the web calculator and the HTTP API."""
    from inferplan.catalog.loader import load_catalog
    from inferplan.shells.api import create_app
    from inferplan.listen import check_listen
    from inferplan.shells.server import bind_error, default_workers, serve

    run(create_app, db)  # a bad --db or catalogue is one line here, not a traceback in every worker
    run(load_catalog)
    run_naming({"host": "--host", "port": "--port"}, check_listen, host, port, bind_error(host, port))
    err_console.print(f"inferplan calculator: open http://{host}:{port}/  (API docs: http://{host}:{port}/docs)")
    serve(host, port, db, workers or default_workers())


def app_for(args: list[str]) -> typer.Typer:
    """The app to run for these command-line arguments: when the first names a sub-command or group, an
    app holding only it, so a start builds that command's parameters instead of every command's (typer
    builds them all before it parses); the parsing, help, errors and output are the same. Anything else
    (no argument, ``--help``, an unknown name) gets the whole app, which lists or refuses as usual."""
    name = args[0] if args else None
    commands = [c for c in app.registered_commands
                if (c.name or c.callback.__name__.lower().replace("_", "-")) == name]
    groups = [g for g in app.registered_groups if g.name == name]
    if not commands and not groups:
        return app
    lean = typer.Typer(add_completion=False, rich_markup_mode=HELP_MARKUP, context_settings=HELP_NAMES, cls=_VersionedGroup,
                       help=app.info.help)
    lean.registered_commands = commands
    lean.registered_groups = groups
    lean.callback()(_root)  # a group with a callback keeps `inferplan NAME …` a sub-command
    return lean


def _root(
    show_version: bool = typer.Option(False, "--version", callback=_print_version, is_eager=True,
                                      help="Print inferplan's version and exit."),
) -> None:
    """Plan self-hosted open-weight LLM deployments."""


app.callback()(_root)
