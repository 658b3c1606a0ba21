"""What a search's rows show: one row for builds of a model that run a deployment the same, and
each row's latency percentiles labelled by where they come from (the simulation, where it ran)."""

from __future__ import annotations

import json

import pytest

from inferplan.memory.resolve import resolve_model
from inferplan.report.search_view import duration, latency_text
from inferplan.search.equivalent import same_figures, support_key
from inferplan.search.request import SearchRequest
from inferplan.search.run import search

# Qwen3-235B-A22B's official FP8 build (128x128 blocks, fp8-block) and NVIDIA's per-tensor one (fp8)
TWIN_BUILDS = SearchRequest(models=("qwen3-235b-a22b",), users=500, workload="coding-developer-median",
                            systems=("gb200-nvl72",), engines=("sglang",), quantizations=("fp8", "fp8-block"),
                            kv_cache_dtypes=("fp8",), disaggregated=False, top=2)


@pytest.fixture(scope="module")
def twins(catalog):
    return search(TWIN_BUILDS, catalog)


def _shape(d) -> tuple:
    return (d.platform, d.engine, d.kv_cache_dtype, d.tensor_parallel_size, d.pipeline_parallel_size,
            d.data_parallel_size, d.expert_parallel, d.replicas, round(d.monthly_usd, 2))


def test_two_builds_that_run_a_deployment_the_same_are_one_row_in_the_better_supported_build(twins, catalog):
    """The fp8 and fp8-block builds give the same cell the same cost and figures: one row, in the
    build whose checkpoint size the catalogue states (fp8-block), naming the other."""
    first = twins.results[0]
    assert first.quantization == "fp8-block" and first.equivalent_quantizations == ("fp8",)
    assert any("the fp8 build of the model runs this deployment the same" in n for n in first.notes)
    spec = resolve_model(catalog, "qwen3-235b-a22b")
    assert support_key(spec, "fp8-block") < support_key(spec, "fp8")
    shapes = [_shape(d) for d in twins.results]
    assert len(set(shapes)) == len(shapes)  # no deployment ranked twice, once per build


def test_figures_a_tenth_of_a_percent_apart_read_the_same_and_a_percent_apart_do_not():
    a = dict(ttft_p50_s=0.1, ttft_p95_s=0.2, ttft_p99_s=0.3, tpot_p95_s=0.01, e2e_p95_s=10.0, tokens_per_s_per_user=80.0)
    assert same_figures(a, {**a, "ttft_p99_s": 0.3 * 1.0005})
    assert not same_figures(a, {**a, "ttft_p99_s": 0.3 * 1.01})


def test_a_simulated_row_shows_the_simulated_percentiles_labelled(twins):
    """The row shows the simulation's TTFT percentiles, labelled, where the approximation's differ."""
    d = twins.results[0]
    sim = d.simulation
    shown = lambda r: tuple(duration(getattr(r, f"ttft_p{q}_s")) for q in (50, 95, 99))  # noqa: E731
    assert shown(d) != shown(sim) and duration(sim.ttft_p50_s) != duration(sim.ttft_p99_s)  # as rendered
    text = latency_text(d)
    assert (f"TTFT {duration(sim.ttft_p50_s)} / {duration(sim.ttft_p95_s)} / {duration(sim.ttft_p99_s)} "
            "(p50/95/99, simulated)") in text
    assert f"TPOT p95 {duration(sim.tpot_p95_s)}" in text and "TTFT {} / {} / {} ".format(*shown(d)) not in text
    unsimulated = latency_text(d.model_copy(update={"simulation": None}))
    assert f"TTFT {duration(d.ttft_p50_s)} / " in unsimulated and "(p50/95/99, approximated)" in unsimulated


def test_the_json_names_each_figure_the_row_shows(twins):
    """The JSON keeps the approximation under ``ttft_p95_s`` … and the simulation's under ``simulated_…``:
    the row's figures are the ``simulated_`` ones where the pick was simulated, the others where not."""
    d = twins.results[0]
    j = json.loads(d.model_dump_json())
    text = latency_text(d)
    assert j["simulated_ttft_p95_s"] == d.simulation.ttft_p95_s != j["ttft_p95_s"]
    assert f" / {duration(j['simulated_ttft_p95_s'])} / " in text and "(p50/95/99, simulated)" in text
    assert f"TPOT p95 {duration(j['simulated_tpot_p95_s'])}" in text
    assert f"end-to-end p95 {duration(j['simulated_e2e_p95_s'])} (simulated)" in text
    plain = d.model_copy(update={"simulation": None})
    j = json.loads(plain.model_dump_json())
    assert j["simulated_ttft_p95_s"] is None and j["simulated_e2e_p95_s"] is None
    assert f"end-to-end p95 {duration(j['e2e_p95_s'])} (approximated)" in latency_text(plain)


def test_a_time_under_a_millisecond_does_not_read_as_nothing():
    assert duration(0.00031) == "0.31 ms"  # a KV cache handed over over NVLink
    assert duration(0.000004) == "< 0.01 ms" and duration(0.0) == "0 ms"
    assert duration(0.0123) == "12 ms" and duration(1.5) == "1.50 s"
