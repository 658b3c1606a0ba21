"""An acceptance pack takes deploy's speculative-decoding and offload flags: a search pick that drafts with MTP
and a home plan that keeps experts in host RAM are launched, predicted and imported as planned: ``validate --mine``
predicts the imported run as the pack did."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

from typer.testing import CliRunner

from inferplan.shells.cli import app

from acceptance_runs import compared, predicted, run_the_import_line

DATA = Path(__file__).parent / "data" / "measurements"
runner = CliRunner()


def cli(*args):
    return runner.invoke(app, [str(a) for a in args])


def _pack(tmp_path, *flags):
    r = cli("acceptance", *flags, "--out", tmp_path / "pack", "--json")
    assert r.exit_code == 0, r.output
    readme = (tmp_path / "pack" / "README.md").read_text().splitlines()
    at = next(i for i, x in enumerate(readme) if "measurements import" in x)
    return (json.loads(r.stdout)["pack"], (tmp_path / "pack" / "launch.sh").read_text(),
            json.loads((tmp_path / "pack" / "predictions.json").read_text()), shlex.split(readme[at]),
            " ".join(x for x in readme[at + 1:at + 3] if x.strip().startswith("#")))


def _flag(argv: list[str], name: str) -> str:
    return argv[argv.index(name) + 1]


def _perf(*flags) -> dict:
    r = cli("perf", *flags, "--json")
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


def _imports(tmp_path, imported: list[str]) -> dict:
    stored = cli("measurements", "import", DATA / "vllm_bench_serve_c8.json", *imported[4:], "--db", tmp_path / "runs.db",
                 "--json")
    assert stored.exit_code == 0, stored.output
    return json.loads(stored.stdout)["imported"][0]


def test_a_deepseek_r1_search_pick_drafting_with_mtp_is_acceptance_tested_as_planned(tmp_path):
    found = cli("search", "--model", "deepseek-r1", "--users", 100, "--workload", "coding-developer-median",
                "--systems", "hgx-b200", "--top", 1, "--json")
    assert found.exit_code == 0, found.output
    pick = json.loads(found.stdout)["results"][0]
    assert pick["speculative_tokens"] >= 1  # the pick drafts
    flags = ["--model", "deepseek-r1", "--system", pick["system"], "--gpus", pick["gpus_per_instance"],
             "-tp", pick["tensor_parallel_size"], "-pp", pick["pipeline_parallel_size"], "-dp", pick["data_parallel_size"],
             *(["--enable-expert-parallel"] if pick["expert_parallel"] else []), "-q", pick["quantization"],
             "--kv-cache-dtype", pick["kv_cache_dtype"], "--engine", pick["engine"], "--max-num-seqs", pick["max_num_seqs_per_rank"],
             "--max-model-len", pick["max_model_len"]]
    _, launch, predictions, imported, comment = _pack(tmp_path, *flags, "--speculative-tokens", pick["speculative_tokens"],
                                                      "--workload", "coding-developer-median")
    assert launch.split("mkdir -p results\n", 1)[1].strip() == pick["deploy"].strip()  # the pick's own launch, drafts and all
    assert predictions["speculative"] == {"method": "mtp", "tokens": pick["speculative_tokens"]}
    level = predictions["predictions"][-1]
    perf = _perf(*flags, "--speculative-tokens", pick["speculative_tokens"], "--input-len", level["input_tokens"],
                 "--output-len", level["output_tokens"], "--concurrency", level["concurrency"])
    assert level["tpot_s"] == perf["tpot_s"] and level["ttft_s"] == perf["ttft_s"]
    assert _flag(imported, "--max-model-len") == str(pick["max_model_len"]) and _flag(imported, "-tp") == str(pick["tensor_parallel_size"])
    assert not comment and _flag(imported, "--speculative-tokens") == str(pick["speculative_tokens"])
    assert (_flag(imported, "--kv-cache-dtype"), _flag(imported, "--max-num-seqs")) == \
        (pick["kv_cache_dtype"], str(pick["max_num_seqs_per_rank"]))
    run = run_the_import_line(tmp_path / "pack", predictions, imported, tmp_path / "runs.db")
    assert (run["tensor_parallel_size"], run["max_model_len"], run["engine"], run["speculative_method"], run["kv_cache_dtype"],
            run["max_num_seqs"]) == (pick["tensor_parallel_size"], pick["max_model_len"], pick["engine"], "mtp",
                                     pick["kv_cache_dtype"], pick["max_num_seqs_per_rank"])
    assert compared(tmp_path / "runs.db") == predicted(predictions)  # validate --mine predicts the run as the pack did


def test_a_llamacpp_plan_with_experts_in_host_ram_is_acceptance_tested_as_planned(tmp_path):
    flags = ["--model", "qwen3-235b-a22b", "--gpu", "rtx-4090", "--engine", "llamacpp", "-q", "gguf-q4_k_m",
             "--n-cpu-moe", 90, "--host-memory-gb", 192]
    pack, launch, predictions, imported, comment = _pack(tmp_path, *flags, "--workload", "chat-seat")
    argv = shlex.split(launch.splitlines()[-1])
    assert _flag(argv, "--n-cpu-moe") == "90"
    deployment = predictions["deployment"]
    assert (deployment["n_cpu_moe"], deployment["host_memory_gb"]) == (90, 192)
    level = predictions["predictions"][-1]
    slots, context = int(_flag(argv, "--parallel")), int(_flag(argv, "--ctx-size"))
    assert context == slots * deployment["max_model_len"] and level["concurrency"] <= slots
    perf = _perf(*flags, "--max-model-len", deployment["max_model_len"], "--max-num-seqs", slots,
                 "--input-len", level["input_tokens"], "--output-len", level["output_tokens"], "--concurrency", level["concurrency"])
    assert level["tpot_s"] == perf["tpot_s"]
    assert _flag(imported, "--max-model-len") == str(deployment["max_model_len"])
    assert (_flag(imported, "--n-cpu-moe"), _flag(imported, "--host-memory-gb")) == ("90", "192.0") and not comment
    run = _imports(tmp_path, imported)  # stored as the offload it ran with
    assert (run["max_model_len"], run["n_cpu_moe"], run["host_memory_gb"]) == (deployment["max_model_len"], 90, 192)
    shown = cli("measurements", "show", run["id"], "--db", tmp_path / "runs.db", "--json")
    assert shown.exit_code == 0, shown.output
    point = json.loads(shown.stdout)["points"][0]
    assert point["problem"] is None and all(m["predicted"] is not None for m in point["metrics"])  # predicted with the offload
    # perf plans on the stored run for the offload it ran with, and not for another
    at = ["--model", "qwen3-235b-a22b", "--gpu", "rtx-4090", "--engine", "llamacpp", "-q", "gguf-q4_k_m", "--host-memory-gb", 192,
          "--max-model-len", deployment["max_model_len"], "--input-len", 1024, "--output-len", 256, "--concurrency", 8,
          "--db", tmp_path / "runs.db"]
    assert _perf(*at, "--n-cpu-moe", 90)["source"] == "measured-local"
    assert _perf(*at, "--n-cpu-moe", 94)["source"] == "calibrated-model"


def test_an_acceptance_rate_without_draft_tokens_is_refused_by_its_flag(tmp_path):
    r = cli("acceptance", "--model", "qwen3-30b-a3b", "--gpu", "h100", "--acceptance-rate", 0.8, "--workload", "chat-seat",
            "--out", tmp_path / "pack")
    assert r.exit_code == 2 and "--acceptance-rate" in r.output
