"""Every source record in the catalogue data is cited: by a fact in a data file (a number's source, a rule's or
a flag's source, a point's sources, a comment beside a value) or by the code that states a fact from it; a source
record's own title or note naming another record cites nothing. A record nothing cites is
either a fact's missing citation or a stale record: cite it by the fact it backs or remove it. That every
cited source exists is checked on load (test_catalog_integrity)."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from inferplan.catalog.loader import DATA_DIR

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "inferplan"
WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]*[A-Za-z0-9]")

def _strings(value) -> list[str]:
    if isinstance(value, dict):
        return [text for key, item in value.items() for text in (*_strings(key), *_strings(item))]
    if isinstance(value, list):
        return [text for item in value for text in _strings(item)]
    return [value] if isinstance(value, str) else []


def _comments_outside_sources(text: str) -> list[str]:
    """The comments of a data file, less those inside its top-level ``sources:`` block (which ends at the next
    top-level key). A ``#`` after a space inside a quoted value is read as a comment too: that value's words
    count anyway."""
    comments, in_sources = [], False
    for line in text.splitlines():
        if line[:1].isalpha():
            in_sources = line.startswith("sources:")
        if not in_sources and (line.startswith("#") or " #" in line):
            comments.append(line[0 if line.startswith("#") else line.index(" #"):])
    return comments


def named_outside_sources(text: str) -> set[str]:
    """The words a data file names outside its source records: every string of its data (keys and values) once
    ``sources`` is left out, and its comments outside that block; a record's title or note naming another
    record cites nothing."""
    data = yaml.safe_load(text)
    rest = {k: v for k, v in data.items() if k != "sources"} if isinstance(data, dict) else data
    return {word for chunk in (*_strings(rest), *_comments_outside_sources(text)) for word in WORD.findall(chunk)}


def _defined_and_cited() -> tuple[set[str], set[str]]:
    """The source ids the data files define, and those named in the data outside the source records (a comment
    beside a value counts) or in the code."""
    defined: set[str] = set()
    named: set[str] = set()
    for path in sorted(DATA_DIR.rglob("*.yaml")):
        text = path.read_text(encoding="utf-8")
        data = yaml.safe_load(text)
        if isinstance(data, dict):
            defined.update(s["id"] for s in data.get("sources") or [])
        named |= named_outside_sources(text)
    for path in PACKAGE.rglob("*.py"):
        named.update(WORD.findall(path.read_text(encoding="utf-8")))
    return defined, named


def test_a_source_named_only_by_another_source_record_is_not_cited():
    text = """# header naming nothing
sources:
  - id: src-a
    title: a page
  - id: src-b
    title: a page
    note: "src-a says the same"  # and src-c
  # a comment about the records: src-d
rules:
  - id: rule-1
    source: src-b
    note: "as src-e states"  # src-f beside a value
"""
    named = named_outside_sources(text)
    assert {"src-b", "src-e", "src-f"} <= named and not {"src-a", "src-c", "src-d"} & named


def test_every_source_record_is_cited_by_a_fact():
    defined, cited = _defined_and_cited()
    assert not defined - cited, f"source records nothing cites: {sorted(defined - cited)}"


def test_the_catalogue_loads_every_source_record_the_files_define(catalog):
    defined, _ = _defined_and_cited()
    assert defined == set(catalog.sources)
