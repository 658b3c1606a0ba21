"""docs/search.md's latency validation tables equal a fresh render of ``validate_latency``
(``python -m inferplan.validation.docs_latency --write`` rewrites them)."""

import pytest

from inferplan.validation.docs_latency import BLOCKS, DOC, render_tables
from inferplan.validation.docs_tables import blocks, fill, write_or_check

pytestmark = pytest.mark.slow  # the latency validation simulates every point (about 10 s)


@pytest.fixture(scope="module")
def tables():
    return render_tables()


def test_search_md_holds_the_latency_blocks_as_rendered(tables):
    present = blocks(DOC.read_text())
    assert set(BLOCKS) <= set(present) and set(tables) == set(BLOCKS)
    stale = [name for name in BLOCKS if present[name] != tables[name]]
    assert not stale, f"docs/search.md: {stale} differ; run `python -m inferplan.validation.docs_latency --write`"


def test_a_changed_figure_is_caught_and_rewritten(tables, tmp_path, capsys):
    doc = tmp_path / "search.md"
    text = fill(DOC.read_text(), tables)
    doc.write_text(text.replace("| holdout | ttft_p99_s | ", "| holdout | ttft_p99_s | 99", 1))
    assert write_or_check(doc, lambda: tables, []) == 1
    assert "stale generated blocks: latency-medians" in capsys.readouterr().out
    assert write_or_check(doc, lambda: tables, ["--write"]) == 0 and doc.read_text() == text
