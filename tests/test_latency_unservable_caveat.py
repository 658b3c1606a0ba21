"""A shipped latency point whose stated layout cannot hold the model's weights (validate leaves it unscored) keeps
the layout its source states, with a caveat saying what the source states and why it cannot be so: the weights
against the GPU's memory as the catalogue gives it."""

import pytest

from inferplan.validation.latency import validate_latency
from test_tail_validation import SAMPLE_SERIES, latency_sample


# the sample's series hold the MI355X point that cannot hold its weights; the slow tier checks every point
@pytest.mark.parametrize("series", [SAMPLE_SERIES, pytest.param((), marks=pytest.mark.slow)])
def test_an_unscored_point_that_cannot_hold_its_weights_says_why(catalog, series):
    v = validate_latency(latency_sample(catalog, series))
    unfit = {s.id for s in v.skipped if "does not fit" in s.reason}
    assert "l-vrecipes-l405-mi355x-fp8-c64" in unfit
    points = {p.id: p for p in catalog.latency_points}
    for pid in unfit:
        p = points[pid]
        memory_gb = catalog.accelerator(p.accelerator).memory_bytes.value / 1e9
        said = [c for c in p.caveats if "cannot be" in c or "cannot have been" in c]
        assert said and f"tensor parallel {p.tensor_parallel_size}" in said[0], pid
        assert f"{memory_gb:,.0f} GB" in said[0] and "GiB" not in said[0], said[0]
