"""A published serving run is planned at the engine release it ran (validation/latency.py): the release its
``engine_version`` names, or for an undated build (a nightly, a main branch) the ``engine_release`` read from the
engine's release history at its source's date, with a caveat saying so."""

from inferplan.catalog.loader import load_catalog
from inferplan.validation.latency import _deployment, planned_release


def test_every_run_is_planned_at_a_release_and_an_undated_build_says_how_it_was_read():
    catalog = load_catalog()
    for p in catalog.latency_points:
        release = planned_release(p, catalog)
        assert release is not None, p.id
        assert _deployment(p, catalog).engine_version == release
        if p.engine_release:
            assert any(c.startswith(f"engine_release {p.engine_release}:") for c in p.caveats), p.id


def test_a_release_number_in_the_version_text_is_the_one_planned():
    catalog = load_catalog()
    points = {p.id: p for p in catalog.latency_points}
    assert planned_release(points["l-llmk8s-l33-a100-tp8-qps16"], catalog) == "0.8.3"
    assert planned_release(points["l-sglcb-nemo3super-h200-1k1k-c256"], catalog) == "0.5.9"  # main branch, doc of 2026-03-11
