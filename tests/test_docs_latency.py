"""docs/search.md's latency validation tables equal a fresh render of ``validate_latency``
(``python -m inferplan.validation.docs_latency --write`` rewrites them)."""

import pytest

from inferplan.validation.docs_latency import BLOCKS, DOC, render_tables
from inferplan.validation.docs_tables import blocks, fill

pytestmark = pytest.mark.slow  # the latency validation simulates every point (about 10 s)


@pytest.fixture(scope="module")
def tables():
    return render_tables()


def test_search_md_holds_the_latency_blocks_as_rendered(tables):
    present = blocks(DOC.read_text())
    assert set(BLOCKS) <= set(present) and set(tables) == set(BLOCKS)
    stale = [name for name in BLOCKS if present[name] != tables[name]]
    assert not stale, f"docs/search.md: {stale} differ; run `python -m inferplan.validation.docs_latency --write`"


def test_a_changed_figure_is_caught(tables):
    text = fill(DOC.read_text(), tables)
    edited = text.replace("| holdout | ttft_p99_s | ", "| holdout | ttft_p99_s | 99", 1)
    assert edited != text and blocks(edited)["latency-medians"] != tables["latency-medians"]
