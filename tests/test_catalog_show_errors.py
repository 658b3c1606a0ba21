"""``catalog show`` refusals: a name in several kinds lists each kind's candidates once and says how
to narrow; a name missing from the kind asked for says which kind was searched."""

import json
import re

import pytest

from inferplan.catalog.query import show_entry
from inferplan.errors import AmbiguousNameError, CatalogError


def test_a_name_in_several_kinds_lists_the_candidates_once_and_allows_a_kind():
    with pytest.raises(AmbiguousNameError) as refused:
        show_entry("llama")
    assert refused.value.allowed.startswith("an exact id, or one kind: models")
    assert "llama-3.1-8b" not in refused.value.allowed  # the ids are in the message, not said twice
    assert "llama-3.1-8b" in str(refused.value)


def test_a_name_missing_from_the_kind_asked_for_names_that_kind():
    with pytest.raises(CatalogError) as refused:
        show_entry("llama-3.1-8b", "accelerators")
    assert "among accelerators" in str(refused.value) and refused.value.field == "name"
    assert show_entry("llama-3.1-8b")[0] == "models"


def test_a_name_in_several_kinds_lists_the_models_and_counts_the_other_kinds():
    with pytest.raises(AmbiguousNameError) as refused:
        show_entry("qwen3")
    message = str(refused.value)
    assert message.startswith("'qwen3' matches several models: qwen3-0.6b")
    assert re.search(r"also matches \d+ memory-points, \d+ speed-points", message)
    assert "a06-qwen3-0.6b-h100" not in message  # a memory point's id: counted, not listed
    assert len(message) < 600 and refused.value.names == ("kind",)


def test_the_cli_says_how_to_list_another_kinds_matches():
    from typer.testing import CliRunner

    from inferplan.shells.cli import app

    r = CliRunner().invoke(app, ["catalog", "show", "qwen3", "--json"])
    error = json.loads(r.stdout)["error"]
    assert r.exit_code == 2 and "--kind memory-points (or another of them) lists those" in error["message"]
    assert error["allowed"].startswith("an exact id, or one --kind: models, memory-points")
