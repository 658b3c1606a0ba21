"""calibration.yaml's ``speed-capacity-log-sigma`` (the Monte Carlo's capacity spread) is derived from the speed
model's held-out serving-throughput error: σ = m / 0.674 for a normal error, m the median |error| of the held-out
throughput points from many sources. The blind rows of TensorRT-LLM's length tables (one source) and its PP 8 rows
(whose form was chosen after they were seen) are left out, as the constant's note says."""

import statistics

import yaml

from inferplan.catalog.loader import DATA_DIR, load_catalog
from inferplan.validation.speed import check_point, kind_of

CATALOG = load_catalog()
LENGTH_TABLES = DATA_DIR / "measurements" / "speed_trtllm_lengths.yaml"
NORMAL_MEDIAN_ABS = 0.674  # median |x| of a standard normal, in σ


def spread_points():
    blind = {p["id"] for p in yaml.safe_load(LENGTH_TABLES.read_text())["speed_points"]}
    return [p for p in CATALOG.speed_points if kind_of(p) == "throughput" and p.split == "holdout"
            and p.id not in blind and not (p.engine == "trtllm" and p.pipeline_parallel_size == 8)]


def test_the_capacity_spread_is_the_held_out_throughput_median_over_0_674():
    checks = [check_point(p, CATALOG) for p in spread_points()]
    errors = [abs(c.error) for c in checks if c.error is not None and c.scored]
    assert len(errors) >= 20  # many sources, not one table
    median = statistics.median(errors)
    sigma = CATALOG.constant("speed-capacity-log-sigma")
    assert round(median / NORMAL_MEDIAN_ABS, 2) == sigma, (
        f"held-out throughput median {median:.1%} on {len(errors)} points: set speed-capacity-log-sigma to "
        f"{median / NORMAL_MEDIAN_ABS:.2f}")


def test_the_left_out_rows_are_the_blind_length_tables_and_pp8():
    held_out = [p for p in CATALOG.speed_points if kind_of(p) == "throughput" and p.split == "holdout"]
    kept = {p.id for p in spread_points()}
    left_out = [p for p in held_out if p.id not in kept]
    assert {p.engine for p in left_out} == {"trtllm"} and len(left_out) < len(held_out)
    assert len({p.measured.source for p in left_out}) == 1  # one source: the perf overview's tables
