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
