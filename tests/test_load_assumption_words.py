"""perf and simulate each say the load they assume: perf the steady state (requests arriving spread out) and the
simulate command for a burst of as many at once; a simulated closed loop that its clients start together, beside
the approximation's steady state. A rate-driven simulation says nothing of a closed loop."""

import json

from typer.testing import CliRunner

from inferplan.inputs.deployment import Deployment
from inferplan.inputs.workload import Workload
from inferplan.search.simulation import CLOSED_LOOP_NOTE, SimulationQuery, simulate_deployment
from inferplan.shells.cli import app

D = Deployment(model="qwen3-8b", gpu="h100-sxm")
W = Workload(input_len=512, output_len=64)


def test_perf_says_its_steady_state_and_the_command_for_a_burst():
    done = CliRunner().invoke(app, ["perf", "--model", "qwen3-8b", "--gpu", "h100", "--concurrency", "32",
                                    "--input-len", "512", "--output-len", "64", "--max-num-seqs", "16"],
                              prog_name="inferplan", env={"COLUMNS": "200"})
    assert done.exit_code == 0
    lines = done.stdout.splitlines()
    (at,) = [i for i, line in enumerate(lines) if line.startswith("steady state: requests arrive spread out")]
    assert lines[at].endswith("(simulate):")  # the command on a line of its own, whole, to copy
    command = lines[at + 1].strip().removeprefix("inferplan ")
    assert command == ("simulate --model qwen3-8b --gpu h100 --max-num-seqs 16 --input-len 512 --output-len 64 "
                       "--clients 32")
    ran = CliRunner().invoke(app, [*command.split(), "--requests", "200"], prog_name="inferplan")  # as printed
    assert ran.exit_code == 0, ran.stderr


def test_perf_json_says_its_load_and_no_command_where_simulate_lacks_a_stated_setting():
    done = CliRunner().invoke(app, ["perf", "--model", "qwen3-8b", "--gpu", "h100", "--concurrency", "32", "--json"])
    assert "a burst of 32 at once is a closed loop of 32 clients" in json.loads(done.stdout)["load_note"]
    host = CliRunner().invoke(app, ["perf", "--model", "qwen3-8b", "--gpu", "rtx-4090", "--engine", "llamacpp",
                                    "--max-model-len", "8192", "--concurrency", "4", "--n-gpu-layers", "99"],
                              env={"COLUMNS": "200"})
    assert "a burst of 4 at once" in host.stdout and "inferplan simulate" not in host.stdout, host.stdout


def test_a_closed_loop_simulation_says_its_clients_start_together(catalog):
    closed = simulate_deployment(SimulationQuery(deployment=D, workload=W, clients=8, requests=200), catalog)
    assert any(n.startswith(CLOSED_LOOP_NOTE) for n in closed.notes)
    assert "send their first requests together" in CLOSED_LOOP_NOTE
    rated = simulate_deployment(SimulationQuery(deployment=D, workload=W, request_rate_per_s=1.0, requests=200), catalog)
    assert not any(n.startswith(CLOSED_LOOP_NOTE) for n in rated.notes)


def test_perf_at_80_columns_wraps_its_load_note_and_prints_the_simulate_command_whole_on_its_own_line():
    done = CliRunner().invoke(app, ["perf", "--model", "llama-3.3-70b", "--gpu", "H100", "-tp", "2", "-q", "fp8",
                                    "--input-len", "2048", "--output-len", "512", "--concurrency", "32"],
                              prog_name="inferplan", env={"COLUMNS": "80"})
    assert done.exit_code == 0
    command = "  inferplan simulate --model llama-3.3-70b --gpu H100 --tensor-parallel-size 2"
    lines = done.stdout.splitlines()
    (at,) = [i for i, line in enumerate(lines) if line.startswith(command)]
    assert lines[at].endswith("--clients 32")  # whole, to copy
    prose = [line for i, line in enumerate(lines) if i != at]
    assert max(len(line) for line in prose) <= 80, max(prose, key=len)
