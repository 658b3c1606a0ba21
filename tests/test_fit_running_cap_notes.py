"""What fit says about the sequences above the engine's running cap: the command that prices their wait, the
cap's flag as the launch writes it, what runs at once, and the context each running sequence may reach
(memory/running_cap.py, memory/fit_held.py)."""

from typer.testing import CliRunner

from inferplan.inputs.deployment import Deployment
from inferplan.memory.fit import fit
from inferplan.shells.cli import app

runner = CliRunner()
RTX_4090_8K = ["--model", "llama-3.1-8b", "--gpu", "rtx-4090", "--max-model-len", "8192"]


def test_the_over_cap_note_points_at_a_command_that_runs_at_that_concurrency():
    # perf refuses a concurrency above what the KV cache holds at its workload (37 here); a closed loop of
    # 2,000 clients in simulate runs
    note = fit(Deployment(model="llama-3.1-8b", gpu="rtx-4090", max_model_len=8192, concurrency=2000)).concurrency_note
    assert "inferplan simulate --clients 2000" in note and "perf --concurrency" not in note
    assert runner.invoke(app, ["perf", *RTX_4090_8K, "--concurrency", "2000"]).exit_code == 2
    ran = runner.invoke(app, ["simulate", *RTX_4090_8K, "--clients", "2000", "--requests", "2000"])
    assert ran.exit_code == 0, ran.stdout
