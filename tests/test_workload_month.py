"""One month per workload preset: the request shape carries the month's output share, so requests
derived from the monthly output volume carry the monthly input volume too, and a search's $/Mtok
divides by the tokens its load carries."""

from __future__ import annotations

import pytest

from inferplan.economics.workloads import WorkloadOverrides, resolve_workload
from inferplan.units import SECONDS_PER_MONTH
from inferplan.search.load import resolve_load
from inferplan.search.request import SearchRequest


def test_every_preset_request_shape_carries_its_output_share(catalog):
    for p in catalog.workload_presets:
        i, o = p.input_tokens_per_request.value, p.output_tokens_per_request.value
        assert o / (i + o) == pytest.approx(p.output_share.value, rel=1e-9), p.id


@pytest.mark.parametrize("preset", ["chat-seat", "coding-developer-median", "coding-developer-p90", "agent-worker",
                                    "background-agent"])
def test_a_searched_users_load_carries_the_presets_month(catalog, preset):
    users = 500
    rl = resolve_load(catalog, SearchRequest(models=("qwen3-32b",), users=users, workload=preset))
    w = resolve_workload(catalog, WorkloadOverrides(preset=preset))
    carried_per_month = rl.request_rate_per_s * SECONDS_PER_MONTH / w.peak_to_average
    assert carried_per_month * rl.output_len == pytest.approx(users * w.monthly_output_tokens, rel=1e-9)
    assert carried_per_month * rl.input_len == pytest.approx(users * w.monthly_input_tokens, rel=1e-9)
    assert rl.monthly_tokens == pytest.approx(carried_per_month * (rl.input_len + rl.output_len), rel=1e-9)
