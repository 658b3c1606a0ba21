"""The load inputs of ``simulate`` and ``search`` are refused naming the field as each shell takes it
(a CLI flag, a JSON key of the body) and what is allowed, bounds included."""

import json
import re

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from inferplan.search.simulation import SimulationQuery
from inferplan.shells.api import create_app
from inferplan.shells.cli import app
from inferplan.shells.pydantic_errors import allowed_by

SIM = ["simulate", "--model", "llama-3.1-8b", "--gpu", "H100"]
SEARCH = ["search", "--model", "qwen3-32b", "--users", "10"]


def _cli_error(args):
    done = CliRunner().invoke(app, [*args, "--json"], prog_name="inferplan")
    assert done.exit_code == 2, done.output
    return json.loads(done.stdout)["error"], done.stderr


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    return TestClient(create_app(tmp_path_factory.mktemp("load") / "load.db"))


def test_an_unknown_preset_for_simulated_users_names_the_workload_flag():
    error, line = _cli_error([*SIM, "--users", "5", "--workload", "bogus"])
    assert error["field"] == "--workload" and "chat-seat" in error["allowed"]
    assert line.startswith("error: --workload: no workload preset named 'bogus'")


def test_an_unknown_preset_for_simulated_users_names_the_body_key(client):
    reply = client.post("/api/simulate", json={"deployment": {"model": "llama-3.1-8b", "gpu": "H100"},
                                                "users": 5, "workload_preset": "bogus"})
    assert reply.status_code == 422
    assert reply.json()["error"]["field"] == "workload_preset"


def test_a_flag_inside_an_allowed_text_is_named_once():
    error, line = _cli_error([*SIM, "--clients", "5", "--arrival", "bursty"])
    assert error["field"] == "--arrival" and "with --clients" in error["allowed"]
    assert "---" not in line


@pytest.mark.parametrize(("args", "flag", "allowed"), [
    (["--ttft-p95", "-1"], "--ttft-p95", "more than 0"),
    (["--e2e-p95", "0"], "--e2e-p95", "more than 0"),
    (["--top", "0"], "--top", "at least 1"),
])
def test_a_search_target_out_of_range_names_its_flag_and_bound(args, flag, allowed):
    error, line = _cli_error([*SEARCH, *args])
    assert (error["field"], error["allowed"]) == (flag, allowed)
    assert line.startswith(f"error: {flag}: ")


def test_two_speed_targets_at_once_name_both_flags():
    error, _ = _cli_error([*SEARCH, "--tpot-p95", "0.1", "--min-tokens-per-s-per-user", "5"])
    assert error["field"] == "--tpot-p95/--min-tokens-per-s-per-user"


@pytest.mark.parametrize(("error", "allowed"), [
    ({"type": "greater_than_equal", "ctx": {"ge": 1}}, "at least 1"),
    ({"type": "less_than_equal", "ctx": {"le": 1e6}}, "at most 1,000,000"),
    ({"type": "greater_than", "ctx": {"gt": 0}}, "more than 0"),
    ({"type": "less_than", "ctx": {"lt": 0.5}}, "less than 0.5"),
])
def test_a_bound_error_says_the_bound(error, allowed):
    assert allowed_by(error) == allowed


def test_a_deployment_bound_names_it_on_both_shells(client):
    error, line = _cli_error(["fit", "--model", "llama-3.1-8b", "--gpu", "H100", "--max-model-len", "0"])
    assert (error["field"], error["allowed"]) == ("--max-model-len", "at least 1")
    assert line.rstrip().endswith("(allowed: at least 1)")
    reply = client.post("/api/fit", json={"model": "llama-3.1-8b", "gpu": "H100", "max_model_len": 0})
    assert reply.status_code == 422
    assert (reply.json()["error"]["field"], reply.json()["error"]["allowed"]) == ("max_model_len", "at least 1")
    reply = client.post("/api/simulate", json={"deployment": {"model": "llama-3.1-8b", "gpu": "H100"},
                                                "request_rate_per_s": -1})
    assert (reply.json()["error"]["field"], reply.json()["error"]["allowed"]) == ("request_rate_per_s", "more than 0")


def test_the_presets_the_simulate_help_names_exist(catalog):
    described = SimulationQuery.model_fields["workload_preset"].description
    named = re.search(r"\(([^)]*)\)", described).group(1).replace("...", "").split(",")
    ids = {p.id for p in catalog.workload_presets}
    assert named and all(n.strip() in ids for n in named if n.strip())


@pytest.mark.parametrize(("args", "flag", "said"), [
    (["--request-rate", "1"], "--input-len", "--request-rate needs --input-len and --output-len"),
    (["--users", "5", "--request-rate", "1"], "--request-rate", "state the load one way: --users"),
    (["--request-rate", "1", "--input-len", "5", "--output-len", "5", "--workload", "chat-seat"], "--workload",
     "a --workload preset goes with --users"),
    (["--users", "5", "--systems", "hgx-b200", "--accelerators", "h100"], "--accelerators",
     "name --systems or --accelerators, not both"),
])
def test_a_search_load_stated_wrongly_names_the_flag_at_fault(args, flag, said):
    error, line = _cli_error(["search", "--model", "qwen3-32b", *args])
    assert error["field"] == flag and error["allowed"]
    assert line.startswith(f"error: {flag}: {said}"), line


@pytest.mark.parametrize(("body", "field"), [
    ({"models": ["qwen3-32b"]}, "users"),
    ({"models": ["qwen3-32b"], "users": 10, "request_rate_per_s": 1}, "request_rate_per_s"),
    ({"models": ["qwen3-32b"], "request_rate_per_s": 1, "input_len": 5}, "output_len"),
    ({"models": ["qwen3-32b"], "users": 5, "systems": ["hgx-b200"], "accelerators": ["h100"]}, "accelerators"),
])
def test_a_search_body_stated_wrongly_names_its_key(client, body, field):
    reply = client.post("/api/search", json=body)
    assert reply.status_code == 422
    error = reply.json()["error"]
    assert error["field"] == field and error["allowed"] and not error["message"].startswith("Value error")


@pytest.mark.parametrize(("load", "field"), [
    ({"workload_preset": "chat-seat"}, "workload_preset"),
    ({"users": 10, "workload": {"input_len": 5}}, "workload.input_len"),
    ({"users": 10, "workload_preset": "chat-seat", "clients": 3}, "clients"),
])
def test_a_simulated_load_stated_wrongly_names_its_key(client, load, field):
    reply = client.post("/api/simulate", json={"deployment": {"model": "llama-3.1-8b", "gpu": "H100"}, **load})
    assert reply.status_code == 422 and reply.json()["error"]["field"] == field


def test_a_simulated_load_stated_wrongly_names_the_flag():
    error, line = _cli_error([*SIM, "--workload", "chat-seat", "--request-rate", "1"])
    assert error["field"] == "--workload" and line.startswith("error: --workload: a workload preset goes with --users")
    error, _ = _cli_error([*SIM, "--request-rate", "1", "--clients", "3"])
    assert error["field"] == "--clients"


def test_a_validators_message_reaches_the_api_without_pydantics_prefix(client):
    reply = client.post("/api/perf", json={"deployment": {"model": "llama-3.1-8b", "gpu": "H100"},
                                            "workload": {"concurrency": -1}})
    assert reply.status_code == 422
    error = reply.json()["error"]
    assert error["field"] == "workload.concurrency" and error["message"].startswith("concurrency must be")


def test_no_simulated_load_lists_every_way_of_giving_one_as_a_flag():
    error, line = _cli_error(SIM)
    assert error["field"] == "--request-rate"
    assert error["allowed"] == "--request-rate, --users, --clients, --trace"
