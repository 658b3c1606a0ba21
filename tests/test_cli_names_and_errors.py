"""How the CLI reads names and reports errors: near-miss names are refused
with the closest ids, never taken as another entry; a --json run reports its error as JSON too."""

import json

import pytest
from typer.testing import CliRunner

from inferplan.shells.cli import app

runner = CliRunner()


def invoke(*args):
    return runner.invoke(app, list(args))


@pytest.mark.parametrize(("flag", "value", "closest"), [
    ("--quantization", "fp3", "fp32"),          # once ran as fp32
    ("--model", "qwen3-2", "qwen3-32b"),        # once ran qwen3-235b-a22b
    ("--model", "llama-3.1-40", "llama-3.1-405b"),  # once ran llama-3.1-405b
])
def test_part_of_a_word_is_not_a_name(flag, value, closest):
    r = invoke("fit", "--model", "llama-3.1-8b", "--gpu", "H100", flag, value, "--json")
    assert r.exit_code == 2
    error = json.loads(r.stdout)["error"]
    assert error["field"] == flag and closest in error["allowed"] and value in error["message"]


def test_whole_words_still_find_a_name():
    r = invoke("fit", "--model", "Qwen3 32B", "--gpu", "H200", "--json")
    assert r.exit_code == 0 and json.loads(r.stdout)["model"] == "qwen3-32b"
    # two releases share these words (the original and the 2507 re-release): both are offered
    r = invoke("fit", "--model", "Qwen3 235B", "--gpu", "H200", "--json")
    assert r.exit_code == 2
    assert json.loads(r.stdout)["error"]["allowed"] == "qwen3-235b-a22b, qwen3-235b-a22b-2507"


def test_a_json_run_reports_a_bad_flag_as_json():
    r = invoke("perf", "--model", "llama-3.1-8b", "--gpu", "h100", "--input-len", "0", "--json")
    assert r.exit_code == 2 and json.loads(r.stdout)["error"]["field"] == "--input-len"
    plain = invoke("perf", "--model", "llama-3.1-8b", "--gpu", "h100", "--input-len", "0")
    assert plain.exit_code == 2 and "error" not in plain.stdout


def test_case_of_backend_and_currency_does_not_matter():
    r = invoke("perf", "--model", "qwen3-8b", "--gpu", "RTX 4090", "--engine", "llamacpp", "-q", "q4_k_m", "--backend", "CUDA", "--json")
    assert r.exit_code == 0, r.output
    r = invoke("plan", "examples/chat-seats-h100.yaml", "--draws", "0", "--currency", "EUR")
    assert r.exit_code == 0 and "€" in r.stdout


def test_a_blank_import_path_is_refused():
    r = invoke("model", "import", "")
    assert r.exit_code == 2 and "PATH" in r.output


def test_fits_on_a_system_reports_the_smallest_fit_not_the_node():
    r = invoke("fits", "--models", "llama-3.1-8b", "--systems", "hgx-h100", "--quantizations", "fp8", "--json")
    cell = json.loads(r.stdout)["cells"][0]
    assert cell["result"]["parallel"]["tensor_parallel_size"] == 8  # one instance across the node
    assert cell["smallest_fit"]["gpus"] == 1  # but one H100 holds it


def test_perf_counts_only_the_requests_that_exist_across_replicas():
    r = json.loads(invoke("perf", "--model", "llama-3.1-8b", "--system", "hgx-h100", "--json").stdout)
    assert r["concurrency"] == 1 and r["output_tokens_per_s_total"] <= r["output_tokens_per_s_per_user"]
    r = json.loads(invoke("perf", "--model", "llama-3.3-70b", "--gpu", "H100", "--gpus", "4", "-tp", "2", "-dp", "2",
                          "-q", "fp8", "--concurrency", "3", "--json").stdout)
    assert r["output_tokens_per_s_total"] <= 3 * r["output_tokens_per_s_per_user"] + 1e-9


def test_fit_concurrency_that_leaves_no_context_is_refused():
    # 1,000 sequences, all running at once (below the engine's 1,024), share a 4,096-token cache: none holds a block
    r = invoke("fit", "--model", "llama-3.3-70b", "--gpu", "H100", "-tp", "2", "-q", "fp8", "--concurrency", "1000",
               "--gpu-memory-utilization", "0.48", "--max-model-len", "1024")
    assert r.exit_code == 2 and "--concurrency" in r.output and "--max-num-seqs at most 64" in r.output


def test_fits_sizes_a_short_context_model_at_its_own_context_unless_told():
    cell = json.loads(invoke("fits", "--models", "llama-2-7b", "--gpus", "h100", "--json").stdout)["cells"][0]
    assert cell["error"] is None and cell["result"]["max_model_len"] == 4096
    told = json.loads(invoke("fits", "--models", "llama-2-7b", "--gpus", "h100", "--max-model-len", "8192", "--json").stdout)
    assert told["cells"][0]["result"] is None and "4,096" in told["cells"][0]["error"]
