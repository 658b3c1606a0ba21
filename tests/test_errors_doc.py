"""docs/errors.md and docs/api.md tell the truth: each error shape the contract table shows is the
shape the CLI and the HTTP API answer with (same keys, nested the same way), and the route table
names every route the API serves."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from inferplan.shells.api import create_app
from inferplan.shells.cli import app

DOC = Path(__file__).resolve().parents[1] / "docs" / "errors.md"
SCENARIO = {"name": "errors doc", "model": "llama-3.1-8b", "platform": {"system": "hgx-h100"},
            "workload": {"preset": "coding-developer-median"}, "target_users": 200}


def documented(row_start: str) -> list:
    """The JSON examples in the contract row that starts with ``row_start``."""
    rows = [line for line in DOC.read_text().splitlines() if line.startswith(f"| {row_start}")]
    assert len(rows) == 1, f"docs/errors.md has no single row starting {row_start!r}"
    return [json.loads(span) for span in re.findall(r"`(\{.*?\})`", rows[0])]


def shape(value):
    """Keys and nesting, not values: a dict's keys with their shapes, a list's first item's shape."""
    if isinstance(value, dict):
        return {k: shape(v) for k, v in value.items()}
    if isinstance(value, list):
        return [shape(value[0])] if value and isinstance(value[0], (dict, list)) else "list"
    return "text" if isinstance(value, str) else "value"


@pytest.fixture()
def client(tmp_path):
    return TestClient(create_app(tmp_path / "errors.db"))


def test_the_cli_error_line_and_json_shape():
    r = CliRunner().invoke(app, ["fit", "--model", "llama-3.1-8b", "--gpu", "H100", "-tp", "3", "--json"])
    assert r.exit_code == 2
    [example] = documented("CLI with `--json`")
    answer = json.loads(r.stdout.strip().splitlines()[-1])
    assert answer["error"]["field"] == example["error"]["field"] == "--tensor-parallel-size"
    assert shape(answer) == {"error": {"field": "text", "message": "text", "allowed": "text"}} == shape(example)


@pytest.mark.parametrize("row, request_", [
    ("HTTP 422, a library refusal",
     ("post", "/api/perf", {"deployment": {"model": "llama-3.1-8b", "gpu": "H100", "quantization": "nosuch"}})),
    ("HTTP 422, a request that does not validate",
     ("post", "/api/fit", {"model": "llama-3.1-8b", "gpu": "H100", "gpu_memory_utilization": 2})),
    ("HTTP 404, an unknown", ("get", "/api/scenarios/5", None)),
])
def test_each_http_error_has_the_documented_shape(client, row, request_):
    method, path, body = request_
    r = getattr(client, method)(path, **({"json": body} if body is not None else {}))
    assert r.status_code == int(row.split()[1].rstrip(","))
    [example] = documented(row)
    assert shape(r.json()) == shape(example)
    assert r.json()["detail"][0]["loc"][0] == example["detail"][0]["loc"][0]


def test_unrouted_paths_and_methods_answer_as_documented(client):
    assert [client.get("/api/nothing").json(), client.put("/api/fit", json={}).json()] == documented("HTTP 404, a path")


def test_a_taken_name_answers_as_documented(client):
    assert client.post("/api/scenarios", json={"name": "coding", "scenario": SCENARIO}).status_code == 201
    r = client.post("/api/scenarios", json={"name": "coding", "scenario": SCENARIO})
    assert r.status_code == 409
    [example] = documented("HTTP 409")
    assert r.json() == example


def test_every_api_route_is_in_docs_api_md(tmp_path):
    """A new route fails here until docs/api.md's route table names it."""
    def placeholders(text: str) -> str:
        return re.sub(r"\{[^}]*\}", "{}", text)

    table = placeholders((DOC.parent / "api.md").read_text())
    paths = set(create_app(tmp_path / "routes.db").openapi()["paths"])  # included routers' routes too
    assert paths
    missing = [p for p in sorted(paths) if not re.search(re.escape(placeholders(p)) + r"[`?]", table)]
    assert not missing, f"docs/api.md does not name {missing}"
