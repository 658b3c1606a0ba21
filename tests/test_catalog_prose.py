"""Catalogue prose reads as sentences: a note joined to another note without its full stop
("... more than two GPUs An install whose ...") is caught."""

import re
from pathlib import Path

import yaml

DATA = Path(__file__).parents[1] / "src" / "inferplan" / "catalog" / "data"
LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml, as the catalogue loader reads the files
RUN_ON = re.compile(r"[a-z0-9)\]] (An|The|It|This|From|Each|Its|Both) [a-z]")  # a sentence starting mid-sentence


def _texts(node, path=()):
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _texts(value, (*path, str(key)))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _texts(value, (*path, str(i)))
    elif isinstance(node, str) and path and path[-1] in ("note", "method", "error"):
        yield ".".join(path), node


def test_no_catalogue_note_runs_two_sentences_together():
    run_on = [f"{f.name}:{where}: ...{text[max(0, m.start() - 40):m.end() + 20]}..."
              for f in sorted(DATA.rglob("*.yaml"))
              for where, text in _texts(yaml.load(f.read_text(), Loader=LOADER))
              for m in RUN_ON.finditer(text)]
    assert not run_on, "\n".join(run_on)
