"""Importing the user's own benchmark runs: each client's format, refusals naming the key or line,
all-or-nothing storage, planning on them (measured-local) and predicted vs measured."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from inferplan.catalog.provenance import Source
from inferplan.catalog.points_schema import SpeedPoint
from inferplan.errors import ConflictError, InferplanError, InvalidScenarioError
from inferplan.inputs.deployment import Deployment
from inferplan.inputs.workload import Workload
from inferplan.measurements.compare import compare_run
from inferplan.measurements.export import run_as_catalogue
from inferplan.measurements.records import RunProvenance, read_runs
from inferplan.performance.frontier import frontier
from inferplan.performance.serving import estimate
from inferplan.store import Store

DATA = Path(__file__).parent / "data" / "measurements"
H100_VLLM = RunProvenance(model="llama-3.1-8b", gpu="h100", engine="vllm", engine_version="0.11.0", measured_by="lab")
FIXTURES = [
    ("vllm_bench_serve_c8.json", "vllm", H100_VLLM, [(8, 1024, 256)]),
    ("sglang_bench_serving.jsonl", "sglang", H100_VLLM.model_copy(update={"engine": "sglang"}), [(1, 1024, 256), (8, 1024, 256), (32, 1024, 256)]),
    ("llama_bench.json", "llama-bench", RunProvenance(model="llama-3.1-8b", gpu="rtx-4090", engine="llamacpp", quantization="q4_0"), [(1, 512, 0), (1, 0, 128)]),
    ("llama_bench.csv", "llama-bench", RunProvenance(model="llama-3.1-8b", gpu="rtx-4090", engine="llamacpp", quantization="q4_0"), [(1, 512, 0), (1, 0, 128)]),
    ("llama_bench.md", "llama-bench", RunProvenance(model="llama-3.1-8b", gpu="rtx-4090", engine="llamacpp", quantization="q4_0"), [(1, 512, 0), (1, 0, 128)]),
    ("profile_export_genai_perf.json", "genai-perf", H100_VLLM, [(16, 1024, 256)]),
    ("guidellm_report.json", "guidellm", H100_VLLM, [(4, 1024, 256), (16, 1024, 256)]),
    ("measured.csv", "csv", H100_VLLM, [(1, 1024, 256), (8, 1024, 256)]),
]


def files(*names):
    return [(n, (DATA / n).read_bytes()) for n in names]


@pytest.mark.parametrize(("name", "fmt", "given", "levels"), FIXTURES)
def test_each_clients_file_is_read(catalog, name, fmt, given, levels):
    (run,) = read_runs(catalog, files(name), given)
    assert run.format == fmt and run.model == "llama-3.1-8b"
    assert [(p.concurrency, p.input_tokens, p.output_tokens) for p in run.points] == levels


def test_vllm_figures_are_in_si_units(catalog):
    (run,) = read_runs(catalog, files("vllm_bench_serve_c8.json"), H100_VLLM)
    p = run.points[0]
    assert (p.ttft_s, p.tpot_s, p.output_tokens_per_s_total) == pytest.approx((0.0483, 0.00841, 927.5))
    assert run.measured_on == dt.date(2026, 11, 1) and run.accelerator == "h100-sxm"


def test_llama_bench_states_its_build(catalog):
    (run,) = read_runs(catalog, files("llama_bench.json"), FIXTURES[2][2])
    assert run.engine_version == "b5210 (3f4fc97f)" and run.points[0].prefill_tokens_per_s == pytest.approx(8797.03)


@pytest.mark.parametrize(("name", "text", "field"), [
    ("run.json", '{"completed": 10, "max_concurrency": 4, "total_input_tokens": 100, "total_output_tokens": 50, '
                 '"mean_ttft_ms": 5, "mean_tpot_ms": 1}', "output_throughput"),
    ("run.json", '{"completed": 10, "total_input_tokens": 100, "total_output_tokens": 50, "mean_ttft_ms": 5, '
                 '"mean_tpot_ms": 1, "output_throughput": 3}', "request_rate"),  # no cap and no rate: the load is unknown
    ("run.json", '{"completed": 10, "request_rate": 4, "total_input_tokens": 100, "total_output_tokens": 50, '
                 '"mean_ttft_ms": 5, "mean_tpot_ms": 1, "output_throughput": 3}', "request_throughput"),
    ("run.json", '{"completed": 10, "max_concurrency": 4, "total_input_tokens": "many", "total_output_tokens": 50, '
                 '"mean_ttft_ms": 5, "mean_tpot_ms": 1, "output_throughput": 3}', "total_input_tokens"),
    ("runs.jsonl", '{"completed": 1}\n{broken', "line 1: total_input_tokens"),
    ("m.csv", "concurrency,input_tokens\n1,2\n", "line 1"),
    ("m.csv", "concurrency,input_tokens,output_tokens,tpot_ms\n1,1024,256,-3\n", "line 2: tpot_ms"),
    ("profile_export_genai_perf.json", '{"time_to_first_token": {"avg": 3}, "input_config": {"concurrency": 2}}', "input_sequence_length"),
    ("guidellm.json", '{"benchmarks": [{"args": {"strategy": {"streams": 2}}, "metrics": {}}]}', "benchmarks[0].prompt_token_count.successful"),
])
def test_a_malformed_file_is_refused_naming_the_key_or_line(catalog, name, text, field):
    with pytest.raises(InvalidScenarioError) as info:
        read_runs(catalog, [(name, text.encode())], H100_VLLM)
    assert info.value.field == field and name in str(info.value)


def test_a_csv_with_carriage_return_line_ends_is_read(catalog):
    runs = read_runs(catalog, [("m.csv", b"concurrency,input_tokens,output_tokens,tpot_ms\r1,1024,256,12\r")], H100_VLLM)
    assert [p.concurrency for r in runs for p in r.points] == [1]


def test_a_csv_the_csv_module_cannot_read_is_refused_naming_the_line(catalog):
    text = "concurrency,input_tokens,output_tokens,tpot_ms\n1,1024,256,12\n" + "x" * 140_000 + "\n"
    with pytest.raises(InvalidScenarioError) as info:
        read_runs(catalog, [("m.csv", text.encode())], H100_VLLM)
    assert info.value.field == "line 3" and "m.csv" in str(info.value)


def test_nothing_is_half_imported(catalog, tmp_path):
    store = Store(tmp_path / "db.sqlite")
    with pytest.raises(InvalidScenarioError):
        store.add_measurements(read_runs(catalog, files("vllm_bench_serve_c8.json") + [("bad.json", b"{")], H100_VLLM))
    assert store.list_measurements() == []


def _import_check(catalog, store, name, data):
    before = store.list_measurements()
    try:
        runs = read_runs(catalog, [(name, data)], H100_VLLM)
    except InferplanError:
        assert store.list_measurements() == before
        return
    try:
        saved = store.add_measurements(runs)
    except ConflictError:  # the same bytes drawn again: stored already, so nothing more is stored
        assert store.list_measurements() == before
        return
    assert len(store.list_measurements()) == len(before) + len(saved)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.binary(max_size=400), name=st.sampled_from(["r.json", "r.jsonl", "r.csv", "x.md", "profile_export_genai_perf.json"]))
def test_arbitrary_bytes_never_crash_the_importer(catalog, tmp_path, data, name):
    _import_check(catalog, Store(tmp_path / "fuzz.db"), name, data)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(fixture=st.sampled_from([f[0] for f in FIXTURES]), cut=st.floats(0, 1))
def test_truncated_files_never_crash_the_importer_nor_store_a_part(catalog, tmp_path, fixture, cut):
    data = (DATA / fixture).read_bytes()
    _import_check(catalog, Store(tmp_path / "trunc.db"), fixture, data[: int(len(data) * cut)])


def _runs(catalog, tmp_path, *names, given=H100_VLLM):
    store = Store(tmp_path / "runs.db")
    store.add_measurements(read_runs(catalog, files(*names), given))
    return store, tuple(r.as_user_run() for r in store.list_measurements())


D = Deployment(model="llama-3.1-8b", gpu="h100", engine="vllm", engine_version="0.11.0")  # the runs' release


def test_perf_interpolates_the_users_runs(catalog, tmp_path):
    _, runs = _runs(catalog, tmp_path, "vllm_bench_serve_c8.json", "vllm_bench_serve_c32.json")
    est = estimate(D, Workload(input_len=1024, output_len=256, concurrency=16), catalog, user_runs=runs)
    assert est.source == "measured-local" and est.measured_record == 2
    assert est.measured_label == "measured (yours, 2026-11-01)"
    # halfway in log concurrency between the measured 8.41 ms and 14.2 ms
    assert est.tpot_s == pytest.approx((0.00841 + 0.0142) / 2)
    at8 = estimate(D, Workload(input_len=1024, output_len=256, concurrency=8), catalog, user_runs=runs)
    assert at8.output_tokens_per_s_total == pytest.approx(927.5)


def test_a_near_match_says_what_differs(catalog, tmp_path):
    _, runs = _runs(catalog, tmp_path, "vllm_bench_serve_c8.json")
    model = estimate(D, Workload(input_len=2048, output_len=256, concurrency=8), catalog, use_profiles=False)
    est = estimate(D, Workload(input_len=2048, output_len=256, concurrency=8), catalog, user_runs=runs)
    assert est.source == "measured-local" and "measured at 1024/256 tokens, asked 2048/256" in est.assumptions[-1]
    assert est.tpot_s != pytest.approx(model.tpot_s)


def test_another_deployment_is_not_matched(catalog, tmp_path):
    _, runs = _runs(catalog, tmp_path, "vllm_bench_serve_c8.json")
    est = estimate(D.model_copy(update={"engine": "sglang", "engine_version": None}), Workload(input_len=1024, output_len=256, concurrency=8),
                   catalog, user_runs=runs)
    assert est.source != "measured-local" and est.measured_record is None


def test_frontier_uses_the_users_runs(catalog, tmp_path):
    _, runs = _runs(catalog, tmp_path, "vllm_bench_serve_c8.json", "vllm_bench_serve_c32.json")
    f = frontier(D, Workload(input_len=1024, output_len=256), catalog, points=8, user_runs=runs)
    assert "measured-local" in f.source


def test_predicted_vs_measured_shows_the_error(catalog, tmp_path):
    store, _ = _runs(catalog, tmp_path, "vllm_bench_serve_c8.json")
    result = compare_run(store.get_measurement(1), catalog)
    tpot = next(m for m in result.points[0].metrics if m.metric == "tpot_s")
    assert tpot.measured == pytest.approx(0.00841) and tpot.error == pytest.approx(tpot.predicted / 0.00841 - 1)
    assert {"ttft_s", "tpot_s", "output_tokens_per_s_total"} <= set(result.median_abs_error)


def test_measurements_survive_a_restart(catalog, tmp_path):
    _runs(catalog, tmp_path, "sglang_bench_serving.jsonl", given=FIXTURES[1][2])
    again = Store(tmp_path / "runs.db")
    assert [len(r.points) for r in again.list_measurements()] == [3]


def test_export_is_catalogue_yaml_in_the_speed_points_schema(catalog, tmp_path):
    store, _ = _runs(catalog, tmp_path, "guidellm_report.json")
    data = yaml.safe_load(yaml.safe_dump(run_as_catalogue(store.get_measurement(1))))
    Source.model_validate(data["sources"][0])
    points = [SpeedPoint.model_validate(p) for p in data["speed_points"]]
    assert {p.metric.value for p in points} == {"ttft_s", "tpot_s", "output_tokens_per_s_total"}
    assert all(p.measured.source == data["sources"][0]["id"] for p in points)


def test_the_reported_kv_cache_is_compared_with_the_memory_plan(catalog, tmp_path):
    from inferplan.memory.fit import fit

    given = H100_VLLM.model_copy(update={"kv_cache_tokens": 450_000, "max_model_len": 8192})
    store = Store(tmp_path / "kv.db")
    (run,) = store.add_measurements(read_runs(catalog, files("vllm_bench_serve_c8.json"), given))
    kv = compare_run(run, catalog).kv_cache_tokens
    # at the release the run states (0.11.0), not the current one
    planned = fit(Deployment(model="llama-3.1-8b", gpu="h100", max_model_len=8192, engine_version="0.11.0"),
                  catalog).kv_cache_tokens
    assert kv.measured == 450_000 and kv.predicted == planned and kv.error == pytest.approx(planned / 450_000 - 1)


def test_a_run_stored_already_is_refused_and_not_stored_twice(catalog, tmp_path):
    store = Store(tmp_path / "dup.db")
    (first,) = store.add_measurements(read_runs(catalog, files("vllm_bench_serve_c8.json"), H100_VLLM))
    with pytest.raises(ConflictError) as info:
        store.add_measurements(read_runs(catalog, files("vllm_bench_serve_c32.json", "vllm_bench_serve_c8.json"),
                                         H100_VLLM))
    assert info.value.field == "file" and f"run {first.id}" in str(info.value)
    assert [r.id for r in store.list_measurements()] == [first.id]  # the new c32 run is not half-imported
    with pytest.raises(ConflictError):  # the same file twice in one import
        store.add_measurements(read_runs(catalog, files("vllm_bench_serve_c32.json", "vllm_bench_serve_c32.json"),
                                         H100_VLLM))
    other = H100_VLLM.model_copy(update={"note": "after the driver update"})
    assert store.add_measurements(read_runs(catalog, files("vllm_bench_serve_c8.json"), other))  # a new run


def test_a_copy_of_a_stored_run_under_another_name_is_the_same_run(catalog, tmp_path):
    store = Store(tmp_path / "copy.db")
    (first,) = store.add_measurements(read_runs(catalog, files("vllm_bench_serve_c8.json"), H100_VLLM))
    copy = [("results/run-c8-again.json", (DATA / "vllm_bench_serve_c8.json").read_bytes())]
    with pytest.raises(ConflictError) as info:
        store.add_measurements(read_runs(catalog, copy, H100_VLLM))
    assert f"run {first.id}" in str(info.value) and str(info.value).startswith("results/run-c8-again.json")
    assert len(store.list_measurements()) == 1  # validate --mine would count it twice


def test_a_failure_while_storing_rolls_back_the_whole_import(catalog, tmp_path):
    store = Store(tmp_path / "tx.db")
    good = read_runs(catalog, files("vllm_bench_serve_c8.json", "vllm_bench_serve_c32.json"), H100_VLLM)

    class Unwritable:
        model = accelerator = "x"

        def model_dump_json(self, **_):
            raise OSError("disk full")

        model_dump = model_dump_json  # the store reads the run's identity before it writes

    with pytest.raises(OSError):
        store.add_measurements([good[0], Unwritable(), good[1]])
    assert store.list_measurements() == []


JSON_VALUES = st.recursive(st.none() | st.booleans() | st.integers(-10**6, 10**12) | st.floats(allow_nan=False) | st.text(max_size=8),
                           lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
                           max_leaves=6)


def _mutate(value, draw, depth=0):
    """The fixture's JSON with keys dropped and values replaced at random, all the way down."""
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            choice = draw(st.integers(0, 9))
            if choice == 0:
                continue  # dropped
            out[k] = draw(JSON_VALUES) if choice == 1 else _mutate(v, draw, depth + 1)
        return out
    if isinstance(value, list):
        return [_mutate(v, draw, depth + 1) for v in value if draw(st.integers(0, 9))]
    return draw(JSON_VALUES) if draw(st.integers(0, 9)) == 0 else value


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(fixture=st.sampled_from(["vllm_bench_serve_c8.json", "profile_export_genai_perf.json", "guidellm_report.json",
                                "llama_bench.json", "sglang_bench_serving.jsonl"]), data=st.data())
def test_damaged_json_of_each_client_never_crashes_the_importer(catalog, tmp_path, fixture, data):
    import json

    text = (DATA / fixture).read_text()
    if fixture.endswith(".jsonl"):
        damaged = "\n".join(json.dumps(_mutate(json.loads(line), data.draw)) for line in text.splitlines())
    else:
        damaged = json.dumps(_mutate(json.loads(text), data.draw))
    _import_check(catalog, Store(tmp_path / "damaged.db"), fixture, damaged.encode())


def test_a_command_skips_the_store_only_when_no_run_is_stored(catalog, tmp_path):
    from inferplan.store_path import holds_measurements

    assert not holds_measurements(tmp_path / "missing.db")
    empty = Store(tmp_path / "empty.db")
    empty.list_measurements()  # creates the tables
    assert not holds_measurements(tmp_path / "empty.db")
    _runs(catalog, tmp_path, "vllm_bench_serve_c8.json")
    assert holds_measurements(tmp_path / "runs.db")
    (tmp_path / "foreign.db").write_bytes(b"not a database")
    assert holds_measurements(tmp_path / "foreign.db")  # the store opens it and names the problem


@pytest.mark.parametrize("name", ["runs#1.db", "what?.db", "100%25.db"])
def test_a_database_name_with_uri_characters_is_read_as_named(tmp_path, name):
    from inferplan.store_path import holds_measurements

    Store(tmp_path / name).list_measurements()
    assert not holds_measurements(tmp_path / name)
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.startswith(name)) == []  # no stray file


def test_a_measured_prompt_rate_sets_ttft_where_the_run_has_no_ttft(catalog, tmp_path):
    """llama-bench measures prompt processing alone (pp512: 8,797 tokens/s) and decode (tg128), no
    TTFT: perf's TTFT takes its prompt time from the measured rate, not the model's."""
    prov = FIXTURES[2][2]
    _, runs = _runs(catalog, tmp_path, "llama_bench.json", given=prov)
    d = Deployment(model="llama-3.1-8b", gpu="rtx-4090", engine="llamacpp", quantization="q4_0")
    w = Workload(input_len=512, output_len=128, concurrency=1)
    model = estimate(d, w, catalog, use_profiles=False)
    est = estimate(d, w, catalog, user_runs=runs)
    assert est.source == "measured-local"
    assert est.prefill_s == pytest.approx(512 / 8797.03, rel=1e-6)
    assert est.ttft_s - est.prefill_s == pytest.approx(model.ttft_s - model.prefill_s, rel=1e-6)
    assert "prompt processing" in est.assumptions[-1]


def test_a_run_whose_import_names_no_one_is_not_said_to_be_by_unstated(catalog, tmp_path):
    from typer.testing import CliRunner

    from inferplan.shells.cli import app

    nameless = RunProvenance(model="llama-3.1-8b", gpu="rtx-4090")
    (run,) = read_runs(catalog, files("llama_bench.json"), nameless)
    assert run.measured_by == "unstated" and "by unstated" not in str(run_as_catalogue(run.model_copy(update={"id": 1})))
    (named,) = read_runs(catalog, files("llama_bench.json"), nameless.model_copy(update={"measured_by": "lab"}))
    assert "measured by lab" in str(run_as_catalogue(named.model_copy(update={"id": 2})))
    db, file = str(tmp_path / "m.db"), str(DATA / "llama_bench.json")
    for extra in ([], ["--measured-by", "lab"]):
        assert CliRunner().invoke(app, ["measurements", "import", file, "--gpu", "rtx-4090", "--db", db, *extra]).exit_code == 0
    shown = [" ".join(CliRunner().invoke(app, ["measurements", "show", i, "--db", db]).output.split()) for i in ("1", "2")]
    assert "by unstated" not in shown[0] and "measured 2026-11-02 (llama-bench" in shown[0]
    assert "measured 2026-11-02 by lab (llama-bench" in shown[1]
