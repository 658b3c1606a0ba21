"""What a search's picks promise holds end to end: every pick's launch command is produced, whatever
its length; the platforms, objectives and tie-breaks rank what a buyer or renter expects."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from inferplan.deploy.pools import pools_launch
from inferplan.inputs import MAX_TEXT_CHARS
from inferplan.inputs.deployment import Deployment
from inferplan.search.request import SearchRequest, Targets
from inferplan.search.run import search
from inferplan.shells.api import create_app

# a search whose picks include TensorRT-LLM separate pools, each with its launch script
LONG_SCRIPT_SEARCH = {"models": ["llama-3.3-70b"], "users": 500, "workload": "coding-developer-p90", "systems": ["dell-xe9680l"],
                      "targets": {"ttft_p95_s": 2, "min_output_tokens_per_s_per_user": 30}, "top": 4,
                      "speculative": False}  # its EAGLE-3 draft's picks do not run disaggregated


def test_a_launch_script_longer_than_an_input_text_is_an_output_not_refused(catalog):
    d = Deployment(model="llama-3.3-70b", gpu="b200", quantization="bf16", engine="trtllm", max_model_len=9216,
                   tensor_parallel_size=2)
    pools = pools_launch(catalog, d, d.model_copy(update={"max_num_seqs": 64}), prefill_instances=8,
                         decode_instances=8)  # 16 workers on one host: a line each
    assert len(pools.script) > MAX_TEXT_CHARS


def test_a_search_whose_pick_runs_separate_pools_answers_with_its_launch_script(tmp_path):
    client = TestClient(create_app(tmp_path / "t.db"))
    r = client.post("/api/search", json=LONG_SCRIPT_SEARCH)
    assert r.status_code == 200, r.text[:400]
    scripts = [p["deploy"] for p in r.json()["results"] if p["disaggregated"]]
    assert scripts and all("--server_role context" in s and "--server_role generation" in s
                           and s.endswith("trtllm-serve disaggregated -c disagg_config.yaml") for s in scripts), scripts


@pytest.mark.slow  # a search over many cells (CI runs it; the fast tier leaves it out)
def test_every_llamacpp_pick_across_systems_comes_with_its_launch_command(catalog):
    """llama.cpp takes one --split-mode (row or layer): a search offers only layouts it launches."""
    req = SearchRequest(models=("qwen3-235b-a22b-2507",), request_rate_per_s=0.2, input_len=8192, output_len=1024,
                        targets=Targets(ttft_p95_s=10), engines=("llamacpp",), quantizations=("gguf-q4_k_m",), top=1000)
    result = search(req, catalog)
    assert len(result.results) > 20
    assert any(r.tensor_parallel_size > 1 for r in result.results) and any(r.pipeline_parallel_size > 1 for r in result.results)
    refused = [(r.platform, r.tensor_parallel_size, r.pipeline_parallel_size) for r in result.results
               if r.deploy.startswith("no launch command")]
    assert not refused
    assert all(r.tensor_parallel_size == 1 or r.pipeline_parallel_size == 1 for r in result.results)


def test_the_default_search_rents_gpus_one_by_one_where_that_is_cheapest(catalog):
    """Buy or rent (the default) covers every way --rent alone would pay: two RTX PRO 6000 GPUs rented
    one by one here beat any whole system rented, or bought within a $4,000 cap; the same GPUs rented from
    a workstation's listing tie with them and give way to the bare GPUs (``ranking.Pick``)."""
    req = SearchRequest(models=("llama-3.3-70b",), request_rate_per_s=0.3, input_len=2000, output_len=400,
                        targets=Targets(ttft_p95_s=1, tpot_p95_s=0.04), engines=("vllm",), disaggregated=False, top=1,
                        max_capex_usd=4000.0, speculative=False)  # buying against renting, without drafts
    both = search(req, catalog).results[0]
    rent = search(req.model_copy(update={"pricing": "rent"}), catalog).results[0]
    assert both.system is None and both.rent_or_buy == "rent"
    assert both.monthly_usd <= rent.monthly_usd * (1 + 1e-9)


SMALL = dict(models=("qwen3-32b",), request_rate_per_s=4.0, input_len=1500, output_len=300, engines=("vllm",),
             targets=Targets(ttft_p95_s=1.5, ttft_p99_s=3.0, tpot_p95_s=0.04))


@pytest.mark.slow  # a search over many cells (CI runs it; the fast tier leaves it out)
def test_the_gpus_objective_counts_the_gpus_paid_for_as_the_gpu_cap_does(catalog):
    """One GPU of a 72-GPU rack is 72 GPUs bought: an 8-GPU server ranks before it, and a cap of 8
    GPUs leaves the rack out."""
    req = SearchRequest(**SMALL, systems=("gb300-nvl72", "hgx-h100"), objective="gpus", top=50)
    res = search(req, catalog)
    paid = [r.gpus_paid for r in res.results]
    assert paid == sorted(paid) and res.results[0].system == "hgx-h100"
    assert all(r.gpus_paid >= r.gpus for r in res.results)
    rack = search(req.model_copy(update={"systems": ("gb300-nvl72",), "pricing": "buy", "top": 3}), catalog).results
    assert rack and all(r.gpus_paid % 72 == 0 and r.whole_rack for r in rack)
    capped = search(req.model_copy(update={"max_gpus": 8, "systems": ("hgx-h100",)}), catalog)
    assert capped.results and all(r.gpus_paid <= 8 for r in capped.results)


@pytest.mark.slow  # a search over many cells (CI runs it; the fast tier leaves it out)
def test_equal_cost_picks_rank_by_the_shorter_slow_request_not_the_fewer_gpus_used(catalog):
    """On one bought server every layout costs the same: the one with more headroom (a request that
    starts at the TTFT p99 and steps at the TPOT p95 ends sooner) ranks first, not the one leaving
    more of the paid-for GPUs idle."""
    res = search(SearchRequest(**SMALL, systems=("hgx-h100",), pricing="buy", top=50), catalog)
    same = [r for r in res.results if (r.monthly_usd, r.gpus_paid) == (res.results[0].monthly_usd, res.results[0].gpus_paid)]
    slow = [r.ttft_p99_s + 300 * r.tpot_p95_s for r in same]
    assert len(same) > 2
    assert slow == sorted(slow)


def test_capex_ranks_purchases_only_and_says_so(catalog):
    res = search(SearchRequest(**SMALL, systems=None, accelerators=None, objective="capex", top=5), catalog)
    assert res.results and all(r.rent_or_buy == "buy" and r.capex_usd > 0 for r in res.results)
    capex = [r.capex_usd for r in res.results]
    assert capex == sorted(capex)
    assert any("purchases only" in n for n in res.notes)


def test_gpus_rented_one_by_one_are_labelled_with_all_of_them(catalog):
    res = search(SearchRequest(**SMALL, accelerators=("b200", "h100-sxm"), top=40), catalog)
    bare = [r for r in res.results if r.system is None]
    assert bare and any(r.gpus > r.gpus_per_instance for r in bare)
    assert all(r.platform == f"{r.gpus}x-{r.accelerator}" and r.gpus == r.gpus_paid for r in bare)


def test_the_front_drops_points_that_buy_almost_no_speed_and_breaks_price_ties_by_speed(catalog):
    res = search(SearchRequest(**SMALL, systems=("hgx-h100", "gb300-nvl72"), top=3), catalog)
    front = res.pareto
    assert len(front) > 2
    for cheap, dear in zip(front, front[1:]):
        assert dear.usd_per_mtok > cheap.usd_per_mtok
        assert dear.output_tokens_per_s_per_user >= cheap.output_tokens_per_s_per_user * 1.01


def test_gpus_paid_beyond_those_run_on_are_said_and_a_rack_is_priced_whole():
    from inferplan.report.search_view import gpus_text

    assert gpus_text(52, 56, 7, False) == "52 GPUs in 7 systems (56 paid for)"
    assert gpus_text(1, 72, 1, True) == "1 GPU in 1 system (the whole rack's 72 GPUs priced)"
    assert gpus_text(8, 8, 1, False) == "8 GPUs in 1 system"


def test_a_context_planned_at_the_mean_request_says_longer_ones_are_refused(catalog):
    from inferplan.report.search_view import deployment_text

    req = SearchRequest(**SMALL, systems=("hgx-h100",), top=2)
    res = search(req, catalog)
    assert res.results and all(r.context_at_mean_request and r.max_model_len == 1800 for r in res.results)
    assert "refuses any longer request" in deployment_text(res.results[0])
    assert any("planned at the mean lengths" in n for n in res.notes)
    spread = search(req.model_copy(update={"input_tokens_scv": 0.5, "output_tokens_scv": 0.5}), catalog)
    assert spread.results and not any(r.context_at_mean_request for r in spread.results)
    assert not any("planned at the mean lengths" in n for n in spread.notes)


def test_search_cli_errors_share_one_prefix_and_the_engines_help_names_every_engine(catalog):
    from typer.testing import CliRunner

    from inferplan.shells.cli import app

    runner = CliRunner()
    base = ["search", "--request-rate", "1", "--input-len", "10", "--output-len", "10"]
    for args, flag in ((["--model", "qwen3-8b", "--ttft-p95", "-1"], "--ttft-p95"), (["--model", "qwen3-235b"], "--model")):
        r = runner.invoke(app, [*base, *args])
        assert r.exit_code == 2 and r.output.startswith(f"error: {flag}:"), r.output
    help_text = " ".join(runner.invoke(app, ["search", "--help"], env={"COLUMNS": "300"}).output.split())
    line = next(part for part in help_text.split("--") if part.startswith("engines"))
    assert all(e.id in line for e in catalog.engines), line


def test_a_missed_target_is_shown_with_the_digits_that_tell_it_from_the_limit():
    from inferplan.search.reasons import miss_text

    assert miss_text("TTFT p99", 3.004, 3.0, "s", "over") == "TTFT p99 at best 3.004 s against 3 s (0.13% over)"
    assert miss_text("TTFT p95", 2.4, 2.0, "s", "over") == "TTFT p95 at best 2.4 s against 2 s (20% over)"
    text = miss_text("tokens/s per user (p95)", 29.99999, 30.0, "tok/s", "under")
    assert "29.99999 tok/s against 30 tok/s (less than 0.01% under)" in text


def test_the_targets_applied_are_echoed_with_units_and_an_absurd_one_is_flagged():
    from inferplan.search.reasons import targets_text

    said = targets_text(Targets(ttft_p95_s=2000, min_output_tokens_per_s_per_user=30))
    assert said[0] == "targets applied: TTFT p95 ≤ 2000 s; tokens/s per user (p95) ≥ 30 tok/s"
    assert len(said) == 2 and "over 60 s" in said[1] and "2000 ms would be 2 s" in said[1]
    assert targets_text(Targets(ttft_p95_s=2, tpot_p95_s=0.05)) == ("targets applied: TTFT p95 ≤ 2 s; TPOT p95 ≤ 0.05 s",)


def test_a_search_of_several_models_reports_its_progress_over_every_cell(catalog):
    """The CLI's progress bar (shown once modelling has run for a second) is fed for every model searched."""
    from inferplan.search.budget import CHECK_STAGE, MODEL_STAGE

    calls: list[tuple] = []
    req = SearchRequest(models=("qwen3-8b", "qwen3-32b"), request_rate_per_s=1.0, input_len=500, output_len=100,
                        systems=("hgx-h100",), engines=("vllm",), kv_cache_dtypes=("auto",), disaggregated=False, top=2)
    res = search(req, catalog, progress=lambda *call: calls.append(call))
    assert {len(c) for c in calls} == {3}  # each call names its stage, as a progress bar (CLI, API stream) says it
    cells = [c[:2] for c in calls if c[2] == MODEL_STAGE]
    assert cells[-1] == (res.cells, res.cells) and len(cells) == res.cells + 1
    assert [d for d, _ in cells] == sorted(d for d, _ in cells)
    checks = [c for c in calls if c[2] != MODEL_STAGE]  # then the simulation's check of each pick, as its own stage
    assert checks and all(stage == CHECK_STAGE and total == 2 for _, total, stage in checks)
    assert calls.index(checks[0]) > calls.index((res.cells, res.cells, MODEL_STAGE))


def test_a_one_gpu_system_rented_per_gpu_and_that_gpu_rented_are_one_pick(catalog):
    """The RTX 5090 workstation rented per GPU and one rented RTX 5090 run and cost the same: the
    ranking keeps one of them, not both."""
    from inferplan.search.run import search

    req = SearchRequest(models=("qwen3-8b",), users=20, engines=("llamacpp",), quantizations=("gguf-q4_k_m",),
                        kv_cache_dtypes=("auto",), top=10)
    res = search(req, catalog)
    seen = [(r.accelerator, r.gpus, r.engine, r.quantization, r.tensor_parallel_size, r.pipeline_parallel_size,
             r.rent_or_buy, round(r.monthly_usd, 2)) for r in res.results]
    assert res.results and len(seen) == len(set(seen)), seen
