"""What fit says about the sequences above the engine's running cap: the command that prices their wait, the
cap's flag as the launch writes it, what runs at once, and the context each running sequence may reach
(memory/running_cap.py, memory/fit_held.py)."""

import json

import pytest
from typer.testing import CliRunner

from inferplan.catalog.loader import load_catalog
from inferplan.errors import InvalidScenarioError
from inferplan.inputs.deployment import Deployment
from inferplan.memory.fit import fit
from inferplan.memory.matrix import fits_matrix
from inferplan.shells.cli import app

runner = CliRunner()
RTX_4090_8K = ["--model", "llama-3.1-8b", "--gpu", "rtx-4090", "--max-model-len", "8192"]


def test_the_over_cap_note_points_at_a_command_that_runs_at_that_concurrency():
    # perf refuses a concurrency above what the KV cache holds at its workload (37 here); a closed loop of
    # 2,000 clients in simulate runs
    note = fit(Deployment(model="llama-3.1-8b", gpu="rtx-4090", max_model_len=8192, concurrency=2000)).concurrency_note
    assert "a closed loop of 2,000 clients prices (simulate)" in note and "perf --concurrency" not in note
    assert runner.invoke(app, ["perf", *RTX_4090_8K, "--concurrency", "2000"]).exit_code == 2
    ran = runner.invoke(app, ["simulate", *RTX_4090_8K, "--clients", "2000", "--requests", "2000"])
    assert ran.exit_code == 0, ran.stdout


def test_fit_prints_the_whole_simulate_command_of_its_deployment():
    # the same deployment (model, GPU, precision, the context fit planned), not a bare --clients, and it runs
    out = runner.invoke(app, ["fit", "--model", "llama-3.1-8b", "--gpu", "rtx-4090", "-q", "fp8", "--max-model-len",
                              "32k", "--concurrency", "2000"], prog_name="inferplan", env={"COLUMNS": "80"}).stdout
    (line,) = [line.strip() for line in out.splitlines() if line.strip().startswith("inferplan simulate")]
    assert line == ("inferplan simulate --model llama-3.1-8b --gpu rtx-4090 --max-model-len 32000 "
                    "--quantization fp8 --clients 2000"), out
    ran = runner.invoke(app, [*line.split()[1:], "--requests", "500"])
    assert ran.exit_code == 0, ran.stdout


def test_fit_prints_no_simulate_command_where_simulate_lacks_a_stated_setting():
    # simulate takes no host-RAM offload: the note names simulate, and no command that would drop --n-cpu-moe
    out = runner.invoke(app, ["fit", "--model", "qwen3-30b-a3b", "--gpu", "rtx-4070", "--engine", "llamacpp", "-q",
                              "q4_k_m", "--n-cpu-moe", "28", "--max-model-len", "8192", "--concurrency", "4"],
                        env={"COLUMNS": "200"}).stdout
    assert "a closed loop of 4 clients prices (simulate)" in out and "inferplan simulate" not in out, out
    unfit = runner.invoke(app, ["fit", "--model", "llama-3.1-8b", "--gpu", "rtx-4090", "-q", "fp8", "--concurrency",
                                "2000"], env={"COLUMNS": "200"})  # 131,072 tokens do not fit: nothing to simulate
    assert unfit.exit_code == 1 and "wait in the queue" in unfit.stdout and "inferplan simulate" not in unfit.stdout


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


H100_256 = ["fit", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--max-model-len", "256"]


def test_at_once_is_at_most_the_running_cap_where_the_kv_cache_holds_more():
    # 1,892 sequences of 256 tokens fit the KV cache; vLLM runs 1,024 on an H100: fit says the cap, JSON keeps both
    out = " ".join(runner.invoke(app, [*H100_256, "--concurrency", "3000"], env={"COLUMNS": "200"}).stdout.split())
    assert "at once: 1,024 sequences of 256 tokens, the engine's cap (--max-num-seqs); the KV cache holds 1,892.00" in out
    r = fit(Deployment(model="llama-3.1-8b", gpu="h100-sxm", max_model_len=256))
    assert (r.total_max_concurrency, r.running_cap, r.sequences_at_once) == (1892.0, 1024, 1024.0)
    assert "sequences_at_once" not in r.model_dump()
    cell = fits_matrix(models=["llama-3.1-8b"], gpus=["h100-sxm"], max_model_len=256, catalog=load_catalog()).cells[0]
    assert cell.requests_at_once == 1024


def test_the_refusal_of_too_many_sequences_offers_the_running_cap_that_works():
    # 6,656 tokens hold 104 blocks of 64: at 2,000 sequences 256 running get none, but a cap of 104 runs each a block
    d = Deployment(model="llama-3.1-8b", gpu="rtx-4090", max_model_len=2048, gpu_memory_utilization=0.72,
                   concurrency=2000)
    with pytest.raises(InvalidScenarioError) as refused:
        fit(d)
    assert "or --max-num-seqs at most 104" in refused.value.allowed
    r = fit(d.model_copy(update={"max_num_seqs": 104}))
    assert (r.largest_context_tokens, r.queued_sequences) == (64, 1896)


def test_llamacpp_pads_each_slot_to_256_cells():
    # llama.cpp at 001d906a: n_ctx 24,000 pads to 24,064; each of 3 slots' 8,021 pads to 8,192, n_ctx 3 × 8,192
    d = Deployment(model="llama-3.1-8b", gpu="rtx-4090", engine="llamacpp", quantization="gguf-q4_k_m",
                   max_model_len=8000, max_num_seqs=3)
    r, one = fit(d.model_copy(update={"concurrency": 5})), fit(d.model_copy(update={"max_num_seqs": 1}))
    assert r.largest_context_tokens == 8192 and r.queued_sequences == 2
    assert r.kv_cache_allocated_bytes_per_gpu == 3 * 8192 * r.kv_cache_bytes_per_token
    assert one.kv_cache_allocated_bytes_per_gpu == 8192 * one.kv_cache_bytes_per_token  # 8,000 pads to 8,192
    assert any("24,000 tokens → 24,576 cells (3 slots of 8,192, each a multiple of 256)" in a for a in r.assumptions)


def test_the_largest_context_is_at_most_max_model_len():
    # one sequence's share of an H100's cache is 484,352 tokens, but vLLM refuses one longer than 256
    r = fit(Deployment(model="llama-3.1-8b", gpu="h100-sxm", max_model_len=256, concurrency=1))
    assert r.largest_context_tokens == 256 and "at most the 256-token max_model_len" in r.concurrency_note
    out = " ".join(runner.invoke(app, [*H100_256, "--concurrency", "1"], env={"COLUMNS": "200"}).stdout.split())
    assert "largest context at 1 concurrent sequences: 256 tokens, the max_model_len" in out


def test_fit_on_llamacpp_simulates_the_slots_it_is_started_with():
    # llama-server started with its one --parallel slot queues the other 3 of 4; simulate, which would start the
    # most slots that fit, is told the one slot fit planned
    out = runner.invoke(app, ["fit", "--model", "qwen3-8b", "--gpu", "rtx-4090", "--engine", "llamacpp", "-q", "q4_k_m",
                              "--max-model-len", "8192", "--concurrency", "4"], env={"COLUMNS": "80"}).stdout
    (line,) = [line.strip() for line in out.splitlines() if line.strip().startswith("inferplan simulate")]
    assert "--max-num-seqs 1 " in line and line.endswith("--clients 4"), line
    ran = runner.invoke(app, [*line.split()[1:], "--requests", "200", "--json"])
    assert ran.exit_code == 0 and json.loads(ran.stdout)["slots"] == 1


def _simulate_line(args: list[str]) -> str:
    out = runner.invoke(app, args, env={"COLUMNS": "80"}).stdout
    (line,) = [line.strip() for line in out.splitlines() if line.strip().startswith("inferplan simulate")]
    return line


def test_fit_on_a_llamacpp_build_with_one_unified_cache_simulates_the_parallel_it_launches():
    # b6925-b7432: --parallel 1 opens 4 slots over one cache of the context; simulate is told that --parallel 1,
    # not left to start the most separate slots that fit
    line = _simulate_line(["fit", "--model", "qwen3-30b-a3b", "--gpu", "rtx-3090", "-q", "q4_k_m", "--engine", "llamacpp",
                           "--engine-version", "b7000", "--max-model-len", "2500", "--concurrency", "8"])
    assert "--max-num-seqs 1 " in line and "--engine-version b7000" in line, line
    ran = runner.invoke(app, [*line.split()[1:], "--requests", "200", "--json"])
    assert ran.exit_code == 0 and json.loads(ran.stdout)["slots"] <= 4, ran.stdout


def test_fit_simulates_requests_that_fit_a_context_shorter_than_the_default_request():
    # a 1,024-token context holds no default request (1,024 + 256 tokens): the loop's requests are split to fit it
    line = _simulate_line(["fit", "--model", "llama-3.1-8b", "--gpu", "rtx-4090", "--max-model-len", "1024",
                           "--concurrency", "2000"])
    assert "--input-len 820 --output-len 204" in line, line
    ran = runner.invoke(app, [*line.split()[1:], "--requests", "300"])
    assert ran.exit_code == 0, ran.stdout
