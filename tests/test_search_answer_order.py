"""The failed families' groups lead with the nearest miss: a reason's groups stay together, the reasons measured
against a limit the request states (budget, latency) first, then the reason that fails most families first, and
within a reason the group nearest the request first (under a capex cap the cheapest machine, for a missed target
the smallest miss), whatever the groups' sizes. Beside results the terminal shows each reason's first groups."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from inferplan.search.answer import _groups
from inferplan.search.result import Infeasible
from inferplan.shells.cli import app


def fam(platform, reason, message, shortfall=None, engine="vllm"):
    return Infeasible(model="m", platform=platform, engine=engine, quantization="q", reason=reason, message=message,
                      shortfall=shortfall)


def test_a_small_group_nearest_the_budget_leads_a_large_far_one():
    far = [fam(f"big-{i}", "budget", "costs at least $575,000", 383.3) for i in range(8)]
    near = [fam("desk", "budget", "costs at least $1,999", 1.33)]
    middle = [fam("spark", "budget", "costs at least $4,699", 3.13, e) for e in ("vllm", "sglang")]
    groups = _groups((*far, *middle, *near, fam("x", "budget", "fits no cap at once")))
    assert [g.message for g in groups] == ["costs at least $1,999", "costs at least $4,699", "costs at least $575,000",
                                           "fits no cap at once"]  # none measured: last
    assert [g.shortfall for g in groups] == [1.33, 3.13, 383.3, None]


def test_a_reason_s_groups_stay_together_the_reason_failing_most_first_and_the_smallest_miss_first():
    latency = [fam("a", "latency", "27% under", 1.37), fam("b", "latency", "5% under", 1.05),
               *(fam(f"c{i}", "latency", "43% under", 1.76) for i in range(3))]
    memory = [fam(f"m{i}", "memory", "does not fit") for i in range(2)] + [fam("n", "memory", "needs 2 systems")]
    groups = _groups((*memory, *latency))
    assert [(g.reason, g.message) for g in groups] == [
        ("latency", "5% under"), ("latency", "27% under"), ("latency", "43% under"),
        ("memory", "does not fit"), ("memory", "needs 2 systems")]  # no measured distance: larger first


def test_over_budget_the_cli_and_the_json_lead_with_the_cheapest_machine():
    args = ["search", "--model", "qwen3-30b-a3b", "--users", "1", "--max-capex", "1500", "--buy",
            "--systems", "framework-desktop,dgx-spark,hgx-h100", "--engines", "llamacpp,vllm"]
    out = CliRunner().invoke(app, [*args, "--json"])
    assert out.exit_code == 0, out.output
    budget = [g for g in json.loads(out.output)["infeasible_summary"]["groups"] if g["reason"] == "budget"]
    assert [g["families"][0]["platform"] for g in budget] == ["framework-desktop", "dgx-spark", "hgx-h100"]
    assert "$1,999" in budget[0]["message"] and budget[0]["shortfall"] == 1999 / 1500
    said = CliRunner().invoke(app, args, env={"COLUMNS": "400"}).output
    lines = [line for line in said.splitlines() if line.startswith("  budget — ")]
    assert "$1,999" in lines[0] and "$4,699" in lines[1] and "framework-desktop" in lines[0]


def test_a_reason_measured_against_a_stated_limit_leads_one_failing_more_families_unmeasured():
    memory = [fam(f"m{i}", "memory", "does not fit") for i in range(5)]
    price = [fam(f"p{i}", "price", "no listing") for i in range(4)]
    groups = _groups((*memory, *price, fam("b", "budget", "costs at least $1,999", 1.33),
                      fam("l", "latency", "5% under", 1.05), fam("l2", "latency", "9% under", 1.09)))
    assert [g.reason for g in groups] == ["latency", "latency", "budget", "memory", "price"]


def _reasons_printed(args):
    out = CliRunner().invoke(app, ["search", *args], env={"COLUMNS": "400"})
    assert out.exit_code == 0, out.output
    said = out.output.split("by reason", 1)[1].split("cost against interactivity", 1)[0]
    lines = [line for line in said.splitlines() if line.startswith("  ")]
    assert 0 < len(lines) <= 12
    return said.splitlines()[0], {r for r in ("budget", "latency", "price", "memory")
                                  for line in lines if f" {r} — " in f" {line}"}


def test_beside_results_every_reason_of_a_capped_search_is_shown():
    header, reasons = _reasons_printed(["--model", "qwen3-30b-a3b", "--users", "1", "--max-capex", "1500"])
    assert reasons == {"budget", "latency", "price", "memory"}
    assert "the first groups of each reason, 12 of" in header and "12 reasons" not in header


def test_beside_results_a_latency_search_shows_its_memory_groups():
    _, reasons = _reasons_printed(["--model", "qwen3-30b-a3b", "--users", "1", "--ttft-p95", "0.3"])
    assert {"latency", "memory", "price"} <= reasons


def test_memory_groups_carry_the_memory_short_and_list_the_nearest_to_fitting_first(catalog):
    # deepseek-v3 fits in no one system searched: each family's group says how much more memory per GPU one
    # instance on the whole system needs than the engine can use (a ratio, as the budget's and latency's are)
    from inferplan.search.request import SearchRequest
    from inferplan.search.run import search

    res = search(SearchRequest(models=("deepseek-v3",), systems=("rtx-pro-6000-workstation", "framework-desktop"),
                               engines=("vllm", "llamacpp"), request_rate_per_s=1, input_len=1000, output_len=100), catalog)
    groups = res.infeasible_summary.groups
    assert groups and all(g.reason == "memory" and g.shortfall is not None and g.shortfall > 1 for g in groups)
    assert [g.shortfall for g in groups] == sorted(g.shortfall for g in groups)
    nearest = groups[0].families[0]
    assert (nearest.platform, nearest.quantization) == ("framework-desktop", "gguf-q2_k")  # 2 systems of it hold one
    assert [x.shortfall for x in res.infeasible] == sorted(x.shortfall for x in res.infeasible)


def test_memory_measured_against_the_gpus_keeps_its_place_among_the_reasons_no_stated_limit_measures():
    memory = [fam("m1", "memory", "needs 4 systems", 3.9), fam("m2", "memory", "needs 2 systems", 1.9)]
    price = [fam(f"p{i}", "price", "no listing") for i in range(4)]
    groups = _groups((*memory, *price, fam("l", "latency", "5% under", 1.05)))
    assert [(g.reason, g.shortfall) for g in groups] == [("latency", 1.05), ("price", None), ("memory", 1.9),
                                                         ("memory", 3.9)]
