"""The SGLang cookbook runs' ``prompts_cached_at_start`` rest on bench_serving's seeded prompt draw.

bench_serving (source ``lat-sglang-bench-serving``) seeds numpy with ``--seed`` (default 1) and draws
the random dataset's prompt lengths as ``randint(max(int(L · range_ratio), 1), L + 1, size=N)``
(default range ratio 0) before anything else, then cuts prompt i from the i-th conversation of a
seeded shuffle. The legacy numpy stream draws element by element, so a run's first K prompts are an
earlier run's whenever both ran with the same ``--random-input-len`` L. If the cookbook had passed
another seed or range ratio, the draw would not give each run's printed input total: these cases
check that it does, for every cookbook run a record counts as cached.
"""

from __future__ import annotations

import numpy as np
import pytest

from inferplan.catalog.loader import load_catalog

BENCH_SERVING_DEFAULT_SEED = 1
# point id -> the run's --random-input-len, as its cookbook page prints the command
RANDOM_INPUT_LEN = {
    "l-sglcb-l31-70b-a100-1k1k-c16": 1000,
    "l-sglcb-l31-70b-a100-1k1k-c100": 1000,
    "l-sglcb-l31-70b-a100-8k1k-c16": 8000,
    "l-sglcb-l31-70b-a100-8k1k-c64": 8000,
    "l-sglcb-q3-235b-b200-1k1k-c16": 1000,
    "l-sglcb-q3-235b-b200-1k1k-c100": 1000,
    "l-sglcb-q3-235b-b200-1k8k-c64": 1000,
    "l-sglcb-q3-235b-b200-8k1k-c16": 8000,
    "l-sglcb-q3-235b-b200-8k1k-c64": 8000,
    "l-sglcb-r1-b200-1k1k-c16": 1000,
    "l-sglcb-r1-b200-1k1k-c100": 1000,
    "l-sglcb-r1-b200-1k8k-c64": 1000,
    "l-sglcb-r1-b200-8k1k-c64": 8000,
    "l-sglcb-qcoder480b-mi300x-1k1k-c16": 1000,
    "l-sglcb-qcoder480b-mi300x-1k1k-c64": 1000,
}
POINTS = {p.id: p for p in load_catalog().latency_points}


def _seeded_input_lens(random_input_len: int, num_prompts: int) -> np.ndarray:
    rng = np.random.RandomState(BENCH_SERVING_DEFAULT_SEED)
    return rng.randint(1, random_input_len + 1, size=num_prompts)


def test_every_cookbook_run_counted_as_cached_is_checked():
    cached = {i for i, p in POINTS.items() if i.startswith("l-sglcb") and p.prompts_cached_at_start is not None}
    assert cached == set(RANDOM_INPUT_LEN)


@pytest.mark.parametrize("point_id", sorted(RANDOM_INPUT_LEN))
def test_the_seeded_draw_gives_the_runs_printed_input_total(point_id):
    p = POINTS[point_id]
    drawn = _seeded_input_lens(RANDOM_INPUT_LEN[point_id], p.num_prompts)
    assert drawn.sum() == pytest.approx(p.input_tokens * p.num_prompts, abs=0.05 * p.num_prompts)


@pytest.mark.parametrize("point_id", sorted(RANDOM_INPUT_LEN))
def test_no_run_counts_more_cached_prompts_than_an_earlier_run_of_its_length_sent(point_id):
    p = POINTS[point_id]
    earlier = {1000: 500, 8000: 80}[RANDOM_INPUT_LEN[point_id]]  # the most prompts a cookbook run of that length sent
    assert 0 < round(p.prompts_cached_at_start.value) <= min(p.num_prompts, earlier)
