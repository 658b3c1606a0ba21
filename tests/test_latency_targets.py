"""The accuracy asked of the latency model is data: calibration.yaml's ``latency-target-p50`` and
``latency-target-p99`` (held-out median |predicted / measured − 1|), which docs/search.md's summary reads."""

from inferplan.catalog.loader import load_catalog
from inferplan.validation.docs_latency import summary, targets
from inferplan.validation.latency import LatencyMedian, LatencyValidation

CATALOG = load_catalog()


def held_out(metric: str, approximation: float, simulation: float) -> LatencyMedian:
    return LatencyMedian(split="holdout", metric=metric, points=11, approximation_abs_error=approximation,
                         simulation_abs_error=simulation)


def test_the_targets_are_the_catalogues_constants():
    assert targets(CATALOG) == {"p50": CATALOG.constant("latency-target-p50"), "p99": CATALOG.constant("latency-target-p99")}
    assert targets(CATALOG) == {"p50": 0.20, "p99": 0.30}  # p50 within 20 %, p99 within 30 % median, held out
    assert all(CATALOG.calibration.records[f"latency-target-{q}"].method.startswith("assumed") for q in ("p50", "p99"))


def test_the_summary_reads_each_median_against_its_percentiles_target():
    v = LatencyValidation(checks=(), skipped=(), medians=(held_out("ttft_p50_s", 0.19, 0.24), held_out("tpot_p99_s", 0.31, 0.29)))
    text = summary(v, targets(CATALOG))
    assert "TTFT p50 19% / 24% (the approximation within 20%)" in text
    assert "TPOT p99 31% / 29% (the simulation within 30%)" in text
    # the sentence follows the data, not a number in the code
    assert "TTFT p50 19% / 24% (both within 25%)" in summary(v, {"p50": 0.25, "p99": 0.30})
