import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from inferplan.shells.cli import app

runner = CliRunner()
CLI_DOC = (Path(__file__).resolve().parents[1] / "docs" / "cli.md").read_text()


def invoke(*args):
    return runner.invoke(app, list(args))


@pytest.fixture(scope="module")
def speed_validated():
    """``validate --speed`` tables from one run of the speed validation (it checks every shipped point, seconds of
    CPU): the CLI's call returns that run's result, so each test renders it without checking the points again."""
    from inferplan.validation import speed

    result = speed.validate_speed()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(speed, "validate_speed", lambda catalog=None: result)
        yield result


def test_fit_json_has_the_documented_keys():
    r = invoke("fit", "--model", "llama-3.1-8b", "--gpu", "H100", "--max-model-len", "16000", "--json")
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    for key in ("fits", "weights_bytes_per_gpu", "kv_cache_bytes_per_token", "kv_cache_bytes_per_gpu",
                "kv_cache_tokens", "max_concurrency", "shortfall_bytes", "assumptions"):
        assert key in data
    assert data["kv_cache_bytes_per_token"] == 131072
    assert data["fits"] is True
    assert data["engine_release"] == "0.34.0"  # the current release, which the human output names too
    old = json.loads(invoke("fit", "--model", "llama-3.1-8b", "--gpu", "H100", "--engine-version", "0.8.5", "--json").stdout)
    assert old["engine_release"] == "0.8.5"


@pytest.mark.parametrize(
    ("args", "flag"),
    [
        (["--model", "nope", "--gpu", "H100"], "--model"),
        (["--model", "llama-3.1-8b", "--gpu", "Z9000"], "--gpu"),
        (["--model", "llama-3.1-8b", "--gpu", "H100", "--gpu-memory-utilization", "1.5"], "--gpu-memory-utilization"),
        (["--model", "llama-3.1-8b", "--gpu", "H100", "--gpu-memory-utilization", "0"], "--gpu-memory-utilization"),
        (["--model", "llama-3.1-8b", "--gpu", "H100", "--max-model-len", "-5"], "--max-model-len"),
        (["--model", "llama-3.1-8b", "--gpu", "H100", "--tensor-parallel-size", "0"], "--tensor-parallel-size"),
        (["--model", "llama-3.1-8b", "--gpu", "H100", "--quantization", "q9"], "--quantization"),
        (["--model", "llama-3.1-8b", "--gpu", "H100", "--engine", "ollama"], "--engine"),
        (["--model", "llama-3.1-8b"], "--gpu"),
    ],
)
def test_bad_input_exits_2_naming_the_flag(args, flag):
    r = invoke("fit", *args)
    assert r.exit_code == 2
    assert flag in r.output
    assert "Traceback" not in r.output


def test_malformed_config_exits_2(tmp_path):
    bad = tmp_path / "config.json"
    bad.write_text("{oops")
    r = invoke("fit", "--model", str(bad), "--gpu", "H100")
    assert r.exit_code == 2 and "not valid JSON" in r.output


def test_model_import_reads_a_config(catalog):
    path = catalog.data_dir / "hf_configs" / "deepseek-v3.json"
    r = invoke("model", "import", str(path), "--json")
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    assert data["mla"] is True and data["kv_cache_bytes_per_token_bf16"] == 70272


def test_fits_matrix_json():
    r = invoke("fits", "--models", "llama-3.1-8b,qwen3-32b", "--gpus", "h100-sxm,rtx-4090", "--json")
    assert r.exit_code == 0, r.output
    assert len(json.loads(r.stdout)["cells"]) == 4


def test_catalog_list_and_show():
    r = invoke("catalog", "list", "accelerators", "--json")
    assert r.exit_code == 0 and len(json.loads(r.stdout)) >= 40
    r = invoke("catalog", "show", "H100")
    assert r.exit_code == 0 and "h100-sxm" in r.output
    r = invoke("catalog", "list", "gizmos")
    assert r.exit_code == 2 and "kind" in r.output


def test_models_and_gpus_list_the_catalogue_as_the_flags_name_them():
    """`inferplan models` / `inferplan gpus` and `catalog list gpus` are the listings a new user types."""
    accelerators = json.loads(invoke("catalog", "list", "accelerators", "--json").stdout)
    assert json.loads(invoke("gpus", "--json").stdout) == accelerators
    assert json.loads(invoke("catalog", "list", "gpus", "--json").stdout) == accelerators
    assert json.loads(invoke("models", "--json").stdout) == json.loads(invoke("catalog", "list", "models", "--json").stdout)
    table = invoke("catalog", "list", "gpus")
    assert table.exit_code == 0 and "accelerators (" in table.output and "bandwidth" in table.output


def test_catalog_show_prefers_an_ambiguity_in_one_kind_to_a_lone_match_in_another():
    r = invoke("catalog", "show", "gpt-oss")  # used to show an engine build that mentions gpt-oss
    assert r.exit_code == 2 and "gpt-oss-120b" in r.output and "gpt-oss-20b" in r.output
    r = invoke("catalog", "show", "llama-3.1-8b")
    assert r.exit_code == 0 and "Llama 3.1 8B" in r.output
    bad = invoke("racks", "--baseline", "bogus")  # the hint names a kind `catalog list` takes
    assert bad.exit_code == 2 and "catalog list rack-profiles" in bad.output
    assert invoke("catalog", "list", "rack-profiles").exit_code == 0


def test_catalog_list_help_names_every_kind():
    from inferplan.catalog.query import KINDS
    from inferplan.shells.cli_catalog import CATALOG_KINDS_HELP

    assert CATALOG_KINDS_HELP.split(" | ") == list(KINDS)


def test_validate_prints_the_median():
    r = invoke("validate", "--memory")
    assert r.exit_code == 0
    assert "median" in r.output


def test_every_cli_command_is_documented_in_docs_cli_md():
    names = []
    for group in [app, *[g.typer_instance for g in app.registered_groups]]:
        prefix = next((g.name for g in app.registered_groups if g.typer_instance is group), None)
        for cmd in group.registered_commands:
            name = cmd.name or cmd.callback.__name__
            names.append(f"inferplan {prefix} {name}" if prefix else f"inferplan {name}")
    assert names
    for name in names:
        assert re.search(re.escape(name) + r"\b", CLI_DOC), f"{name} is not in docs/cli.md"


def test_perf_json_has_the_documented_keys():
    r = invoke("perf", "--model", "llama-3.1-8b", "--gpu", "H100", "--input-len", "1000", "--output-len", "200",
               "--concurrency", "8", "--json")
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    for key in ("ttft_s", "tpot_s", "output_tokens_per_s_per_user", "output_tokens_per_s_total",
                "output_tokens_per_s_per_gpu", "input_tokens_per_s_total", "concurrency", "bound", "source", "assumptions"):
        assert key in data
    assert data["source"] == "calibrated-model" and data["concurrency"] == 8


def test_perf_concurrency_max_and_bad_values():
    ok = invoke("perf", "--model", "llama-3.1-8b", "--gpu", "H100", "--concurrency", "max", "--json")
    assert ok.exit_code == 0 and json.loads(ok.stdout)["concurrency"] > 1
    bad = invoke("perf", "--model", "llama-3.1-8b", "--gpu", "H100", "--concurrency", "lots")
    assert bad.exit_code == 2 and "--concurrency" in bad.output
    too_long = invoke("perf", "--model", "llama-3.1-8b", "--gpu", "H100", "--input-len", "99999999")
    assert too_long.exit_code == 2 and "--output-len" in too_long.output and "--input-len + --output-len" in too_long.output
    for value in ("0", "-3"):  # named, never silently read as 1
        bad = invoke("perf", "--model", "llama-3.1-8b", "--gpu", "H100", "--concurrency", value)
        assert bad.exit_code == 2 and "--concurrency" in bad.output and "between 1 and" in bad.output, value
    bad = invoke("perf", "--model", "llama-3.1-8b", "--gpu", "H100", "--acceptance-rate", "1.5")
    assert bad.exit_code == 2 and "--acceptance-rate" in bad.output
    bad = invoke("perf", "--model", "llama-3.1-8b", "--gpu", "H100", "--input-len", "0")
    assert bad.exit_code == 2 and "--input-len" in bad.output


def test_frontier_json():
    r = invoke("frontier", "--model", "llama-3.1-8b", "--gpu", "H100", "--points", "8", "--json")
    assert r.exit_code == 0, r.output
    assert len(json.loads(r.stdout)["points"]) >= 5


def test_validate_speed_prints_medians(speed_validated):
    r = invoke("validate", "--speed")
    assert r.exit_code == 0 and "decode/all" in r.output


def test_validate_speed_can_show_only_the_worst_rows_of_a_kind(speed_validated):
    def rows(output):  # a point's whole id, first in its table row or its block of the narrow layout
        return [line.removeprefix("│ ") for line in output.splitlines() if line.removeprefix("│ ").startswith(("s-", "pf-"))]

    r = invoke("validate", "--speed", "--kind", "profile", "--worst", "3")
    assert r.exit_code == 0, r.output
    assert "3 largest errors" in r.output and "decode/all" in r.output  # medians still over every point
    assert len(rows(r.output)) == 3 and all(line.startswith("pf-") for line in rows(r.output))
    r = invoke("validate", "--speed", "--kind", "throughput")
    assert rows(r.output) and not any(line.startswith("pf-") for line in rows(r.output))
    bad = invoke("validate", "--speed", "--kind", "latency")
    assert bad.exit_code == 2 and "--kind" in bad.output and "throughput" in bad.output


def test_validate_speed_shows_one_familys_points_and_track_record(speed_validated):
    r = invoke("validate", "--speed", "--family", "trtllm", "--kind", "decode")
    assert r.exit_code == 0, r.output
    record = [line for line in r.output.splitlines() if line.startswith("│ trtllm")]
    assert "│ decode" in record[0] and "│ all" in record[0]  # the family's decode record, then its models'
    from inferplan.catalog.loader import load_catalog

    own = [a for a in load_catalog().speed_accuracy.records.values() if a.family == "trtllm" and a.kind == "decode"]
    assert len(record) == len(own) > 1
    expected = [c for c in speed_validated.checks if c.family == "trtllm" and c.kind == "decode"]
    rows = [line for line in r.output.splitlines() if line.removeprefix("│ ").startswith("s-")]
    assert len(rows) == len(expected) > 0
    bad = invoke("validate", "--speed", "--family", "vllm-cuda")
    assert bad.exit_code == 2 and "--family" in bad.output and "sglang" in bad.output


def test_plan_json_and_report(tmp_path):
    example = Path(__file__).resolve().parents[1] / "examples" / "chat-seats-h100.yaml"
    r = invoke("plan", str(example), "--json", "--draws", "500", "--report", str(tmp_path / "r.html"))
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    for key in ("monthly_operating_cash_usd", "simple_payback_months", "gap_to_capital_recovery_usd_per_month",
                "private_quote_usd_per_user_month", "same_model_api_usd_per_user_month",
                "operating_break_even_usd_per_user_month", "target_payback_usd_per_user_month",
                "per_user_gap_usd_per_month", "supported_users", "loadouts", "api_alternative_usd_per_user_month",
                "quote_multiplier", "quote_multiplier_required", "modeled_monthly_operating_cost_usd",
                "monthly_billing_usd", "api_cost_for_served_usd_per_month", "owner_cost_usd_per_mtok",
                "output_tokens_per_s_per_mw", "rent_usd_per_month", "api_break_even_tokens_per_month",
                "recommendation", "uncertainty"):
        assert key in data, key
    assert (tmp_path / "r.html").is_file()
    assert data["supported_users"] > 0 and data["uncertainty"]["loadouts"]["p50"] >= 1


def test_plan_says_why_there_is_no_monte_carlo_when_no_user_is_carried(tmp_path):
    example = tmp_path / "too-fast.yaml"  # no GPU serves 2,000 output tokens/s to each user
    example.write_text("model: llama-3.1-8b\nplatform: {system: hgx-h100}\n"
                       "workload: {preset: coding-developer-median, target_output_tokens_per_s: 2000}\ntarget_users: 10\n")
    r = invoke("plan", str(example), "--draws", "500")
    assert r.exit_code == 0, r.output
    text = " ".join(r.output.split())  # the console wraps long lines
    assert "no user is carried at the service target, so there is nothing to draw" in text


def test_bad_scenario_file_exits_2_with_file_and_line(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("model: llama-3.1-8b\nplatform: {system: hgx-h100}\nmoney:\n  colour: red\n")
    r = invoke("plan", str(bad))
    assert r.exit_code == 2
    assert "bad.yaml:4: money.colour: unknown key" in r.output and "quote_multiplier" in r.output
    missing = invoke("plan", str(tmp_path / "nope.yaml"))
    assert missing.exit_code == 2 and "cannot read" in missing.output


def test_racks_ratios():
    r = invoke("racks", "--interactivity", "100", "--json")
    assert r.exit_code == 0
    rows = {row["profile"]: row for row in json.loads(r.stdout)["rows"]}
    assert round(rows["coreweave-vera-rubin-jul-2026-dsr1"]["tokens_per_mw_vs_baseline"], 2) == 2.00
    bad = invoke("racks", "--interactivity", "123")
    assert bad.exit_code == 2 and "--interactivity" in bad.output


def test_validate_speed_shows_times_in_milliseconds_and_concurrent_decode_apart(speed_validated):
    r = invoke("validate", "--speed", "--kind", "decode-concurrent", "--worst", "2")
    assert r.exit_code == 0, r.output
    assert "decode-concurrent/all" in r.output
    assert " ms" in r.output  # TPOT rows: 3.72 ms, not the 0.0 a seconds column rounded to


def assert_refused(cases) -> None:
    """Each (args, flag) exits 2 naming its flag."""
    for args, flag in cases:
        r = invoke(*args)
        assert r.exit_code == 2 and flag in r.output, (args, r.output)


def plan_refuses(path, text: str, needle: str) -> None:
    path.write_text(text)
    r = invoke("plan", str(path), "--draws", "0")
    assert r.exit_code == 2 and needle in r.output, r.output


def test_inputs_that_used_to_crash_or_be_replaced_get_a_named_error(tmp_path):
    example = Path(__file__).resolve().parents[1] / "examples" / "chat-seats-h100.yaml"
    cases = [
        (("plan", str(example), "--seed", "-1", "--draws", "10"), "--seed"),
        (("plan", str(example), "--draws", "0", "--report", str(tmp_path)), "--report"),  # a directory, no suffix
        (("plan", str(example), "--draws", "0", "--report", str(tmp_path / "dir.html" / "")), "--report"),
        (("fit", "--model", "llama-3.1-8b", "--gpu", "H100", "--kv-bytes-per-token", "1e-300"), "--kv-bytes-per-token"),
        (("perf", "--model", "llama-3.1-8b", "--gpu", "H100", "--max-model-len", "0"), "--max-model-len"),
    ]
    (tmp_path / "dir.html").mkdir()
    assert_refused(cases)
    binary = tmp_path / "bad.yaml"
    binary.write_bytes(b"\xff\xfe\x00name")
    r = invoke("plan", str(binary))
    assert r.exit_code == 2 and "not UTF-8" in r.output


def test_blank_names_contradictory_platforms_and_memory_only_filters_are_refused(tmp_path):
    assert_refused([(("fit", "--model", "llama-3.1-8b", "--gpu", "H100", "-q", ""), "--quantization"),
                    (("fit", "--model", "llama-3.1-8b", "--gpu", ""), "--gpu"),
                    (("validate", "--memory", "--family", "sglang"), "--family"),
                    (("validate", "--memory", "--cross-validate"), "--cross-validate")])
    plan_refuses(tmp_path / "both.yaml", "name: t\nmodel: gpt-oss-120b\nplatform: {system: hgx-h100, gpu: b200, gpus: 3}\n"
                 "workload: {preset: chat-seat}\ntarget_users: 10\n", "not both")


def test_a_stated_cell_is_kept_even_at_tp1(tmp_path):
    """`cell: {tensor_parallel_size: 1}` used to be read as 'no cell' and replaced by a wider one."""
    plan_refuses(tmp_path / "tp1.yaml", "name: t\nmodel: qwen3-235b-a22b\nquantization: fp8\nplatform: {system: hgx-b200}\n"
                 "cell: {tensor_parallel_size: 1}\nworkload: {preset: chat-seat}\ntarget_users: 10\n",
                 "does not fit on 1× b200")  # 235 GB of FP8 weights on one 180 GB B200


def test_fits_refuses_what_every_cell_shares_and_scenarios_refuse_a_key_given_twice(tmp_path):
    assert_refused([(("fits", "--engine", "nope"), "--engine"), (("fits", "--max-model-len", "0"), "--max-model-len"),
                    (("fits", "--gpus", "nope"), "--gpus"), (("fits", "--models", ","), "--models"),
                    (("fits", "--models", "llama-3.1-8b,./nope/config.json"), "--models: ./nope/config.json: no such file or folder")])
    plan_refuses(tmp_path / "twice.yaml", "name: t\nmodel: gpt-oss-120b\nplatform: {system: hgx-h100}\n"
                 "workload: {preset: chat-seat}\ntarget_users: 5\ntarget_users: 7\n", "given twice")


def test_a_model_path_to_nothing_says_so_and_a_folder_without_a_config_says_that(tmp_path):
    missing = invoke("fit", "--model", str(tmp_path / "nope" / "config.json"), "--gpu", "H100")
    assert missing.exit_code == 2 and "no such file or folder" in missing.output and "(allowed: a config.json" in missing.output
    empty = invoke("fit", "--model", str(tmp_path), "--gpu", "H100")
    assert empty.exit_code == 2 and "no config.json (or Mistral params.json) in" in empty.output


def test_a_request_past_the_models_context_names_its_length():
    r = invoke("perf", "--model", "llama-3.1-8b", "--gpu", "H100", "--input-len", "200000")
    assert r.exit_code == 2 and "--input-len" in r.output and "131,072" in r.output
    capped = invoke("perf", "--model", "llama-3.1-8b", "--gpu", "H100", "--engine", "trtllm", "--input-len", "200000")
    assert capped.exit_code == 2 and "--input-len" in capped.output and "131,072 tokens trtllm serves" in capped.output
    stated = invoke("perf", "--model", "llama-3.1-8b", "--gpu", "H100", "--engine", "trtllm", "--max-model-len", "200000",
                    "--input-len", "150000", "--output-len", "100")
    assert stated.exit_code == 2 and "--input-len" in stated.output  # raising --max-model-len cannot help
    assert invoke("perf", "--model", "llama-3.1-8b").output.startswith("error: --gpu: name a GPU")  # no flag '--input'


def test_scenario_errors_name_the_scenario_key(tmp_path):
    base = "name: t\nmodel: llama-3.1-8b\nplatform: {system: hgx-h100}\nworkload: {preset: chat-seat}\ntarget_users: 10\n"
    plan_refuses(tmp_path / "tp.yaml", base + "cell: {tensor_parallel_size: 3}\n", "cell.tensor_parallel_size:")
    plan_refuses(tmp_path / "pp.yaml", base + "cell: {pipeline_parallel_size: 64}\n", "cell.pipeline_parallel_size:")
    plan_refuses(tmp_path / "q.yaml", base + "quantization: q4_k_m\n", "error: quantization:")
    plan_refuses(tmp_path / "rent.yaml", base + "money: {rental: rent-lambda-8x-b200}\n", "money.rental: rent-lambda")
    plan_refuses(tmp_path / "yaml.yaml", "name: t\nmodel: [\n", "yaml.yaml:3: not valid YAML")


def test_catalog_show_prints_large_numbers_in_full_not_in_exponent_notation():
    r = runner.invoke(app, ["catalog", "show", "qwen3-32b"], terminal_width=200)
    assert r.exit_code == 0
    assert "32.7621 G" in r.output and "40,960" in r.output  # total_params with its SI prefix; the context as it is
    assert "e+" not in r.output
    h100 = runner.invoke(app, ["catalog", "show", "h100-sxm"], terminal_width=200).output
    assert "3.35 T" in h100 and "80 G" in h100 and "e+" not in h100  # bandwidth in bytes/s, memory in bytes
