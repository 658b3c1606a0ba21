"""The reference docs stay readable: docs/speed.md within its line budget (the offload pricing is
docs/offload.md; why a calibration family stands apart is engines.yaml data), the two halves of
offloading point at each other, and a link to a heading of another doc names a heading it has."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
LINE_BUDGETS = {"speed.md": 400}


def over_budget(docs: Path, budgets: dict[str, int]) -> list[str]:
    """``name: lines > budget`` for every doc longer than its budget."""
    found = []
    for name, budget in budgets.items():
        lines = len((docs / name).read_text(encoding="utf-8").splitlines())
        if lines > budget:
            found.append(f"{name}: {lines} lines > {budget}")
    return found


def heading_anchor(heading: str) -> str:
    """The anchor GitHub gives a Markdown heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(text: str) -> set[str]:
    return {heading_anchor(m) for m in re.findall(r"^#+ (.+)$", text, flags=re.M)}


def broken_anchors(doc: Path) -> list[str]:
    """``file#anchor`` links of ``doc`` into another doc whose anchor names none of its headings."""
    found = []
    for target, anchor in re.findall(r"\]\(([\w./-]+\.md)#([^)\s]+)\)", doc.read_text(encoding="utf-8")):
        path = doc.parent / target
        if path.exists() and anchor not in anchors(path.read_text(encoding="utf-8")):
            found.append(f"{target}#{anchor}")
    return found


def test_the_speed_doc_fits_in_its_line_budget():
    assert not over_budget(DOCS, LINE_BUDGETS), over_budget(DOCS, LINE_BUDGETS)


def test_the_budget_check_sees_a_long_doc(tmp_path):
    (tmp_path / "speed.md").write_text("line\n" * 401)
    assert over_budget(tmp_path, LINE_BUDGETS) == ["speed.md: 401 lines > 400"]
    (tmp_path / "speed.md").write_text("line\n" * 400)
    assert over_budget(tmp_path, LINE_BUDGETS) == []


def test_the_speed_and_memory_sides_of_offloading_point_at_each_other():
    offload = (DOCS / "offload.md").read_text(encoding="utf-8")
    assert "](memory.md#7-weights-in-host-ram-memoryoffloadpy)" in offload
    assert "](speed.md)" in offload
    for name in ("speed.md", "memory.md"):
        assert "](offload.md)" in (DOCS / name).read_text(encoding="utf-8"), f"docs/{name} does not link offload.md"


@pytest.mark.parametrize("doc", [ROOT / "README.md", *sorted(DOCS.glob("*.md"))], ids=lambda p: p.name)
def test_every_link_to_a_heading_of_another_doc_finds_it(doc):
    assert not broken_anchors(doc), f"{doc.name} links to headings that do not exist: {broken_anchors(doc)}"


def test_a_heading_anchor_is_the_one_github_renders(tmp_path):
    assert heading_anchor("7. Weights in host RAM (`memory/offload.py`)") == "7-weights-in-host-ram-memoryoffloadpy"
    (tmp_path / "a.md").write_text("## Validation\n")
    (tmp_path / "b.md").write_text("[x](a.md#validation) [y](a.md#nowhere)\n")
    assert broken_anchors(tmp_path / "b.md") == ["a.md#nowhere"]
