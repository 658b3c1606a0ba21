"""The YAML records docs/catalog-format.md shows are records the catalogue would take, and every source
they cite is one of the catalogue's, so a reader who looks a cited id up finds it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from inferplan.catalog.accelerator_schema import Accelerator
from inferplan.catalog.loader import load_catalog
from inferplan.catalog.quantization_schema import Quantization
from inferplan.catalog.schema import ModelCard, System

DOC = Path(__file__).resolve().parents[1] / "docs" / "catalog-format.md"
SCHEMAS = {"accelerators": Accelerator, "systems": System, "models": ModelCard, "quantizations": Quantization}


def yaml_blocks(text: str) -> list[str]:
    return re.findall(r"```yaml\n(.*?)```", text, flags=re.S)


def cited_sources(block: str) -> set[str]:
    """The source ids a block cites or lists, an elided one (``source: ...``) left out."""
    return set(re.findall(r"\b(?:source|config_source): ([a-z0-9][a-z0-9._-]*)", block)) | \
        set(re.findall(r"^ *- id: ([a-z0-9][a-z0-9._-]*)\n *title:", block, flags=re.M))


def records() -> list[tuple[str, dict]]:
    out = []
    for block in yaml_blocks(DOC.read_text()):
        data = yaml.safe_load(block.replace("source: ...", "source: elided"))
        if isinstance(data, dict):
            out += [(kind, rec) for kind, recs in data.items() if kind in SCHEMAS for rec in recs]
    return out


@pytest.mark.parametrize("kind, record", records(), ids=lambda x: x if isinstance(x, str) else x["id"])
def test_each_record_the_doc_shows_validates(kind, record):
    SCHEMAS[kind].model_validate(record)


def test_the_doc_shows_a_record_of_each_kind():
    assert {kind for kind, _ in records()} == set(SCHEMAS)


def test_every_source_the_doc_cites_is_the_catalogues():
    sources = load_catalog().sources
    cited = set().union(*map(cited_sources, yaml_blocks(DOC.read_text())))
    assert cited and sorted(cited - sources.keys()) == []


def test_the_citation_check_sees_an_unknown_id():
    assert cited_sources("x: {value: 1, source: nowhere-1}\n  - id: made-up\n    title: t\n") == {"nowhere-1", "made-up"}
