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


def test_the_cap_under_sglang_dp_attention_is_said_as_the_launch_writes_it():
    # --max-running-requests is the total over the DP attention ranks: 20 per rank is launched as 40
    d = Deployment(model="qwen3-next-80b-a3b", gpu="h100-sxm", gpus=4, engine="sglang", tensor_parallel_size=2,
                   data_parallel_size=2, enable_expert_parallel=True, max_model_len=32768, max_num_seqs=20)
    note = fit(d.model_copy(update={"concurrency": 100})).concurrency_note
    assert "(--max-running-requests 40 over 2 DP attention ranks)" in note
    launch = runner.invoke(app, ["deploy", "--model", "qwen3-next-80b-a3b", "--gpu", "h100-sxm", "--gpus", "4",
                                 "--engine", "sglang", "-tp", "2", "-dp", "2", "--enable-expert-parallel",
                                 "--max-model-len", "32768", "--max-num-seqs", "20"]).stdout
    assert "--max-running-requests 40" in launch
