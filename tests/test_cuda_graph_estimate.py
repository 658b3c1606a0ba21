"""vLLM's CUDA-graph estimate (0.20 and later): first capture + per-graph increase × (graphs − 1) per
cudagraph mode, the graphs counted from the capture-size list that max_num_seqs bounds; bytes per graph
where a source prints them (engine_memory_rules.yaml cuda_graph_estimate), else the flat constant."""

import shutil

import pytest
import yaml

from inferplan.catalog.loader import DATA_DIR, load_catalog, load_files
from inferplan.catalog.memory_rules import memory_rule
from inferplan.errors import InvalidScenarioError
from inferplan.inputs.deployment import Deployment
from inferplan.memory.cuda_graphs import capture_sizes, graphs_by_mode
from inferplan.memory.fit import fit

CATALOG = load_catalog()
RULE = memory_rule(CATALOG, "vllm", "0.22.0")
DSV4 = Deployment(model="deepseek-v4-flash", gpu="h100-sxm", tensor_parallel_size=4, max_model_len=16384,
                  engine_version="0.22.0")


def test_the_capture_sizes_follow_the_engines_default_list():
    # config/vllm.py: [1, 2, 4] + range(8, 256, 8) + range(256, min(2 x max_num_seqs, 512) + 1, 16)
    sizes = RULE.cuda_graph_estimate.capture_sizes
    assert len(capture_sizes(sizes, 1024, 8192)) == 51  # what vllm#50576 prints: PIECEWISE=51
    assert capture_sizes(sizes, 8, 8192) == [1, 2, 4, 8, 16]
    assert capture_sizes(sizes, 1024, 100) == [1, 2, 4, *range(8, 97, 8), 100]  # max_num_batched_tokens caps and is captured
    assert graphs_by_mode(RULE.cuda_graph_estimate, 64, 8192) == {"PIECEWISE": 19, "FULL": 11}  # FULL: sizes <= 64


def test_deepseek_v4_graphs_are_the_engines_formula_and_move_with_max_num_seqs_and_eager():
    per = RULE.cuda_graph_estimate.bytes_for("deepseek_v4").bytes_per_graph
    default = fit(DSV4, CATALOG)
    assert default.cuda_graph_bytes_per_gpu == pytest.approx(per * (1 + 50 + 50))  # FULL_AND_PIECEWISE, 51 each
    assert any("PIECEWISE=51, FULL=51" in a and "mr-vllm-issue50576-dsv4-graphs" in a for a in default.assumptions)
    fewer = fit(DSV4.model_copy(update={"max_num_seqs": 64}), CATALOG)
    assert fewer.cuda_graph_bytes_per_gpu == pytest.approx(per * (1 + 18 + 10))
    eager = fit(DSV4.model_copy(update={"enforce_eager": True}), CATALOG)
    assert eager.cuda_graph_bytes_per_gpu == 0
    assert eager.kv_cache_bytes_per_gpu == pytest.approx(default.kv_cache_bytes_per_gpu + default.cuda_graph_bytes_per_gpu)


def test_a_model_without_a_sourced_figure_keeps_the_flat_estimate_and_says_so():
    r = fit(Deployment(model="llama-3.1-8b", gpu="h100-sxm", engine_version="0.22.0"), CATALOG)
    assert r.cuda_graph_bytes_per_gpu == CATALOG.constant("vllm-cudagraph-estimate-bytes-per-gpu")
    assert any("flat estimate vllm-cudagraph-estimate-bytes-per-gpu" in a for a in r.assumptions)


def test_the_per_graph_figure_removed_from_the_data_falls_back_to_the_flat_estimate(tmp_path):
    rules = DATA_DIR / "engine_memory_rules.yaml"
    data = yaml.safe_load(rules.read_text())
    for r in data["memory_rules"]:
        if r.get("cuda_graph_estimate"):
            r["cuda_graph_estimate"]["per_graph"] = []
    folder = tmp_path / "data"
    shutil.copytree(DATA_DIR, folder)
    (folder / rules.name).write_text(yaml.safe_dump(data, sort_keys=False))
    unwired = load_files(sorted(folder.glob("**/*.yaml")), data_dir=folder)
    r = fit(DSV4, unwired)
    assert r.cuda_graph_bytes_per_gpu == unwired.constant("vllm-cudagraph-estimate-bytes-per-gpu")


def test_enforce_eager_is_launched_and_refused_where_the_engine_has_no_such_flag():
    from typer.testing import CliRunner

    from inferplan.shells.cli import app

    runner = CliRunner()
    launched = runner.invoke(app, ["deploy", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--enforce-eager"])
    assert launched.exit_code == 0 and "--enforce-eager" in launched.stdout
    with pytest.raises(InvalidScenarioError) as err:
        fit(Deployment(model="llama-3.1-8b", gpu="h100-sxm", engine="sglang", enforce_eager=True), CATALOG)
    assert err.value.field == "enforce_eager"


def test_an_eager_start_reserves_no_graphs_after_the_kv_cache_either():
    # 0.17-0.19 capture the graphs after the KV cache is sized, out of the headroom the fraction leaves
    d = Deployment(model="llama-3.1-8b", gpu="h100-sxm", engine_version="0.17.0", gpu_memory_utilization=0.99)
    graphs, eager = fit(d, CATALOG), fit(d.model_copy(update={"enforce_eager": True}), CATALOG)
    pool = CATALOG.constant("vllm-v019-cudagraph-pool-bytes-per-gpu")
    assert eager.startup_shortfall_bytes_per_gpu > 0
    assert graphs.startup_shortfall_bytes_per_gpu - eager.startup_shortfall_bytes_per_gpu == pytest.approx(pool)


def test_speculative_decoding_scales_the_capture_sizes_by_the_decode_query_length():
    # 0.22.0: largest = min(max_num_seqs x (1 + drafts) x 2, 512); with FULL decode graphs every size rounds up
    # to a multiple of 1 + drafts (adjust_cudagraph_sizes_for_spec_decode); FULL keys from 4 to 48 x 4 tokens
    sizes = capture_sizes(RULE.cuda_graph_estimate.capture_sizes, 48, 8192, 4, full_decode=True)
    assert sizes == [4, *range(8, 256, 8), *range(256, 385, 16)]
    assert graphs_by_mode(RULE.cuda_graph_estimate, 48, 8192, 4) == {"PIECEWISE": 41, "FULL": 25}
    assert graphs_by_mode(RULE.cuda_graph_estimate, 48, 8192) == {"PIECEWISE": 15, "FULL": 9}


def test_a_speculative_plan_counts_the_graphs_the_engine_captures_for_its_decode_query():
    from inferplan.memory.suggest import fit_or_suggest

    per = RULE.cuda_graph_estimate.bytes_for("deepseek_v4").bytes_per_graph
    d = DSV4.model_copy(update={"max_num_seqs": 48, "gpu": "h200"})
    plain = fit_or_suggest(d, CATALOG)
    drafted = fit_or_suggest(d, CATALOG, speculative_tokens=3)
    assert plain.cuda_graph_bytes_per_gpu == pytest.approx(per * (1 + 14 + 8))
    assert drafted.cuda_graph_bytes_per_gpu == pytest.approx(per * (1 + 40 + 24))
    assert any("PIECEWISE=41, FULL=25" in a for a in drafted.assumptions)
