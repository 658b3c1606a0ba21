"""The spread and shape of a benchmark client's request lengths are catalogue data
(``measurements/benchmark_clients.yaml``), read by the latency validation for each run."""

from types import SimpleNamespace

import pytest

from inferplan.catalog.loader import load_catalog
from inferplan.catalog.latency_schema import check_benchmark_clients
from inferplan.errors import CatalogError
from inferplan.validation.latency import _load

CATALOG = load_catalog()


def _point(engine, dataset):
    return next(p for p in CATALOG.latency_points if (p.engine, p.dataset) == (engine, dataset))


def test_each_client_and_dataset_of_the_latency_points_has_its_sourced_spread():
    spreads = {(d.engine, d.dataset): d for d in CATALOG.benchmark_datasets}
    assert {(p.engine, p.dataset) for p in CATALOG.latency_points} <= set(spreads)
    sglang = spreads["sglang", "random"]
    assert sglang.shape == "uniform" and sglang.prompt_scv.value == pytest.approx(1 / 3)
    assert sglang.prompt_scv.kind.value == "derived" and sglang.prompt_scv.source in CATALOG.sources
    assert spreads["vllm", "random"].prompt_scv.value == 0.0 and spreads["vllm", "random"].prompt_scv.kind.value == "spec"
    assert spreads["vllm", "sharegpt"].output_scv.kind.value == "assumed"


def test_a_runs_load_takes_its_clients_spread_from_the_catalogue():
    p = _point("sglang", "random")
    load = _load(p, CATALOG)
    assert load.lengths == "uniform" and load.input_tokens_scv == pytest.approx(1 / 3)
    record = next(d for d in CATALOG.benchmark_datasets if d.id == "sglang-random")
    narrower = record.model_copy(update={"prompt_scv": record.prompt_scv.model_copy(update={"value": 0.1})})
    assert _load(p, SimpleNamespace(benchmark_datasets=[narrower])).input_tokens_scv == pytest.approx(0.1)


def test_a_latency_point_whose_client_has_no_spread_is_refused_on_load():
    kept = [d for d in CATALOG.benchmark_datasets if d.id != "vllm-sharegpt"]
    partial = SimpleNamespace(benchmark_datasets=kept, bench_tunings=CATALOG.bench_tunings, sources=CATALOG.sources,
                              engines=CATALOG.engines, quantizations=CATALOG.quantizations,
                              latency_points=CATALOG.latency_points)
    with pytest.raises(CatalogError, match="no benchmark_datasets record for vllm's client on sharegpt"):
        check_benchmark_clients(partial)
    twice = SimpleNamespace(**{**vars(partial), "benchmark_datasets": [*CATALOG.benchmark_datasets, kept[0]]})
    with pytest.raises(CatalogError, match="is also"):
        check_benchmark_clients(twice)
