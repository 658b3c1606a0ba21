"""A result file's value that would be rounded, dropped or overwritten into another run is refused naming
the file's own key (or the CSV's line and column), never stored as a different load."""

import json
from pathlib import Path

import pytest

from inferplan.errors import InvalidScenarioError
from inferplan.measurements.formats import parse

DATA = Path(__file__).parent / "data" / "measurements"
VLLM = json.loads((DATA / "vllm_bench_serve_c8.json").read_text())


def _refused(fmt: str, text: str) -> InvalidScenarioError:
    with pytest.raises(InvalidScenarioError) as info:
        parse(text, fmt)
    return info.value


@pytest.mark.parametrize(("key", "value"), [("max_concurrency", 8.5), ("completed", 399.5), ("num_prompts", 400.5)])
def test_a_fractional_count_in_a_vllm_result_is_refused_naming_its_key(key, value):
    error = _refused("vllm", json.dumps({**VLLM, key: value}))
    assert error.field == key and "not a whole number" in str(error)


@pytest.mark.parametrize(("key", "value"), [("output_throughput", 1e13), ("mean_ttft_ms", 2e12), ("p99_tpot_ms", 2e12)])
def test_a_figure_out_of_range_names_the_files_key_not_the_stored_field(key, value):
    error = _refused("vllm", json.dumps({**VLLM, key: value}))
    assert error.field == key and "out of range" in str(error)


def test_a_genai_perf_concurrency_is_named_by_its_key():
    data = json.loads((DATA / "profile_export_genai_perf.json").read_text())
    data["input_config"] = {"concurrency": 2.5, "model": data["input_config"].get("model")}
    assert _refused("genai-perf", json.dumps(data)).field == "input_config.concurrency"


HEADER = "concurrency,input_tokens,output_tokens,ttft_ms,tpot_ms"


@pytest.mark.parametrize(("text", "field", "words"), [
    (f"{HEADER}\n4.5,1024,256,40,8\n", "line 2: concurrency", "not a whole number"),
    (f"{HEADER}\n4,1024.5,256,40,8\n", "line 2: input_tokens", "not a whole number"),
    (f"{HEADER},requests\n4,1024,256,40,8,99.5\n", "line 2: requests", "not a whole number"),
    ("concurrency,input_tokens,output_tokens,ttft_ms,ttft_ms\n4,1024,256,40,8\n", "line 1", "named twice: 'ttft_ms'"),
    (f"{HEADER}\n4,1024,256,40,8\n8,1024,256,,\n", "line 3", "no measured figure"),
    (f"{HEADER}\n4,1024,256,40,8\n\n8,1024,256,,\n", "line 4", "no measured figure"),
    (f"{HEADER}\n4,1024,256,4000000000000,8\n", "line 2: ttft_ms", "out of range"),
    (f"{HEADER}\n4,1024,256,0,8\n", "line 2: ttft_ms", "'0' is no measured figure"),
    (f"{HEADER},request_rate_per_s\n4,1024,256,40,8,0\n", "line 2: request_rate_per_s", "for no rate limit too"),
    (f"{HEADER},request_rate_per_s\n4,1024,256,40,8,inf\n", "line 2: request_rate_per_s", "write no rate limit as an empty"),
])
def test_a_csv_row_that_would_be_rounded_or_dropped_is_refused_naming_its_line(text, field, words):
    error = _refused("csv", text)
    assert error.field == field and words in str(error)


def test_a_csv_row_with_only_a_percentile_is_a_figure():
    assert len(parse("concurrency,input_tokens,output_tokens,ttft_p99_ms\n4,1024,256,70\n", "csv").points) == 1


@pytest.mark.parametrize(("fmt", "text", "field"), [
    ("csv", f"{HEADER}\n1,1024,256,50,7\n8,1024,256,60,9\n\n1,1024,256,80,12\n", "line 5"),
    ("sglang", "\n".join([json.dumps({**VLLM, "max_concurrency": 4})] * 2) + "\n", "line 2"),
    ("llama-bench", json.dumps([{"n_prompt": 64, "n_gen": 0, "avg_ts": 30.0, "n_threads": t} for t in (8, 16)]), "[1]"),
])
def test_two_points_of_one_file_at_one_load_level_are_refused_naming_both(fmt, text, field):
    error = _refused(fmt, text)
    assert error.field == field and "measures the load level of" in str(error)


@pytest.mark.parametrize(("fmt", "text", "field"), [
    ("llama-bench", json.dumps([{"n_prompt": 0, "n_gen": 128, "n_depth": d, "avg_ts": 120.0 - d / 100} for d in (0, 512)]),
     "[1].n_depth"),
    ("llama-bench", "| model | ngl | test | t/s |\n| --- | --: | --: | --: |\n| qwen2 7B Q4_K - Medium | 99 | tg128 | 120.6 ± 0.5 |\n"
     "| qwen2 7B Q4_K - Medium | 99 | tg128 @ d512 | 116.7 ± 0.6 |\n", "line 4: test"),
])
def test_a_llama_bench_test_at_a_prefilled_depth_is_refused_not_read_as_depth_zero(fmt, text, field):
    error = _refused(fmt, text)
    assert error.field == field and "prefilled context depth (512 tokens" in str(error)


def test_a_llama_bench_file_at_depth_zero_reads():
    text = json.dumps([{"n_prompt": 512, "n_gen": 0, "n_depth": 0, "avg_ts": 7000.0},
                       {"n_prompt": 0, "n_gen": 128, "n_depth": 0, "avg_ts": 120.0}])
    assert len(parse(text, "llama-bench").points) == 2


@pytest.mark.parametrize(("flags", "field", "words"), [
    (["--gpus", "2", "-tp", "3"], "--gpus", "TP 3 × PP 1 needs 3 GPUs"),
    (["--engine", "llamacpp", "--quantization", "fp8"], "--quantization", "llamacpp does not load fp8 weights"),
    (["--max-model-len", "1000"], "--max-model-len", "shorter than a measured request (1,024 + 256 tokens"),
])
def test_a_stated_deployment_no_engine_could_have_launched_for_the_run_is_refused(tmp_path, flags, field, words):
    from typer.testing import CliRunner

    from inferplan.shells.cli import app

    argv = ["measurements", "import", str(DATA / "measured.csv"), "--model", "llama-3.1-8b", "--gpu", "h100",
            "--db", str(tmp_path / "m.db"), "--json"]
    done = CliRunner().invoke(app, [*argv, *flags], prog_name="inferplan")
    assert done.exit_code == 2, done.stdout
    assert json.loads(done.stdout)["error"]["field"] == field and words in done.stderr
    assert CliRunner().invoke(app, [*argv, "--max-model-len", "1280"], prog_name="inferplan").exit_code == 0


def test_a_run_dated_after_today_is_refused_naming_where_the_date_came_from():
    import datetime as dt

    from inferplan.catalog.loader import load_catalog
    from inferplan.measurements.records import RunProvenance, read_run

    today = dt.date(2026, 12, 7)
    data = json.dumps({**VLLM, "date": "20270101-101500"}).encode()
    with pytest.raises(InvalidScenarioError) as info:
        read_run(load_catalog(), "r.json", data, RunProvenance(gpu="h100"), today=today)
    assert info.value.field == "date" and "r.json: the file's date 2027-01-01 is after today" in str(info.value)
    with pytest.raises(InvalidScenarioError) as info:
        read_run(load_catalog(), "r.json", data, RunProvenance(gpu="h100", measured_on="2026-12-10"), today=today)
    assert info.value.field == "measured_on" and info.value.allowed == "a date up to 2026-12-08"
    stated = read_run(load_catalog(), "r.json", data, RunProvenance(gpu="h100", measured_on="2026-12-06"), today=today)
    assert stated.measured_on == dt.date(2026, 12, 6)


def test_an_sglang_result_named_json_is_read_as_sglang_not_as_a_vllm_run():
    from inferplan.measurements.formats import guess_format

    lines = (DATA / "sglang_bench_serving.jsonl").read_text()
    assert guess_format("sglang_run.json", lines.splitlines()[0]) == "sglang"
    assert guess_format("sglang_run.json", lines) == "sglang"
    assert guess_format("run.json", (DATA / "vllm_bench_serve_c8.json").read_text()) == "vllm"
