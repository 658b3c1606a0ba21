"""What bounds a search's work: each named id searched once and each list bounded (search/names.py,
request.MAX_FILTER_ITEMS), at most MAX_INSTANCES in a pool (search/instance_limit.py), a deadline and
a stop when the HTTP client goes (search/budget.py, shells/api_work.py)."""

import asyncio
import time

import pytest
from fastapi.testclient import TestClient
from pydantic import ValidationError
from typer.testing import CliRunner

import inferplan.search.budget as budget_module
from inferplan.errors import OutOfTimeError
from inferplan.search.budget import Budget
from inferplan.search.instance_limit import MAX_INSTANCES
from inferplan.search.names import resolved_request
from inferplan.search.request import MAX_FILTER_ITEMS, SearchRequest
from inferplan.search.run import search
from inferplan.shells import api_work
from inferplan.shells.api import create_app
from inferplan.shells.cli import app as cli

SMALL = {"models": ["qwen3-8b"], "request_rate_per_s": 1, "input_len": 1000, "output_len": 200,
         "systems": ["hgx-h100"], "engines": ["vllm"], "disaggregated": False, "speculative": False}


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    return TestClient(create_app(tmp_path_factory.mktemp("limits") / "l.db"))


# --- names: each resolved id once, every list bounded
def test_aliases_and_repeats_of_one_id_are_searched_once(catalog):
    req = SearchRequest(**{**SMALL, "systems": ["hgx-h100", "HGX H100", "hgx-h100"], "engines": ["vllm", "VLLM"],
                           "models": ["qwen3-8b", "Qwen3-8B"], "kv_cache_dtypes": ["fp8", "FP8", "auto", "AUTO"],
                           "vendors": ["NVIDIA", "nvidia"]})
    r = resolved_request(catalog, req)
    assert (r.systems, r.engines, r.models, r.kv_cache_dtypes, r.vendors) == (
        ("hgx-h100",), ("vllm",), ("qwen3-8b",), ("fp8", "auto"), ("NVIDIA",))


def test_an_unknown_entry_is_refused_at_its_index(catalog):
    for key, names in (("systems", ["hgx-h100", "no-such"]), ("engines", ["vllm", " "]),
                       ("quantizations", ["fp8", "zz"]), ("accelerators", ["h100-sxm", "nope-gpu"])):
        req = SearchRequest(**{**SMALL, "systems": None, key: names})
        with pytest.raises(Exception) as e:
            resolved_request(catalog, req)
        assert e.value.field == f"{key}.1"
    with pytest.raises(Exception) as e:
        resolved_request(catalog, SearchRequest(**{**SMALL, "engines": [""]}))
    assert str(e.value).startswith("name an engine")


@pytest.mark.parametrize("key", ["systems", "accelerators", "engines", "quantizations", "kv_cache_dtypes", "vendors",
                                 "statuses", "form_factors"])
def test_every_filter_list_is_bounded(key):
    value = "shipping" if key == "statuses" else "node" if key == "form_factors" else "x"
    with pytest.raises(ValidationError) as e:
        SearchRequest(**{**SMALL, "systems": None, key: [value] * (MAX_FILTER_ITEMS + 1)})
    assert e.value.errors()[0]["loc"] == (key,) and e.value.errors()[0]["type"] == "too_long"
    schema = SearchRequest.model_json_schema()["properties"][key]
    assert MAX_FILTER_ITEMS in [s.get("maxItems") for s in schema.get("anyOf", [schema])]


def test_a_list_past_the_bound_is_a_422_and_a_cli_exit_2_naming_field_and_limit(client):
    r = client.post("/api/search", json={**SMALL, "systems": ["hgx-h100"] * 5000})
    assert r.status_code == 422 and r.json()["error"]["field"] == "systems"
    assert r.json()["error"]["allowed"] == f"at most {MAX_FILTER_ITEMS} items"
    out = CliRunner().invoke(cli, ["search", "--model", "qwen3-8b", "--request-rate", "1", "--input-len", "10",
                                   "--output-len", "10", "--systems", ",".join(["hgx-h100"] * (MAX_FILTER_ITEMS + 1))])
    assert out.exit_code == 2 and "--systems: The list should have at most" in out.output, out.output


# --- a load past the instances a pool may have: a reason, not a 422 about a computed key
@pytest.mark.parametrize("load,pool", [
    ({"users": 600_000_000, "workload": "chat-seat", "disaggregated": True}, "decode instances"),
    ({"request_rate_per_s": 1e6, "input_len": 1000, "output_len": 100}, "replicas"),
])
def test_a_load_needing_more_instances_than_the_limit_is_a_reason(client, load, pool):
    body = {**{k: v for k, v in SMALL.items() if k not in ("request_rate_per_s", "input_len", "output_len")}, **load}
    r = client.post("/api/search", json=body)
    assert r.status_code == 200, r.text
    assert r.json()["results"] == []
    (x,) = r.json()["infeasible"]
    assert x["reason"] == "throughput" and pool in x["message"] and f"at most {MAX_INSTANCES:,}" in x["message"]
    needed = int(x["message"].split()[1].replace(",", ""))
    assert needed > MAX_INSTANCES


# --- a deadline, and a stop when the client goes
def test_a_search_past_its_deadline_stops(catalog):
    with pytest.raises(OutOfTimeError) as e:
        search(SearchRequest(**SMALL), catalog, budget=Budget(deadline_s=0.0))
    assert "time limit of 0 s" in str(e.value) and "fewer" in e.value.allowed


def test_a_cancelled_search_stops(catalog):
    budget = Budget()
    budget.cancel()
    with pytest.raises(OutOfTimeError):
        search(SearchRequest(**SMALL), catalog, budget=budget)


def test_the_deadline_is_a_503_in_the_api_and_none_at_a_terminal(client, monkeypatch):
    monkeypatch.setattr(budget_module, "SEARCH_DEADLINE_S", 0.0)
    r = client.post("/api/search", json=SMALL)
    assert r.status_code == 503 and "time limit" in r.json()["error"]["message"], r.text
    for json_flag in ([], ["--json"]):  # a busier machine does not fail a search a quiet one answers
        out = CliRunner().invoke(cli, ["search", "--model", "qwen3-8b", "--request-rate", "1", "--input-len", "10",
                                       "--output-len", "10", "--systems", "hgx-h100", "--engines", "vllm", *json_flag])
        assert out.exit_code == 0 and "time limit" not in out.output, out.output


class _GoneClient:
    async def is_disconnected(self) -> bool:
        return True


def test_the_work_stops_when_the_client_has_gone(monkeypatch):
    monkeypatch.setattr(api_work, "DISCONNECT_POLL_S", 0.01)

    def work(budget: Budget) -> str:
        for _ in range(500):  # 5 s at most: stopped long before when the client's leaving is noticed
            budget.check()
            time.sleep(0.01)
        return "computed to the end"

    with pytest.raises(OutOfTimeError, match="gone"):
        asyncio.run(api_work.until_disconnected(_GoneClient(), work))
