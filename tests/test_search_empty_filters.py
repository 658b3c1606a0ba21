"""An empty filter list is refused naming its field, never read as "no filter": in the library's
``SearchRequest`` (so the CLI and the API answer alike) and as a 422 from /api/search."""

from __future__ import annotations

import typing

import pytest
from fastapi.testclient import TestClient
from pydantic import ValidationError

from inferplan.search.request import SearchRequest
from inferplan.shells.api import create_app

LOAD = {"models": ["llama-3.3-70b"], "request_rate_per_s": 2, "input_len": 2000, "output_len": 400,
        "targets": {"ttft_p95_s": 2}, "max_gpus": 2}


def _list_fields() -> list[str]:
    """Every field of the request that takes a list (a tuple, optional or not)."""
    def is_list(annotation) -> bool:
        return typing.get_origin(annotation) is tuple or any(is_list(a) for a in typing.get_args(annotation))
    return [name for name, f in SearchRequest.model_fields.items() if is_list(f.annotation)]


def test_the_filters_checked_are_the_lists_the_request_takes():
    assert {"models", "systems", "accelerators", "engines", "quantizations", "kv_cache_dtypes", "vendors",
            "statuses", "form_factors"} <= set(_list_fields())


@pytest.mark.parametrize("field", _list_fields())
def test_an_empty_list_is_refused_by_the_library(field):
    with pytest.raises(ValidationError) as info:
        SearchRequest(**{**LOAD, field: []})
    (error,) = info.value.errors()
    assert error["loc"] == (field,) and error["type"] == "too_short"


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    return TestClient(create_app(tmp_path_factory.mktemp("filters") / "f.db"))


@pytest.mark.parametrize("field", _list_fields())
def test_an_empty_list_is_a_422_naming_the_field_and_what_it_takes(client, field):
    answer = client.post("/api/search", json={**LOAD, field: []})
    assert answer.status_code == 422, answer.text
    (problem,) = answer.json()["detail"]
    assert problem["loc"] == ["body", field] and problem["allowed"] == "at least 1 item"
