"""A word in a number field is refused as not a number, a quoted number as quoted, each saying what
the field takes; a catalogue entry asked for by kind and a name it lacks lists the closest ids."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from inferplan.shells.api import create_app

CLIENT = TestClient(create_app())
BASE = {"model": "llama-3.3-70b", "accelerator": "h100-sxm"}


@pytest.mark.parametrize(("value", "kind", "said"), [("two", "not_a_number", "'two' is not a number"),
                                                     ("2", "quoted_number", "'2' is text")])
def test_text_in_a_whole_number_field_says_what_the_field_takes(value, kind, said):
    r = CLIENT.post("/api/fit", json={**BASE, "tensor_parallel_size": value})
    assert r.status_code == 422
    error = r.json()["error"]
    assert error["field"] == "tensor_parallel_size" and error["message"].startswith(said)
    assert error["allowed"] == "a whole number at least 1 and at most 1,024"
    assert r.json()["detail"][0]["type"] == kind


def test_a_fraction_field_says_its_bounds():
    r = CLIENT.post("/api/fit", json={**BASE, "gpu_memory_utilization": "high"})
    assert r.json()["error"]["allowed"] == "a number more than 0 and at most 1"


def test_an_unknown_catalogue_name_lists_the_closest_ids():
    r = CLIENT.get("/api/catalog/models/glm-4.5-airx")
    assert r.status_code == 404
    assert r.json()["error"]["field"] == "name" and r.json()["error"]["allowed"].startswith("glm-4.5-air")


@pytest.mark.parametrize(("value", "said"), [(2.5, "2.5 is not a whole number"), (True, "true is a yes/no value")])
def test_a_fraction_or_a_yes_in_a_whole_number_field_says_what_it_takes(value, said):
    r = CLIENT.post("/api/fit", json={**BASE, "gpus": value})
    assert r.status_code == 422 and r.json()["error"]["message"].startswith(said)
    assert r.json()["error"]["allowed"] == "a whole number at least 1 and at most 100,000"


def test_the_closest_ids_are_found_by_alias_and_a_repo_id_reaches_its_entry():
    r = CLIENT.get("/api/catalog/accelerators/h10")
    assert r.json()["error"]["allowed"].startswith("h100-sxm")  # its alias is "H100"
    r = CLIENT.get("/api/catalog/models/Qwen/Qwen3-8B")
    assert r.status_code == 200 and r.json()["id"] == "qwen3-8b"
