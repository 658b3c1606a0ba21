"""plan gives the launch command of the replica cell it sized, as search --deploy writes a pick's: its parallel
flags are the cell's layout (an 8-GPU data-parallel-attention cell with its experts over the 8 GPUs, not 8
separate one-GPU copies)."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import yaml
from typer.testing import CliRunner

from inferplan.economics.plan import plan
from inferplan.economics.scenario import Scenario
from inferplan.search.deploying import plan_launch
from inferplan.shells.cli import app

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "chat-seats-h100.yaml"


def _flag(argv: list[str], name: str, default: int = 1) -> int:
    return int(argv[argv.index(name) + 1]) if name in argv else default


def test_plan_launches_the_cell_it_sized(catalog):
    s = Scenario.model_validate(yaml.safe_load(EXAMPLE.read_text()))
    r = plan(s, catalog)
    launch = plan_launch(catalog, s, r)
    argv = shlex.split(launch.text.splitlines()[-1])
    cell = r.capacity.cell
    assert argv[:3] == ["vllm", "serve", "openai/gpt-oss-120b"]
    assert _flag(argv, "--tensor-parallel-size") == cell.tensor_parallel_size
    assert _flag(argv, "--pipeline-parallel-size") == cell.pipeline_parallel_size
    assert _flag(argv, "--data-parallel-size") == cell.data_parallel_size
    assert ("--enable-expert-parallel" in argv) == cell.expert_parallel
    assert cell.gpus == 8 and cell.data_parallel_size == 8 and cell.expert_parallel  # the example's sized cell


def test_plan_json_carries_the_launch_under_deploy():
    r = CliRunner().invoke(app, ["plan", str(EXAMPLE), "--json", "--draws", "0"])
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    argv = shlex.split(data["deploy"].splitlines()[-1])
    assert _flag(argv, "--data-parallel-size") == data["capacity"]["cell"]["data_parallel_size"]
