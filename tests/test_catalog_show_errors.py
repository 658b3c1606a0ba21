"""``catalog show`` refusals: a name in several kinds lists each kind's candidates once and says how
to narrow; a name missing from the kind asked for says which kind was searched."""

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
