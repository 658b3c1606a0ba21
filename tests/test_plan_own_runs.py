"""plan says, beside its headline figures, which of your stored runs of the cell's deployment its speed comes from,
or why a run of that deployment is not used (other request lengths, prefix-cache hits): an imported run that
leaves the answer unchanged is never silent."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from inferplan.shells.cli import app

runner = CliRunner()
H100 = ["--model", "llama-3.1-8b", "--gpu", "h100", "--engine", "vllm"]
CSV = "concurrency,input_tokens,output_tokens,ttft_ms,tpot_ms,output_tokens_per_s\n"
SCENARIO = ("name: chat on one H100\nmodel: llama-3.1-8b\nplatform: {gpu: h100-sxm, gpus: 1, quote_usd_per_system: 30000}\n"
            "workload: {preset: chat-seat%s}\ntarget_users: 100\n")


def cli(*args):
    return runner.invoke(app, [str(a) for a in args])


def plan_of(tmp_path: Path, lengths: str, workload: str) -> dict:
    db, csv, scenario = tmp_path / "runs.db", tmp_path / "run.csv", tmp_path / "s.yaml"
    csv.write_text(CSV + "".join(f"{c},{lengths},{ttft},{tpot},{tok}\n" for c, ttft, tpot, tok in
                                 ((1, 80, 9, 110), (4, 85, 11, 360), (16, 100, 25, 640), (64, 180, 60, 1050))))
    assert cli("measurements", "import", csv, *H100, "--db", db).exit_code == 0
    scenario.write_text(SCENARIO % workload)
    r = cli("plan", scenario, "--draws", "0", "--db", db, "--json")
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


def test_a_run_at_the_plans_lengths_is_named_as_the_speed_it_plans_on(tmp_path):
    plan = plan_of(tmp_path, "2000,500", ", cache_hit_rate: 0")
    assert plan["capacity"]["cell"]["source"] == "measured"
    (note,) = plan["capacity"]["cell"]["own_runs"]
    assert note.startswith("speed from your stored run: measured profile user-run-1-2000-500, concurrency 1–64")


def test_a_run_at_other_lengths_says_why_it_is_not_used(tmp_path):
    plan = plan_of(tmp_path, "1024,400", ", cache_hit_rate: 0")
    assert plan["capacity"]["cell"]["source"] != "measured"
    (note,) = plan["capacity"]["cell"]["own_runs"]
    assert "user-run-1-1024-400 is not used: measured at 1,024/400 tokens a request, planned at 2,000/500" in note
    assert "prefix cache" not in note


def test_prefix_cache_hits_say_the_run_is_not_used_and_what_plans_on_it(tmp_path):
    plan = plan_of(tmp_path, "2000,500", "")  # the chat-seat preset's 50 % hits
    (note,) = plan["capacity"]["cell"]["own_runs"]
    assert "user-run-1-2000-500 is not used: planned with 50% of prompt tokens from the prefix cache" in note
    assert "measured at" not in note


def test_the_note_is_a_headline_note_on_the_terminal(tmp_path):
    db, csv, scenario = tmp_path / "runs.db", tmp_path / "run.csv", tmp_path / "s.yaml"
    csv.write_text(CSV + "8,1024,400,90,12,600\n")
    assert cli("measurements", "import", csv, *H100, "--db", db).exit_code == 0
    scenario.write_text(SCENARIO % "")
    r = cli("plan", scenario, "--draws", "0", "--db", db)
    assert r.exit_code == 0
    head = " ".join(r.stdout.split("Recommendation:")[0].split())
    assert head.startswith("Note: measured profile user-run-1-1024-400 is not used")


def test_no_stored_runs_no_note(tmp_path):
    scenario = tmp_path / "s.yaml"
    scenario.write_text(SCENARIO % "")
    plan = json.loads(cli("plan", scenario, "--draws", "0", "--db", tmp_path / "empty.db", "--json").stdout)
    assert plan["capacity"]["cell"]["own_runs"] == []


@pytest.mark.parametrize("kv, said", [("auto", "speed from your stored run: measured profile user-run-1-2000-500"),
                                      ("fp8", "user-run-1-2000-500 is not used, being of another launch: launched "
                                              "with kv_cache_dtype")])
def test_each_search_pick_names_your_run_of_its_deployment(tmp_path, kv, said):
    db, csv = tmp_path / "runs.db", tmp_path / "run.csv"
    csv.write_text(CSV + "1,2000,500,40,4,240\n4,2000,500,45,5,780\n16,2000,500,60,8,1900\n64,2000,500,120,20,3000\n")
    assert cli("measurements", "import", csv, *H100, "--db", db).exit_code == 0
    r = cli("search", "--model", "llama-3.1-8b", "--request-rate", "2", "--input-len", "2000", "--output-len", "500",
            "--accelerators", "h100-sxm", "--engines", "vllm", "--quantizations", "bf16", "--kv-cache-dtypes", kv,
            "--max-gpus", "1", "--no-speculative", "--no-disaggregated", "--top", "2", "--db", db, "--json")
    assert r.exit_code == 0, r.output
    picks = json.loads(r.stdout)["results"]
    assert picks and all(any(n.startswith(said) or said in n for n in p["notes"]) for p in picks)


def test_a_run_measured_only_above_what_the_cache_holds_is_named_as_not_used(tmp_path):
    """70B in FP8 on one H100 holds 8 requests of 2,000/500 tokens: a run at 16 and 32 answers none of its levels,
    so the plan's figures are the calibrated model's and the note says why, not that the run sized it."""
    db, csv, scenario = tmp_path / "runs.db", tmp_path / "run.csv", tmp_path / "s.yaml"
    csv.write_text(CSV + "16,2000,500,900,40,380\n32,2000,500,1500,60,500\n")
    assert cli("measurements", "import", csv, "--model", "llama-3.1-70b", "--gpu", "h100", "--engine", "vllm",
               "--quantization", "fp8", "--db", db).exit_code == 0
    scenario.write_text("name: 70b\nmodel: llama-3.1-70b\nquantization: fp8\nplatform: {gpu: h100-sxm, gpus: 1, "
                        "quote_usd_per_system: 30000}\nworkload: {preset: chat-seat, cache_hit_rate: 0}\n"
                        "target_users: 100\n")

    def cell(path):
        r = cli("plan", scenario, "--draws", "0", "--db", path, "--json")
        assert r.exit_code == 0, r.output
        return json.loads(r.stdout)["capacity"]["cell"]

    mine, model = cell(db), cell(tmp_path / "empty.db")
    held = mine["kv_max_concurrency"]
    assert held < 16
    assert mine["own_runs"] == [f"measured profile user-run-1-2000-500 is not used: measured at 16–32 requests at "
                                f"once, above the {held} the KV cache holds at 2,000/500 tokens a request"]
    assert mine["output_tokens_per_s_per_user"] == model["output_tokens_per_s_per_user"]


def test_a_run_with_drafts_is_named_as_not_used(tmp_path):
    db, csv, scenario = tmp_path / "runs.db", tmp_path / "run.csv", tmp_path / "s.yaml"
    csv.write_text(CSV + "1,2000,500,40,4,240\n4,2000,500,45,5,780\n")
    assert cli("measurements", "import", csv, *H100, "--speculative-tokens", 2, "--acceptance-rate", 0.7,
               "--db", db).exit_code == 0
    scenario.write_text(SCENARIO % ", cache_hit_rate: 0")
    r = cli("plan", scenario, "--draws", "0", "--db", db, "--json")
    assert r.exit_code == 0, r.output
    (note,) = json.loads(r.stdout)["capacity"]["cell"]["own_runs"]
    assert note.startswith("measured profile user-run-1-2000-500 is not used: it ran with drafts (2 draft tokens a step")
    assert "which plan and search do not take as a profile" in note
