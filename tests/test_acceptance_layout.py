"""An acceptance pack is one deployment throughout: the instance its launch command starts is the one its
predictions describe and its import line stores the runs as (resolved tensor, pipeline, data and expert
parallel sizes), and a search pick's layout and running cap can be stated to it as to deploy and perf."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

from typer.testing import CliRunner

from inferplan.shells.cli import app

DATA = Path(__file__).parent / "data" / "measurements"
# Qwen3-235B in FP8 on a Dell XE9680L (8x B200) with TensorRT-LLM: the system named alone runs copies of TP2
QWEN = ["--model", "qwen3-235b-a22b", "--system", "dell-xe9680l", "--engine", "trtllm", "-q", "fp8", "--kv-cache-dtype", "fp8",
        "--max-model-len", "16384"]
runner = CliRunner()


def cli(*args):
    return runner.invoke(app, [str(a) for a in args])


def _pack(tmp_path, *flags):
    r = cli("acceptance", *QWEN, *flags, "--workload", "coding-developer-median", "--out", tmp_path / "pack", "--json")
    assert r.exit_code == 0, r.output
    readme = (tmp_path / "pack" / "README.md").read_text()
    line = next(x for x in readme.splitlines() if "measurements import" in x)
    return (json.loads(r.stdout)["pack"], (tmp_path / "pack" / "launch.sh").read_text(),
            json.loads((tmp_path / "pack" / "predictions.json").read_text()), readme, shlex.split(line))


def _flag(argv: list[str], name: str) -> str:
    return argv[argv.index(name) + 1]


def test_a_system_of_copies_launches_predicts_and_imports_the_one_copy_it_starts(tmp_path):
    pack, launch, predictions, readme, imported = _pack(tmp_path)
    tp = int(re.search(r"--tp_size (\d+)", launch).group(1))
    layout = predictions["layout"]
    assert tp == 2 and layout["tensor_parallel_size"] == tp and layout["data_parallel_size"] == 1 and layout["gpus"] == 2
    assert predictions["deployment"]["tensor_parallel_size"] == tp and predictions["deployment"]["gpus"] == 2
    assert (_flag(imported, "-tp"), _flag(imported, "-dp"), _flag(imported, "--gpus"), _flag(imported, "--gpu")) == \
        ("2", "1", "2", "b200")
    assert "one of 4 copies" in readme and any("one of 4 copies" in n for n in pack["notes"])  # deploy's note kept
    # the load tests stop at what one TP2 copy's KV cache holds, and each prediction is that copy's
    one = cli("perf", "--model", "qwen3-235b-a22b", "--system", "dell-xe9680l", "--gpus", 2, "-tp", 2, "--engine", "trtllm",
              "-q", "fp8", "--kv-cache-dtype", "fp8", "--max-model-len", 16384, "--input-len", 8192, "--output-len", 8192,
              "--concurrency", max(pack["concurrencies"]), "--json")
    assert one.exit_code == 0, one.output
    top = predictions["predictions"][-1]
    assert 256 not in pack["concurrencies"] and top["tpot_s"] == json.loads(one.stdout)["tpot_s"]
    # the import line stores the runs as that copy
    stored = cli("measurements", "import", DATA / "vllm_bench_serve_c8.json", *imported[4:], "--db", tmp_path / "runs.db",
                 "--json")
    assert stored.exit_code == 0, stored.output
    run = json.loads(stored.stdout)["imported"][0]
    assert (run["gpus"], run["tensor_parallel_size"], run["pipeline_parallel_size"], run["data_parallel_size"]) == (2, 2, 1, 1)


def test_a_search_picks_data_and_expert_parallel_layout_and_cap_are_acceptance_tested_as_planned(tmp_path):
    """The search's Qwen3-235B pick on this system: DP8 + EP8 with TensorRT-LLM's attention DP, 87 sequences a rank."""
    _, launch, predictions, _, imported = _pack(tmp_path, "-dp", 8, "--enable-expert-parallel", "--max-num-seqs", 87)
    assert "--ep_size 8" in launch and "--max_batch_size 87" in launch and "enable_attention_dp: true" in launch
    layout = predictions["layout"]
    assert (layout["data_parallel_size"], layout["expert_parallel"], layout["gpus"]) == (8, True, 8)
    assert predictions["deployment"]["max_num_seqs"] == 87
    assert _flag(imported, "-dp") == "8" and "--enable-expert-parallel" in imported and _flag(imported, "--gpus") == "8"


def test_a_llamacpp_pack_imports_at_the_context_it_launched_so_every_level_has_a_prediction(tmp_path):
    """llama.cpp's slots are cut from one context: runs stored at the model's own context would hold one slot
    and predict nothing above concurrency 1, so the import line states the pack's max_model_len."""
    r = cli("acceptance", "--model", "qwen3-30b-a3b", "--gpu", "rtx-4090", "--engine", "llamacpp", "-q", "gguf-q4_k_m",
            "--max-num-seqs", 8, "--workload", "chat-seat", "--out", tmp_path / "pack", "--json")
    assert r.exit_code == 0, r.output
    predictions = json.loads((tmp_path / "pack" / "predictions.json").read_text())
    line = next(x for x in (tmp_path / "pack" / "README.md").read_text().splitlines() if "measurements import" in x)
    imported = shlex.split(line)
    assert _flag(imported, "--max-model-len") == str(predictions["deployment"]["max_model_len"])
    db = tmp_path / "runs.db"
    stored = cli("measurements", "import", DATA / "vllm_bench_serve_c8.json", *imported[4:], "--db", db, "--json")
    assert stored.exit_code == 0, stored.output
    shown = cli("measurements", "show", json.loads(stored.stdout)["imported"][0]["id"], "--db", db)
    assert shown.exit_code == 0, shown.output
    assert "no prediction" not in shown.output and "predicted" in shown.output
