"""docs/speed.md's and docs/offload.md's generated tables equal a fresh render from the shipped data
(``python -m inferplan.validation.docs_tables --write`` rewrites them)."""

import pytest

from inferplan.validation.docs_tables import BLOCKS_BY_DOC, DOC, OFFLOAD_DOC, blocks, fill, render_tables


@pytest.fixture(scope="module")
def tables():
    return render_tables()


def test_every_rendered_block_lives_in_exactly_one_document(tables):
    placed = [name for names in BLOCKS_BY_DOC.values() for name in names]
    assert sorted(placed) == sorted(tables)


@pytest.mark.parametrize("doc", list(BLOCKS_BY_DOC), ids=lambda p: p.name)
def test_every_generated_block_of_a_doc_is_a_fresh_render(tables, doc):
    present = blocks(doc.read_text())
    assert set(present) == set(BLOCKS_BY_DOC[doc]), f"docs/{doc.name} must hold its generated blocks, and only those"
    stale = [name for name in present if present[name] != tables[name]]
    assert not stale, (f"docs/{doc.name}: generated blocks {stale} differ from the data; run "
                       "`python -m inferplan.validation.docs_tables --write`")


def test_a_stale_offload_block_is_caught(tables):
    text = fill(OFFLOAD_DOC.read_text(), tables)
    edited = text.replace("| decode, weights in host RAM (not in all kinds) | ",
                          "| decode, weights in host RAM (not in all kinds) | 1", 1)
    assert edited != text
    assert blocks(edited)["offload"] != tables["offload"]
    assert fill(edited, tables) == text


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
