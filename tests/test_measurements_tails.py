"""Latency percentiles in the user's own runs: read from each client's result file, stored, and set
beside the approximation and the simulation exactly as ``validate --latency`` checks published runs."""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner

from inferplan.errors import InvalidScenarioError
from inferplan.measurements import tails
from inferplan.measurements.compare import compare_run
from inferplan.measurements.formats import CSV_COLUMNS, parse
from inferplan.measurements.records import RunProvenance, read_runs
from inferplan.performance.run_record import MeasuredPoint
from inferplan.shells.cli import app
from inferplan.store import Store
from inferplan.validation import latency

DATA = Path(__file__).parent / "data" / "measurements"
H100 = RunProvenance(model="llama-3.1-8b", gpu="h100", engine="vllm", engine_version="0.11.0", measured_by="lab")
VLLM = json.loads((DATA / "vllm_bench_serve_c8.json").read_text())
SGLANG_RANDOM = json.loads((DATA / "sglang_bench_serving.jsonl").read_text().splitlines()[1]) | {"random_range_ratio": 0.0}


def _vllm(**changes) -> str:
    return json.dumps({**VLLM, **changes})


def test_vllm_percentiles_and_load_are_read_in_si_units():
    (p,) = parse((DATA / "vllm_bench_serve_c8.json").read_text(), "vllm").points
    assert (p.ttft_p50_s, p.ttft_p99_s) == pytest.approx((0.0469, 0.0714))  # median_ttft_ms, p99_ttft_ms
    assert (p.tpot_p50_s, p.tpot_p99_s) == pytest.approx((0.00838, 0.00897))  # median_tpot_ms, p99_tpot_ms
    assert p.request_rate_per_s is None and p.requests == 400  # request_rate "inf"; num_prompts


def test_sglang_percentiles_are_read_per_line_and_its_infinite_rate_is_no_limit():
    points = parse((DATA / "sglang_bench_serving.jsonl").read_text(), "sglang").points
    assert [x for p in points for x in (p.ttft_p99_s, p.tpot_p99_s)] == pytest.approx([0.1307, 0.0082, 0.1602, 0.0086, 0.24, 0.0163])
    assert [p.requests for p in points] == [100, 200, 800]  # completed: SGLang writes no num_prompts
    assert all(p.request_rate_per_s is None and p.ttft_p50_s for p in points)


def test_a_finite_request_rate_is_a_poisson_load():
    (p,) = parse(_vllm(request_rate=4.0), "vllm").points
    assert p.request_rate_per_s == 4.0
    load = tails.point_load(p)
    assert (load.arrival, load.request_rate_per_s, load.open_loop_requests) == ("poisson", 4.0, 400)


@pytest.mark.parametrize("e2e", [{}, {"mean_e2el_ms": None}])
def test_a_run_at_a_request_rate_without_a_cap_is_a_poisson_load_at_its_mean_in_flight(e2e):
    """``vllm bench serve --request-rate 4`` with no --max-concurrency: Poisson at 4/s, planned at its
    mean requests in flight by Little's law (3.62 req/s × 2.193 s; without ``mean_e2el_ms``, mean TTFT
    + mean TPOT × 255 = 2.193 s as well)."""
    (p,) = parse(_vllm(request_rate=4.0, max_concurrency=None, **e2e), "vllm").points
    assert (p.concurrency, p.request_rate_per_s, p.requests) == (8, 4.0, 400)
    load = tails.point_load(p)
    assert (load.arrival, load.request_rate_per_s, load.open_loop_requests) == ("poisson", 4.0, 400)


def test_a_slow_rate_is_planned_at_one_request_in_flight_at_least():
    (p,) = parse(_vllm(request_rate=0.1, max_concurrency=None, request_throughput=0.1), "vllm").points
    assert p.concurrency == 1  # 0.1 req/s × 2.193 s


def test_sglang_states_its_mean_in_flight_for_a_run_at_a_rate():
    run = SGLANG_RANDOM | {"request_rate": 2.0, "max_concurrency": None, "concurrency": 3.7}
    (p,) = parse(json.dumps(run), "sglang").points
    assert (p.concurrency, p.request_rate_per_s) == (4, 2.0)


@pytest.mark.parametrize(("fmt", "text"), [("vllm", _vllm(max_concurrency=None)),
                                           ("sglang", json.dumps(SGLANG_RANDOM | {"max_concurrency": None}))])
def test_no_rate_limit_and_no_cap_sends_every_request_at_once(fmt, text):
    (p,) = parse(text, fmt).points
    load = tails.point_load(p)
    assert p.concurrency == p.requests and (load.arrival, load.clients) == ("closed", p.requests)


def test_validate_mine_predicts_a_run_at_a_request_rate(catalog, tmp_path):
    db = tmp_path / "r4.db"
    name = "vllm-r4.json"
    Store(db).add_measurements(read_runs(catalog, [(name, _vllm(request_rate=4.0, max_concurrency=None).encode())], H100))
    done = CliRunner().invoke(app, ["validate", "--mine", "--json", "--db", str(db)])
    assert done.exit_code == 0, done.output
    (point,) = json.loads(done.output)["mine"][0]["points"]
    assert point["problem"] is None and point["concurrency"] == 8
    assert point["tails"]["load"] == "poisson 4/s"
    assert [r["metric"] for r in point["tails"]["percentiles"]] == ["ttft_p50_s", "ttft_p99_s", "tpot_p50_s", "tpot_p99_s"]
    assert all(r["approximation"] > 0 and r["simulation"] > 0 for r in point["tails"]["percentiles"])


def test_a_load_the_means_model_refuses_still_has_its_percentiles_predicted(catalog):
    """Every one of 400 requests sent at once is more than the KV cache holds: no mean figures are
    predicted, the percentiles are."""
    (p,) = parse(_vllm(max_concurrency=None), "vllm").points
    run = read_runs(catalog, [("all.json", _vllm(max_concurrency=None).encode())], H100)[0]
    point = compare_run(run.model_copy(update={"points": (p.model_copy(update={"concurrency": 5_000}),)}), catalog).points[0]
    assert point.problem and all(m.predicted is None for m in point.metrics)
    assert point.tails is not None and point.tails.load == "closed loop, 400 clients"


@pytest.mark.parametrize("changes", [{"request_rate": 4.0, "burstiness": 0.5}, {"request_rate": "trace"},
                                     {"request_rate": 4.0, "ramp_up_strategy": "linear"}])
def test_a_load_the_planner_does_not_model_leaves_the_percentiles_out(changes):
    (p,) = parse(_vllm(**changes), "vllm").points
    assert not tails.has_tails(p) and p.tpot_s  # the means are still read


def test_genai_perf_and_guidellm_percentiles_are_read():
    (g,) = parse((DATA / "profile_export_genai_perf.json").read_text(), "genai-perf").points
    assert (g.ttft_p50_s, g.ttft_p99_s, g.tpot_p50_s, g.tpot_p99_s) == pytest.approx((0.0531, 0.0902, 0.01069, 0.0118))
    first = parse((DATA / "guidellm_report.json").read_text(), "guidellm").points[0]
    assert (first.ttft_p50_s, first.ttft_p99_s, first.tpot_p50_s, first.tpot_p99_s) == pytest.approx((0.0459, 0.0703, 0.007645, 0.008248))


def test_the_csv_takes_percentile_and_load_columns():
    assert {"ttft_p50_ms", "ttft_p99_ms", "tpot_p50_ms", "tpot_p99_ms", "request_rate_per_s", "requests"} <= set(CSV_COLUMNS)
    text = ("concurrency,input_tokens,output_tokens,tpot_ms,ttft_p50_ms,ttft_p99_ms,tpot_p50_ms,tpot_p99_ms,request_rate_per_s,requests\n"
            "8,1024,256,8.4,47,71,8.4,9.0,,400\n16,1024,256,10,50,90,10,11,2.5,300\n")
    a, b = parse(text, "csv").points
    assert a.request_rate_per_s is None and (a.ttft_p99_s, a.tpot_p99_s, a.requests) == pytest.approx((0.071, 0.009, 400))
    assert (b.request_rate_per_s, b.requests, b.ttft_p50_s) == pytest.approx((2.5, 300, 0.05))


@pytest.mark.parametrize(("fmt", "text", "field"), [
    ("vllm", _vllm(p99_ttft_ms="fast"), "p99_ttft_ms"),
    ("vllm", _vllm(median_tpot_ms=-1), "median_tpot_ms"),
    ("vllm", _vllm(request_rate="soon"), "request_rate"),
    ("vllm", _vllm(request_rate=0), "request_rate"),
    ("sglang", json.dumps(SGLANG_RANDOM | {"random_range_ratio": 1.5}), "line 1: random_range_ratio"),
    ("csv", "concurrency,input_tokens,output_tokens,ttft_p99_ms\n8,1024,256,x\n", "line 2: ttft_p99_ms"),
])
def test_a_malformed_percentile_or_rate_is_refused_naming_the_key(fmt, text, field):
    with pytest.raises(InvalidScenarioError) as exc:
        parse(text, fmt)
    assert exc.value.field == field


def test_a_file_without_percentiles_still_imports_and_compares_without_them(catalog):
    plain = {k: v for k, v in VLLM.items() if not k.startswith(("median_", "p99_"))}
    (run,) = read_runs(catalog, [("plain.json", json.dumps(plain).encode())], H100)
    assert not tails.has_tails(run.points[0])
    result = compare_run(run, catalog)
    assert result.points[0].tails is None and result.tail_median_abs_error == () and result.points[0].metrics


@pytest.mark.parametrize(("name", "text", "engine", "clients", "requests"), [
    ("c8.json", (DATA / "vllm_bench_serve_c8.json").read_text(), "vllm", 8, 400),  # vLLM random: every length the mean
    ("sglang.jsonl", json.dumps(SGLANG_RANDOM), "sglang", 8, 200),  # SGLang random at ratio 0: uniform over [1, L]
])
def test_the_comparison_is_what_validate_latency_computes_for_the_same_run(catalog, monkeypatch, name, text, engine,
                                                                           clients, requests):
    """The run as a shipped latency point (its client's random dataset) gets the same approximation
    and simulation from ``validation/latency`` as from the user's side."""
    # no release stated: both plan at the engine's current release, as validate latency plans its points
    (run,) = read_runs(catalog, [(name, text.encode())], H100.model_copy(update={"engine": engine, "engine_version": None}))
    p = run.points[0]
    base = next(iter(catalog.latency_points))
    shipped = type(base).model_validate({**base.model_dump(), **dict(
        model=run.model, accelerator=run.accelerator, gpus=1, tensor_parallel_size=1, pipeline_parallel_size=1,
        expert_parallel=False, engine=engine, engine_version="unknown", engine_release=None, quantization=run.quantization, kv_cache_dtype="auto", dataset="random",
        input_tokens=p.input_tokens, output_tokens=p.output_tokens, request_rate_per_s=None, max_concurrency=clients,
        num_prompts=requests, max_num_seqs=None, max_num_batched_tokens=None, prompts_cached_at_start=None,
        measured={m: {"value": getattr(p, m), "kind": "measured", "source": "fixture", "checked": "2026-12-05"}
                  for m in latency.METRICS})})
    assert latency._load(shipped, catalog) == tails.point_load(p)
    monkeypatch.setattr(latency, "SIMULATED_REQUESTS", tails.SIMULATED_REQUESTS)
    expected = {c.metric: (c.approximation, c.simulation) for c in latency.check_point(shipped, catalog)}
    compared = compare_run(run, catalog).points[0].tails
    assert {c.metric: (c.approximation, c.simulation) for c in compared.percentiles} == expected and len(expected) == 4
    assert compared.load == f"closed loop, {clients} clients"


def test_sglangs_random_range_ratio_sets_the_length_spread():
    for ratio, scv in ((1.0, None), (0.0, 1 / 3), (0.5, 1 / 27)):
        (p,) = parse(json.dumps(SGLANG_RANDOM | {"random_range_ratio": ratio}), "sglang").points
        assert p.lengths_uniform_scv == (pytest.approx(scv) if scv else None)
    load = tails.point_load(p)
    assert (load.lengths, load.input_tokens_scv, load.output_tokens_scv) == ("uniform", pytest.approx(1 / 27), pytest.approx(1 / 27))
    (vllm,) = parse((DATA / "vllm_bench_serve_c8.json").read_text(), "vllm").points
    assert vllm.lengths_uniform_scv is None and tails.point_load(vllm).input_tokens_scv == 0


def test_validate_mine_json_shows_each_percentile_with_both_errors(catalog, tmp_path):
    db = tmp_path / "m.db"
    Store(db).add_measurements(read_runs(catalog, [("c8.json", (DATA / "vllm_bench_serve_c8.json").read_bytes())], H100))
    done = CliRunner().invoke(app, ["validate", "--mine", "--json", "--db", str(db)])
    assert done.exit_code == 0, done.output
    (run,) = json.loads(done.output)["mine"]
    rows = run["points"][0]["tails"]["percentiles"]
    assert [r["metric"] for r in rows] == ["ttft_p50_s", "ttft_p99_s", "tpot_p50_s", "tpot_p99_s"]
    for r in rows:
        assert r["approximation_error"] == pytest.approx(r["approximation"] / r["measured"] - 1)
        assert r["simulation_error"] == pytest.approx(r["simulation"] / r["measured"] - 1)
    assert [m["metric"] for m in run["tail_median_abs_error"]] == ["ttft_p50_s", "ttft_p99_s", "tpot_p50_s", "tpot_p99_s"]
    text = CliRunner().invoke(app, ["validate", "--mine", "--db", str(db)], env={"COLUMNS": "200"})
    assert "TTFT p99" in text.output and "simulation" in text.output


def test_a_run_stored_before_percentiles_were_read_still_reads(catalog, tmp_path):
    db = tmp_path / "old.db"
    store = Store(db)
    (run,) = store.add_measurements(read_runs(catalog, [("c8.json", (DATA / "vllm_bench_serve_c8.json").read_bytes())], H100))
    old_fields = {"concurrency", "input_tokens", "output_tokens", "ttft_s", "tpot_s", "output_tokens_per_s_total",
                  "requests_per_s", "prefill_tokens_per_s"}
    body = json.loads(run.model_dump_json(exclude={"id"}))
    body["points"] = [{k: v for k, v in p.items() if k in old_fields} for p in body["points"]]
    with sqlite3.connect(db) as con:
        con.execute("UPDATE measurements SET body = ? WHERE id = ?", (json.dumps(body), run.id))
    (back,) = Store(db).list_measurements()
    assert back.points[0].tpot_s == run.points[0].tpot_s and not tails.has_tails(back.points[0])
    assert compare_run(back, catalog).points[0].tails is None


def test_a_load_past_what_the_simulation_takes_is_refused_naming_the_field():
    p = MeasuredPoint(concurrency=5_000_000, input_tokens=1024, output_tokens=256, ttft_p99_s=1.0)
    with pytest.raises(InvalidScenarioError) as exc:
        tails.point_load(p)
    assert exc.value.field == "concurrency"


def test_the_api_view_carries_the_percentile_comparison(catalog, tmp_path):
    from fastapi.testclient import TestClient

    from inferplan.shells.api import create_app

    db = tmp_path / "api.db"
    Store(db).add_measurements(read_runs(catalog, [("c8.json", (DATA / "vllm_bench_serve_c8.json").read_bytes())], H100))
    client = TestClient(create_app(db))
    (run,) = client.get("/api/measurements/view").json()["runs"]
    shown = client.get(f"/api/measurements/{run['run']['id']}").json()
    for body in (run, shown):
        tails_ = body["points"][0]["tails"]
        assert tails_["load"] == "closed loop, 8 clients" and len(tails_["percentiles"]) == 4


def test_the_view_words_each_run_for_the_page(tmp_path):
    """GET /api/measurements/view carries each run's line as the page lists it: its median errors on
    the means and, for percentiles, the approximation's and the simulation's (no sums in the page)."""
    from fastapi.testclient import TestClient

    from inferplan.shells.api import create_app

    client = TestClient(create_app(tmp_path / "v.db"))
    content = (Path(__file__).parent / "data" / "measurements" / "vllm_bench_serve_c8.json").read_text()
    posted = client.post("/api/measurements", json={"files": [{"name": "c8.json", "content": content}],
                                                    "provenance": {"model": "llama-3.1-8b", "gpu": "H100"}})
    assert posted.status_code == 201, posted.text
    view = client.get("/api/measurements/view").json()
    assert len(view["texts"]) == len(view["runs"]) == 1
    text = view["texts"][0]
    assert text.startswith("#1 ") and "median |error| TTFT" in text
    assert re.search(r"under load \(approximation / simulation\) TTFT p50 \d+% / \d+%", text), text
