"""At 80 columns no id a user must type next is cut: tables drop low-value columns or become lists."""

import io
import os
import re
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from rich.console import Console

from inferplan.catalog.loader import load_catalog
from inferplan.catalog.registry import Registry

INFERPLAN = str(Path(sys.executable).parent / "inferplan")
EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def narrow(*args: str) -> str:
    env = {**os.environ, "COLUMNS": "80", "LINES": "50"}
    out = subprocess.run([INFERPLAN, *args], env=env, capture_output=True, text=True, check=True).stdout
    assert "…" not in out, next(line for line in out.splitlines() if "…" in line)
    assert max(len(line) for line in out.splitlines()) <= 80
    return out


def whole(ident: str, text: str) -> bool:
    return re.search(rf"(?<![\w.-]){re.escape(ident)}(?![\w.-])", text) is not None


@pytest.mark.parametrize("kind", ["models", "accelerators", "systems"])
def test_catalog_lists_show_every_id_whole(kind):
    out = narrow("catalog", "list", kind)
    ids = [r.id for r in getattr(load_catalog(), kind)]
    assert [i for i in ids if not whole(i, out)] == []


def test_the_fits_matrix_shows_every_model_and_gpu_whole():
    out = narrow("fits")
    assert len(out.splitlines()) < 60  # a grid (lettered columns), not one block per cell
    models = [m.id for m in load_catalog().models if m.config and m.in_default_grid]
    assert len(models) > 20
    assert [i for i in [*models, "h100-sxm", "rtx-pro-6000-blackwell", "h200-sxm", "b300"] if not whole(i, out)] == []


def test_a_plan_names_its_model_and_system_whole():
    out = narrow("plan", str(EXAMPLES / "coding-developers-b200.yaml"))
    assert whole("qwen3-235b-a22b", out) and whole("hgx-b200", out)


def test_a_scenario_name_with_rich_markup_is_printed_as_text(tmp_path):
    scenario = tmp_path / "markup.yaml"
    scenario.write_text('name: "[/] [red]x"\nmodel: qwen3-32b\nplatform: {system: hgx-h100}\n'
                        "workload: {preset: chat-seat}\ntarget_users: 100\n")
    assert "[/] [red]x —" in narrow("plan", str(scenario))


@pytest.mark.parametrize("part", [pytest.param("--speed", marks=pytest.mark.slow), "--memory",
                                  pytest.param("--latency", marks=pytest.mark.slow)])  # every point: 30-70 s each
def test_the_track_record_shows_every_point_id_whole(part):
    env = {**os.environ, "COLUMNS": "80", "LINES": "50"}
    out = subprocess.run([INFERPLAN, "validate", part], env=env, capture_output=True, text=True, check=True).stdout
    assert max(len(line) for line in out.splitlines()) <= 80
    from inferplan.validation.latency import validate_latency
    from inferplan.validation.memory import validate_memory
    from inferplan.validation.speed import validate_speed

    checks = {"--speed": validate_speed, "--memory": validate_memory, "--latency": validate_latency}[part]().checks
    assert len(checks) > 20
    assert [c.id for c in checks if not whole(c.id, out)] == []


@pytest.mark.parametrize("args", [("--model", "llama-3.1-8b", "--gpu", "H100"),
                                  ("--model", "llama-3.3-70b", "--gpu", "RTX 4090", "--gpus", "2")])
def test_a_fit_answer_keeps_each_figure_with_its_unit(args):
    env = {**os.environ, "COLUMNS": "80", "LINES": "50"}  # suggested commands stay whole lines, to be copied
    done = subprocess.run([INFERPLAN, "fit", *args], env=env, capture_output=True, text=True)
    assert done.returncode in (0, 1), done.stderr  # 1: the answer is "does not fit" (the 70B on two 4090s)
    out = done.stdout
    assert "KV cache" in out
    assert not [line for line in out.splitlines() if re.match(r"\s*(GiB|GB|KiB|tokens)\b", line)]


def _commands(group, path=()):
    """Every command under ``group`` with the words that reach it."""
    for name, command in group.commands.items():
        if hasattr(command, "commands"):
            yield from _commands(command, (*path, name))
        else:
            yield (*path, name), command


def _help_cases():
    import typer

    from inferplan.shells.cli import app

    return list(_commands(typer.main.get_command(app)))


HELP_CASES = _help_cases()


@pytest.mark.parametrize("columns", [80, 60])
@pytest.mark.parametrize(("words", "command"), HELP_CASES, ids=[" ".join(w) for w, _ in HELP_CASES])
def test_help_shows_every_flag_name_whole(words, command, columns):
    """A flag is read off the help and copied from it: every long name (taken from the command itself,
    so a new flag is covered) is whole at 80 and 60 columns, and no line is wider than the terminal."""
    from typer.testing import CliRunner

    from inferplan.shells.cli import app

    done = CliRunner().invoke(app, [*words, "--help"], env={"COLUMNS": str(columns)}, prog_name="inferplan",
                              terminal_width=columns)  # the runner fixes click's width at 80 otherwise
    assert done.exit_code == 0, done.output
    names = [o for p in command.params for o in (*p.opts, *p.secondary_opts) if o.startswith("--")]
    assert names and [n for n in names if not whole(n, done.output)] == []
    assert max(len(line) for line in done.output.splitlines()) <= columns


def test_the_memory_track_record_labels_each_error_and_keeps_the_weights():
    env = {**os.environ, "COLUMNS": "80", "LINES": "50"}  # (a quoted engine log line in a caveat holds a "…")
    out = subprocess.run([INFERPLAN, "validate", "--memory"], env=env, capture_output=True, text=True, check=True).stdout
    first = out[:out.index("a02-")]
    assert all(f"{label} " in first for label in ("weights meas.", "weights pred.", "weights err", "KV err"))


def test_a_stored_run_shows_its_percentiles_whole(tmp_path):
    db = str(tmp_path / "runs.db")
    data = Path(__file__).parent / "data" / "measurements" / "vllm_bench_serve_c8.json"
    subprocess.run([INFERPLAN, "measurements", "import", str(data), "--model", "llama-3.1-8b", "--gpu", "h100",
                    "--engine", "vllm", "--engine-version", "x", "--db", db], capture_output=True, check=True)
    out = narrow("measurements", "show", "1", "--db", db)
    assert "latency percentiles at concurrency 8, 1024/256 tokens" in out
    assert all(f"│ {label} " in out for label in ("TTFT p50", "TTFT p99", "TPOT p50", "TPOT p99"))


def _longest(registry: Registry, n: int) -> Registry:
    """The ``n`` records of ``registry`` with the longest ids: the ones a narrow table is likeliest to cut."""
    return Registry(registry.kind, {r.id: r for r in sorted(registry, key=lambda r: len(r.id), reverse=True)[:n]})


@pytest.mark.parametrize("part", ["speed", "latency"])
def test_the_track_record_shows_its_longest_point_ids_whole(part):
    """The fast tier's check of the one above: the points with the longest ids, rendered at 80 columns."""
    from inferplan.shells.render_latency import print_latency_validation
    from inferplan.shells.render_validate import print_speed_validation
    from inferplan.validation.latency import validate_latency
    from inferplan.validation.speed import validate_speed

    full = load_catalog()
    sample = replace(full, speed_points=_longest(full.speed_points, 8), serving_profiles=_longest(full.serving_profiles, 1),
                     latency_points=_longest(full.latency_points, 3))
    console = Console(width=80, file=io.StringIO(), emoji=False)
    result = (validate_speed if part == "speed" else validate_latency)(sample)
    (print_speed_validation if part == "speed" else print_latency_validation)(console, result)
    out, checks = console.file.getvalue(), result.checks
    assert checks and max(len(line) for line in out.splitlines()) <= 80
    assert [c.id for c in checks if not whole(c.id, out)] == []
