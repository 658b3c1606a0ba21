"""Every 422 says what is allowed (shells/pydantic_errors.allowed_by): a number past what pydantic
reads, NaN or infinity, a missing field, an object given as something else and a validator's own
refusal are answered from the field at the error's place — its type and bounds — never null."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from pydantic import BaseModel, Field

from inferplan.shells.api import create_app
from inferplan.shells.pydantic_errors import allowed_by, takes


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    return TestClient(create_app(tmp_path_factory.mktemp("allowed") / "a.db"))


SEARCH = '"models":["qwen3-235b-a22b"],"workload":"chat-seat"'
RATE = '"models":["llama-3.3-70b"],"input_len":10,"output_len":10'


@pytest.mark.parametrize(("route", "body", "loc", "kind", "allowed"), [
    ("/api/search", f'{{{SEARCH},"users":1e30}}', ["users"], "int_parsing_size", "a whole number at least 1 and at most 1,000,000,000"),
    ("/api/search", f'{{{RATE},"request_rate_per_s":NaN}}', ["request_rate_per_s"], "finite_number",
     "a number more than 0 and at most 1,000,000"),
    ("/api/search", f'{{{SEARCH},"users":3,"max_capex_usd":Infinity}}', ["max_capex_usd"], "finite_number",
     "a number more than 0 and at most 1,000,000,000,000"),
    ("/api/simulate", '{"deployment":{"model":"qwen3-8b","gpu":"h100"},"request_rate_per_s":1,'
     '"workload":{"input_len":100000000,"output_len":10}}', ["workload", "output_len"], "value_error",
     "a whole number at least 1 and at most 100,000,000"),
    ("/api/deploy", "{}", ["deployment"], "missing", "required: an object with the key model and up to 49 optional ones"),
    ("/api/deploy", '{"deployment":{"model":"qwen3-8b","gpu":"h100"},"speculative":"yes"}', ["speculative"],
     "model_attributes_type", "an object with the keys draft_model, method, tokens (tokens required)"),
])
def test_the_reported_refusals_say_what_is_allowed(client, route, body, loc, kind, allowed):
    answer = client.post(route, content=body, headers={"content-type": "application/json"})
    assert answer.status_code == 422, answer.text
    problem = answer.json()["detail"][0]
    assert (problem["loc"], problem["type"], problem["allowed"]) == (["body", *loc], kind, allowed)


def test_a_missing_key_of_a_nested_object_names_its_type(client):
    answer = client.post("/api/deploy", json={"deployment": {"gpu": "h100"}})
    problem = answer.json()["detail"][0]
    assert problem["loc"] == ["body", "deployment", "model"] and problem["allowed"] == "required: a text"


class _Shape(BaseModel):
    count: int = Field(ge=2)
    share: float | None = Field(None, gt=0, le=1)
    names: tuple[str, ...] = ()
    inner: dict[str, float] = {}


@pytest.mark.parametrize(("error", "loc", "allowed"), [
    ({"type": "int_parsing_size"}, ("count",), "a whole number at least 2"),
    ({"type": "finite_number"}, ("share",), "a number more than 0 and at most 1"),
    ({"type": "missing"}, ("count",), "required: a whole number at least 2"),
    ({"type": "dict_type"}, ("inner",), "an object"),
    ({"type": "value_error"}, ("names",), "a list"),
    ({"type": "missing"}, (), "required: an object with the keys count, inner, names, share (count required)"),
])
def test_the_field_at_the_place_says_it(error, loc, allowed):
    assert allowed_by({**error, "loc": loc}, _Shape) == allowed


@pytest.mark.parametrize(("kind", "allowed"), [("finite_number", "a finite number"), ("int_parsing_size", "a whole number"),
                                               ("model_attributes_type", "an object"), ("missing", "required")])
def test_without_the_model_the_error_type_says_it(kind, allowed):
    assert allowed_by({"type": kind, "loc": ("x",)}) == allowed


def test_an_unknown_place_says_only_what_the_type_of_error_does():
    assert allowed_by({"type": "finite_number", "loc": ("nowhere",)}, _Shape) == "a finite number"
    assert takes(object) is None


@pytest.mark.parametrize(("method", "url", "loc", "allowed"), [
    ("get", "/api/catalog/stale?days=NaN", ["query", "days"], "a whole number at least 0 and at most 100,000"),
    ("get", "/api/views/models?include_reference=maybe", ["query", "include_reference"], "true or false"),
    ("get", "/api/scenarios/compare?a=1&b=1&draws=1.5", ["query", "draws"], "a whole number at least 0 and at most 100,000"),
    ("post", "/api/fit?speculative_tokens=x", ["query", "speculative_tokens"], "a whole number at least 0 and at most 32"),
    ("get", "/api/scenarios/abc", ["path", "scenario_id"], "a whole number at least 1 and at most 4,611,686,018,427,387,904"),
])
def test_a_query_or_path_parameter_that_does_not_read_says_what_it_takes(client, method, url, loc, allowed):
    r = client.request(method, url, json={"model": "qwen3-8b", "gpu": "h100"} if method == "post" else None)
    assert r.status_code == 422, r.text
    assert r.json()["detail"][0]["loc"] == loc and r.json()["error"]["allowed"] == allowed, r.text


def test_one_refusal_writes_its_numbers_one_way(client):
    """The bound in the message and in what is allowed is written as every other number is: 100,000,000,
    neither 1e+08 nor 100000000."""
    for workload in ('{"input_len":100000000,"output_len":10}', '{"input_len":1e9,"output_len":10}'):
        answer = client.post("/api/perf", content='{"deployment":{"model":"qwen3-8b","gpu":"h100"},"workload":'
                             + workload + "}", headers={"content-type": "application/json"})
        error = answer.json()["error"]
        assert answer.status_code == 422 and "100,000,000" in error["message"] and "100,000,000" in error["allowed"]
        assert not any(s in error["message"] + error["allowed"] for s in ("e+", "100000000"))


def test_a_date_bound_is_written_as_the_date(client):
    """A bound that is not a number (a quote's earliest date) is said as pydantic gives it, not read as one."""
    r = client.post("/api/quotes", json={"system": "hgx-h100", "vendor": "v", "price_usd": 250000, "quoted_on": 0})
    assert r.status_code == 422, r.text
    assert [d["allowed"] for d in r.json()["detail"] if d["loc"][-1] == "quoted_on"] == ["at least 2000-01-01"]


@pytest.mark.parametrize("measured_on", ["2026-13-01", "yesterday", 3.5])
def test_a_date_that_does_not_read_says_how_to_write_one(client, measured_on):
    r = client.post("/api/measurements", json={"files": [{"name": "r.csv", "content": "concurrency,input_tokens,output_tokens,"
                                                          "ttft_ms\n1,10,10,5\n"}],
                                               "provenance": {"model": "llama-3.1-8b", "gpu": "h100", "measured_on": measured_on}})
    assert r.status_code == 422, r.text
    assert r.json()["detail"][0]["loc"] == ["body", "provenance", "measured_on"]
    assert r.json()["error"]["allowed"] == "a date, YYYY-MM-DD"
    assert allowed_by({"type": "date_from_datetime_parsing", "loc": ("x",)}) == "a date, YYYY-MM-DD"


@pytest.mark.parametrize("price", ["abc", 0, 0.5, True])
def test_a_quote_price_that_is_text_or_under_a_dollar_says_a_number_at_least_1(client, price):
    """A vendor quote's price takes a number of at least $1 (its stored-rows bound of more than 0 is never said
    to a new quote), whether the price is text, a yes/no or too small."""
    r = client.post("/api/quotes", json={"system": "hgx-h100", "vendor": "v", "price_usd": price,
                                         "quoted_on": "2026-12-01"})
    assert r.status_code == 422, r.text
    said = [d for d in r.json()["detail"] if d["loc"][-1] == "price_usd"]
    assert [d["allowed"] for d in said] == ["a number at least 1 and at most 10,000,000,000"], said
    assert "more than 0" not in r.text and "greater than 0" not in r.text
