"""Every source record in the catalogue data is cited: by a fact in a data file (a number's source, a rule's or
a flag's source, a point's sources, a comment beside a value) or by the code that states a fact from it. A record nothing cites is
either a fact's missing citation or a stale record; the sources below are not cited yet, each to be cited by
the fact it backs or removed, and the list only shrinks. That every cited source exists is checked on load
(test_catalog_integrity)."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import yaml

from inferplan.catalog.loader import DATA_DIR

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "inferplan"
WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]*[A-Za-z0-9]")

NOT_CITED_YET = frozenset({
    "eng-mlx-wired-limit", "gguf-llamacpp-pr15091-gpt-oss", "seedlines-nemo-kimi-k2",
})


def _defined_and_cited() -> tuple[set[str], set[str]]:
    """The source ids the data files define, and those named anywhere else in the data (a comment beside a
    value counts) or in the code."""
    defined: Counter[str] = Counter()  # a record the same in two files is defined twice
    named: Counter[str] = Counter()
    for path in sorted(DATA_DIR.rglob("*.yaml")):
        text = path.read_text(encoding="utf-8")
        data = yaml.safe_load(text)
        if isinstance(data, dict):
            defined.update(s["id"] for s in data.get("sources") or [])
        named.update(WORD.findall(text))
    for path in PACKAGE.rglob("*.py"):
        named.update(WORD.findall(path.read_text(encoding="utf-8")))
    return set(defined), {word for word, count in named.items() if count > defined[word]}


def test_every_source_record_is_cited_by_a_fact():
    defined, cited = _defined_and_cited()
    uncited = defined - cited
    assert not uncited - NOT_CITED_YET, f"source records nothing cites: {sorted(uncited - NOT_CITED_YET)}"
    assert not NOT_CITED_YET - uncited, f"cited or gone now, take off NOT_CITED_YET: {sorted(NOT_CITED_YET - uncited)}"


def test_the_catalogue_loads_every_source_record_the_files_define(catalog):
    defined, _ = _defined_and_cited()
    assert defined == set(catalog.sources)
