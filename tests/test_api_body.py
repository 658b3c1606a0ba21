"""A request body that is not plainly JSON (shells/api_body.py, inputs.text_problem): a body nested
deeper than input files may be, a body sent as another type, a key given twice, a body that is not
UTF-8, a number written with more digits than Python reads."""

import json

import pytest
from fastapi.testclient import TestClient

from inferplan.input_files import MAX_NESTING_DEPTH
from inferplan.inputs import MAX_INPUT_DEPTH, text_problem
from inferplan.shells.api import create_app

JSON = {"content-type": "application/json"}
SEARCH = '"request_rate_per_s":1,"input_len":10,"output_len":10'


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    return TestClient(create_app(tmp_path_factory.mktemp("body") / "b.db"), raise_server_exceptions=False)


def _nested(depth: int) -> str:
    return "[" * depth + "]" * depth


@pytest.mark.parametrize("depth", [33, 700, 990])
@pytest.mark.parametrize("route,body", [
    ("/api/search", '{"models":%s,' + SEARCH + '}'),
    ("/api/search", '{"models":["qwen3-8b"],"systems":%s,' + SEARCH + '}'),
    ("/api/fits", '{"models":%s,"gpus":["h100-sxm"]}'),
    ("/api/simulate", '{"deployment":{"model":"qwen3-8b","gpu":"h100-sxm"},"requests":10,"trace":%s}'),
])
def test_a_deeply_nested_list_is_refused_naming_the_limit_not_a_500(client, route, body, depth):
    r = client.post(route, content=body % _nested(depth), headers=JSON)
    assert r.status_code == 400, r.text[:300]
    error = r.json()["error"]
    assert str(MAX_NESTING_DEPTH) in error["message"] and str(MAX_NESTING_DEPTH) in error["allowed"]


def test_the_text_check_walks_a_deep_list_without_recursing():
    deep: list = []
    for _ in range(5000):  # far past Python's recursion limit
        deep = [deep]
    problem = text_problem(deep)
    assert problem is not None and str(MAX_INPUT_DEPTH) in problem
    assert text_problem([["a", ["b"]], {"k": "v"}]) is None
    assert "U+0000" in text_problem([[["fine", "bad\x00"]]])


@pytest.mark.parametrize("content_type", ["text/plain", "multipart/form-data; boundary=x", None])
def test_a_json_body_sent_as_another_type_is_a_415_naming_application_json(client, content_type):
    headers = {"content-type": content_type} if content_type else {}
    body = json.dumps({"model": "qwen3-8b", "gpu": "h100-sxm"}).encode()
    r = client.post("/api/fit", content=body, headers=headers)
    assert r.status_code == 415, r.text
    assert r.json()["error"]["allowed"] == "application/json"
    assert client.post("/api/fit", content=body, headers={"content-type": "application/json; charset=utf-8"}).status_code == 200


def test_a_key_given_twice_is_refused_naming_it_and_where_it_sits(client):
    r = client.post("/api/fit", content='{"model":"qwen3-8b","model":"deepseek-v3","gpu":"h100-sxm"}', headers=JSON)
    assert r.status_code == 422, r.text
    assert r.json()["error"]["field"] == "model" and "more than once" in r.json()["error"]["message"]
    r = client.post("/api/deploy", content='{"deployment":{"model":"qwen3-8b","gpu":"h100-sxm","gpu":"b200"}}',
                    headers=JSON)
    assert r.status_code == 422 and r.json()["detail"][0]["loc"] == ["body", "deployment", "gpu"], r.text
    r = client.post("/api/search", content='{"models":["qwen3-8b"],"trace":[{"arrival_s":0,"input_tokens":1,'
                    '"input_tokens":2,"output_tokens":1}]}', headers=JSON)
    assert r.status_code == 422 and r.json()["error"]["field"] == "trace.0.input_tokens", r.text


def test_a_body_that_is_not_json_is_still_a_400_saying_where(client):
    r = client.post("/api/fit", content='{"model": "qwen3-8b",', headers=JSON)
    assert r.status_code == 400 and "not JSON" in r.json()["error"]["message"]


def test_a_body_that_is_not_utf8_is_a_400_naming_the_byte(client):
    r = client.post("/api/fit", content=b'{"model":"\xff\xfe","gpu":"h100-sxm"}', headers=JSON)
    assert r.status_code == 400, r.text
    assert r.json()["error"] == {"field": None, "message": "the body is not UTF-8 (byte 0xff at position 10)",
                                 "allowed": "JSON in UTF-8"}


@pytest.mark.parametrize("route, body, field", [
    ("/api/fit", '{"model":"qwen3-8b","gpu":"h100-sxm","gpus":%s}', "gpus"),
    ("/api/fits", '{"models":["qwen3-8b",-%s]}', "models.1"),
])
def test_a_number_of_more_digits_than_python_reads_is_a_422_at_its_place(client, route, body, field):
    r = client.post(route, content=body % ("9" * 5000), headers=JSON)
    assert r.status_code == 422, r.text
    assert r.json()["error"] == {"field": field, "message": "a number written with 5,000 digits",
                                 "allowed": "a number of at most 4,300 digits"}
