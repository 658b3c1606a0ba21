"""docs/speed.md's generated tables equal a fresh render from the shipped data
(``python -m inferplan.validation.docs_tables --write`` rewrites them)."""

import pytest

from inferplan.validation.docs_tables import DOC, blocks, fill, render_tables


@pytest.fixture(scope="module")
def tables():
    return render_tables()


def test_every_generated_block_of_the_speed_doc_is_a_fresh_render(tables):
    text = DOC.read_text()
    present = blocks(text)
    assert set(present) == set(tables), "docs/speed.md must hold every generated block, and only those"
    stale = [name for name in tables if present[name] != tables[name]]
    assert not stale, (f"docs/speed.md: generated blocks {stale} differ from the data; run "
                       "`python -m inferplan.validation.docs_tables --write`")


def test_a_hand_edited_figure_in_a_block_is_caught(tables):
    text = fill(DOC.read_text(), tables)
    edited = text.replace("| single-stream decode (concurrency 1) | ", "| single-stream decode (concurrency 1) | 1", 1)
    assert edited != text
    assert blocks(edited)["validation"] != tables["validation"]
    assert fill(edited, tables) == text  # the render puts it back


def test_an_unknown_block_name_is_refused(tables):
    with pytest.raises(KeyError, match="no renderer"):
        fill("<!-- generated: nonsense -->\nx\n<!-- end generated -->\n", tables)


def test_the_validation_block_counts_every_check(tables):
    from inferplan.validation.speed import validate_speed

    v = validate_speed()
    assert f"{len(v.checks)} checks:" in tables["validation"]
    assert f"{v.medians['decode/holdout']:.2%}".replace("%", " %") in tables["validation"]
