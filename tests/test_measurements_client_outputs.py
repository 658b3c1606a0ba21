"""The clients' result files as their releases write them: ``vllm bench serve --append-result`` (a result a line,
appended to the file's) and ``llama-bench -o jsonl`` (a test a line) import with every point, a bad line refused
naming it; guidellm's TPOT is the figure that leaves out the first token's wait, as vLLM's does."""

import json
from pathlib import Path

import pytest

from inferplan.errors import InvalidScenarioError
from inferplan.measurements.formats import guess_format, parse

DATA = Path(__file__).parent / "data" / "measurements"
C8 = json.loads((DATA / "vllm_bench_serve_c8.json").read_text())
C32 = json.loads((DATA / "vllm_bench_serve_c32.json").read_text())
SPEC = json.loads((DATA / "vllm_bench_serve_spec_c8.json").read_text())


def _appended(*runs: dict) -> str:
    # as serve.py writes with --append-result: json.dump, then "\n" before each later result
    return "\n".join(json.dumps(r) for r in runs)


def test_a_vllm_file_of_appended_results_imports_every_run_as_a_point():
    parsed = parse(_appended(C8, C32), "vllm")
    assert [p.concurrency for p in parsed.points] == [8, 32]
    assert parsed.points[1].tpot_s == pytest.approx(C32["mean_tpot_ms"] / 1000)
    assert parsed.places == ["line 1", "line 2"]
    assert parsed.meta["model"] == C8["model_id"]
    assert guess_format("vllm-sweep.json", _appended(C8, C32)) == "vllm"


def test_an_appended_vllm_result_of_another_model_is_refused_naming_its_line():
    with pytest.raises(InvalidScenarioError) as info:
        parse(_appended(C8, {**C32, "model_id": "Qwen/Qwen3-8B"}), "vllm")
    assert info.value.field == "line 2: model_id" and "several deployments" in str(info.value)


def test_an_appended_vllm_rerun_of_one_load_level_is_refused_naming_both():
    with pytest.raises(InvalidScenarioError) as info:
        parse(_appended(C8, {**C8, "mean_ttft_ms": 50.0}), "vllm")
    assert info.value.field == "line 2" and "line 1" in str(info.value)


def test_a_truncated_appended_vllm_result_is_refused_naming_its_line():
    text = _appended(C8, C32)
    with pytest.raises(InvalidScenarioError) as info:
        parse(text[: len(text) - 40], "vllm")
    assert info.value.field == "line 2"


def test_appended_vllm_results_pool_the_servers_acceptance_by_draft_steps():
    other = {**SPEC, "max_concurrency": 16, "spec_decode_acceptance_length": 3.0,
             "spec_decode_num_drafts": SPEC["spec_decode_num_drafts"] * 3,
             "spec_decode_draft_tokens": SPEC["spec_decode_draft_tokens"] * 3}
    meta = parse(_appended(SPEC, other), "vllm").meta
    expected = 1 + ((SPEC["spec_decode_acceptance_length"] - 1) + 3 * 2.0) / 4
    assert meta["acceptance_length"] == pytest.approx(expected)
    assert meta["draft_tokens_per_step"] == pytest.approx(SPEC["spec_decode_draft_tokens"] / SPEC["spec_decode_num_drafts"])


def _jsonl(rows: list[dict]) -> str:
    # llama-bench's jsonl_printer: each test's fields on one line
    return "".join(json.dumps(r) + "\n" for r in rows)


def test_llama_bench_jsonl_reads_as_its_json_output():
    rows = json.loads((DATA / "llama_bench.json").read_text())
    parsed = parse(_jsonl(rows), "llama-bench")
    assert parsed.points == parse(json.dumps(rows), "llama-bench").points
    assert parsed.meta["engine_version"] == "b5210 (3f4fc97f)"
    assert guess_format("results.jsonl", _jsonl(rows)) == "llama-bench"


def test_a_bad_llama_bench_jsonl_line_is_refused_naming_it():
    rows = json.loads((DATA / "llama_bench.json").read_text())
    with pytest.raises(InvalidScenarioError) as info:
        parse(_jsonl(rows)[:-30], "llama-bench")
    assert info.value.field == "line 2"


def test_guidellm_tpot_is_its_inter_token_latency_not_its_time_per_output_token():
    # guidellm's time_per_output_token_ms runs from the request's start (the first token's wait counted); its
    # inter_token_latency_ms is vLLM's TPOT, the first token to the last over the tokens after it
    report = json.loads((DATA / "guidellm_report.json").read_text())
    metrics = report["benchmarks"][0]["metrics"]
    metrics["time_to_first_token_ms"]["successful"].update(mean=2000.0, median=2000.0)
    metrics["time_per_output_token_ms"]["successful"].update(mean=17.6, median=17.6, percentiles={"p99": 18.0})
    metrics["inter_token_latency_ms"]["successful"].update(mean=9.8, median=9.7, percentiles={"p99": 10.1})
    point = parse(json.dumps(report), "guidellm").points[0]
    assert (point.tpot_s, point.tpot_p50_s, point.tpot_p99_s) == pytest.approx((9.8e-3, 9.7e-3, 10.1e-3))


def test_a_guidellm_report_without_inter_token_latency_is_refused_naming_it():
    report = json.loads((DATA / "guidellm_report.json").read_text())
    del report["benchmarks"][1]["metrics"]["inter_token_latency_ms"]
    with pytest.raises(InvalidScenarioError) as info:
        parse(json.dumps(report), "guidellm")
    assert info.value.field == "benchmarks[1].inter_token_latency_ms.successful"


def _guidellm_04(**totals) -> dict:
    # guidellm 0.4 on: the strategy under config, the request totals under metrics (GenerativeBenchmark), no args
    report = json.loads((DATA / "guidellm_report.json").read_text())
    for b in report["benchmarks"]:
        b["config"] = {"run_id": "r", "run_index": 0, "strategy": b.pop("args")["strategy"], "constraints": {}}
        b["metrics"]["request_concurrency"]["successful"]["mean"] = b["config"]["strategy"]["streams"] - 0.6
        b["metrics"]["request_totals"] = {"successful": 390, "incomplete": 4, "errored": 6, "total": 400, **totals}
    return report


def test_a_guidellm_04_report_reads_its_strategy_percentiles_and_failures_where_it_keeps_them():
    points = parse(json.dumps(_guidellm_04()), "guidellm").points
    assert [p.concurrency for p in points] == [4, 16]  # the streams, not the mean in flight rounded (15.4)
    assert points[0].ttft_p99_s == pytest.approx(0.0703) and points[1].tpot_p50_s == pytest.approx(0.010229)
    assert [p.failed_requests for p in points] == [10, 10]


def test_a_guidellm_04_benchmark_with_no_completed_request_is_refused_naming_it():
    with pytest.raises(InvalidScenarioError) as info:
        parse(json.dumps(_guidellm_04(successful=0)), "guidellm")
    assert info.value.field == "benchmarks[0].metrics.request_totals.successful"


def test_a_vllm_run_at_a_request_rate_under_its_cap_is_planned_at_its_mean_in_flight():
    # --request-rate 2 --max-concurrency 64: 2 requests/s x 2.193 s end to end is 4 in flight, not the cap's 64
    light = {**C8, "request_rate": 2.0, "max_concurrency": 64, "request_throughput": 2.0}
    assert parse(json.dumps(light), "vllm").points[0].concurrency == 4
    saturated = {**light, "request_rate": 100.0, "request_throughput": 100.0}  # Little's law past the cap: the cap
    assert parse(json.dumps(saturated), "vllm").points[0].concurrency == 64
    assert parse(json.dumps({**light, "request_rate": "inf"}), "vllm").points[0].concurrency == 64


def test_a_vllm_file_of_more_results_than_points_allowed_is_refused_naming_the_line():
    with pytest.raises(InvalidScenarioError) as info:
        parse("{}\n" * 10_001, "vllm")
    assert info.value.field == "line 10001" and "more than 10,000 results" in str(info.value)


def test_a_guidellm_report_whose_config_runs_long_is_told_by_its_metadata():
    # a later GenerativeBenchmarksReport writes metadata (guidellm_version), then the run's config, then the benchmarks
    report = {"metadata": {"version": 2, "guidellm_version": "0.8.1"}, "config": {"data": ["x" * 5000]},
              **_guidellm_04()}
    assert guess_format("benchmarks.json", json.dumps(report)) == "guidellm"


def test_an_appended_vllm_file_named_jsonl_is_told_by_its_vllm_only_keys():
    # serve.py writes endpoint_type and tokenizer_id first; SGLang's bench_serving writes neither
    assert guess_format("spec-tp2.jsonl", _appended(SPEC, {**SPEC, "max_concurrency": 16})) == "vllm"


def test_a_guidellm_0_4_0_report_whose_args_run_long_is_told_by_its_args():
    # guidellm 0.4.0's report: args (target first), then the benchmarks; no metadata
    report = {"args": {"target": "http://localhost:8000", "data": ["x" * 5000]}, **_guidellm_04()}
    assert guess_format("benchmarks.json", json.dumps(report)) == "guidellm"


def test_an_appended_vllm_line_that_is_no_object_is_refused_naming_the_line_alone():
    with pytest.raises(InvalidScenarioError) as info:
        parse(_appended(C8, [1, 2]), "vllm")
    assert info.value.field == "line 2"


def test_llama_bench_rows_of_several_models_are_refused_naming_the_row():
    # llama-bench -m a.gguf -m b.gguf writes every model's tests into one file
    rows = json.loads((DATA / "llama_bench.json").read_text())
    rows[1] = {**rows[1], "model_filename": "/models/other-Q8_0.gguf"}
    for text in (json.dumps(rows), _jsonl(rows)):
        with pytest.raises(InvalidScenarioError) as info:
            parse(text, "llama-bench")
        assert info.value.field in ("[1].model_filename", "line 2: model_filename") and "several models" in str(info.value)
    md = (DATA / "llama_bench.md").read_text().splitlines()
    last = next(i for i, line in reversed(list(enumerate(md))) if line.startswith("|"))
    md[last] = md[last].replace(md[last].split("|")[1], " other 8B Q8_0 ", 1)
    with pytest.raises(InvalidScenarioError) as info:
        parse("\n".join(md), "llama-bench")
    assert info.value.field.endswith(": model") and "several models" in str(info.value)
