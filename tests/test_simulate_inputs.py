"""``inferplan simulate``, ``search`` and their API routes agree on what they refuse and say what
they do: bursty arrivals need a peak above 1, a trace needs a time span, an input the load would
ignore is refused naming it, a repeated trace says so, and figures read as figures."""

from __future__ import annotations

import json
import re
import warnings

import numpy as np
import pytest
from fastapi.testclient import TestClient
from pydantic import ValidationError
from typer.testing import CliRunner

from inferplan.errors import InvalidScenarioError
from inferplan.search.arrivals import Load, plural, rate_text
from inferplan.search.mgc import erlang_c
from inferplan.search.reasons import FamilyStats, explain
from inferplan.search.request import Targets
from inferplan.search.trace import parse_trace
from inferplan.shells.api import create_app
from inferplan.shells.cli import app

SIM = ["simulate", "--model", "qwen3-8b", "--gpu", "h100-sxm"]
SEARCH = ["search", "--model", "qwen3-8b"]
DEPLOYMENT = {"model": "qwen3-8b", "gpu": "h100-sxm"}
ROWS = [{"arrival_s": 0.5 * i, "input_tokens": 100 + i, "output_tokens": 20} for i in range(8)]
HEADER = "arrival_s,input_tokens,output_tokens\n"


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    return TestClient(create_app(tmp_path_factory.mktemp("db") / "t.db"))


def _run(args):
    return CliRunner().invoke(app, args, prog_name="inferplan")


def _refused(args):
    """The CLI's --json error of ``args`` (exit 2, one line, no traceback)."""
    done = _run([*args, "--json"])
    assert done.exit_code == 2 and "Traceback" not in done.output, done.output
    return json.loads(done.stdout)["error"]


def _trace_file(tmp_path, rows: str):
    path = tmp_path / "t.csv"
    path.write_text(HEADER + rows)
    return str(path)


# bursty arrivals: a peak above the mean, or refused alike by both commands and both routes

@pytest.mark.parametrize("peak", [[], ["--peak-to-average", "1"]])
@pytest.mark.parametrize("command", [[*SIM, "--request-rate", "2"], [*SEARCH, "--users", "10"]])
def test_bursty_arrivals_without_a_peak_are_refused_naming_it(command, peak):
    error = _refused([*command, "--arrival", "bursty", *peak])
    assert error["field"] == "--peak-to-average" and "above 1" in error["allowed"]


@pytest.mark.parametrize("route, body", [
    ("/api/simulate", {"deployment": DEPLOYMENT, "request_rate_per_s": 2, "requests": 200}),
    ("/api/search", {"models": ["qwen3-8b"], "users": 10}),
])
@pytest.mark.parametrize("peak", [{}, {"peak_to_average": 1.0}])
def test_bursty_arrivals_without_a_peak_are_a_422_naming_it(client, route, body, peak):
    r = client.post(route, json={**body, "arrival": "bursty", **peak})
    assert r.status_code == 422 and r.json()["error"]["field"] == "peak_to_average", r.text


def test_a_bursty_load_needs_a_peak_and_one_above_1_simulates(client):
    with pytest.raises(ValidationError, match="peak_to_average"):
        Load(arrival="bursty", request_rate_per_s=1.0)
    r = client.post("/api/simulate", json={"deployment": DEPLOYMENT, "request_rate_per_s": 2, "requests": 200,
                                           "arrival": "bursty", "peak_to_average": 3})
    assert r.status_code == 200 and "bursty, peak x3" in r.json()["load"], r.text


# a trace with no time span gives no rate: refused, not planned at a million requests/s

@pytest.mark.parametrize("rows", ["0,100,50\n", "3,100,50\n3,200,60\n3,100,50\n"])
def test_a_trace_spanning_no_time_is_refused(tmp_path, client, rows):
    with pytest.raises(InvalidScenarioError, match="no time") as info:
        parse_trace(HEADER + rows, jsonl=False)
    assert info.value.field == "trace"
    path = _trace_file(tmp_path, rows)
    for command in (SIM, SEARCH):
        error = _refused([*command, "--trace", path])
        assert error["field"] == "--trace" and "two requests at different arrival times" in error["message"]
    inline = [{"arrival_s": 3, "input_tokens": 10, "output_tokens": 5}] * 2
    for route, body in (("/api/simulate", {"deployment": DEPLOYMENT}), ("/api/search", {"models": ["qwen3-8b"]})):
        r = client.post(route, json={**body, "trace": inline})
        assert r.status_code == 422 and r.json()["error"]["field"] == "trace", r.text


# an input the load would ignore is refused naming it

@pytest.mark.parametrize("args, flag", [
    ([*SEARCH, "--users", "10", "--input-len", "50000"], "--input-len"),
    ([*SEARCH, "--users", "10", "--output-len", "50"], "--output-len"),
    ([*SEARCH, "--trace", "{trace}", "--input-len", "99999"], "--input-len"),
    ([*SIM, "--trace", "{trace}", "--input-scv", "1"], "--input-scv"),
    ([*SIM, "--trace", "{trace}", "--input-len", "99999"], "--input-len"),
    ([*SIM, "--trace", "{trace}", "--arrival", "bursty", "--peak-to-average", "2"], "--arrival"),
    ([*SIM, "--users", "10", "--input-len", "500"], "--input-len"),
])
def test_an_input_the_load_would_ignore_is_refused_naming_its_flag(tmp_path, args, flag):
    path = _trace_file(tmp_path, "".join(f"{r['arrival_s']},{r['input_tokens']},{r['output_tokens']}\n" for r in ROWS))
    assert _refused([a.replace("{trace}", path) for a in args])["field"] == flag


@pytest.mark.parametrize("route, body, field", [
    ("/api/search", {"models": ["qwen3-8b"], "trace": ROWS, "input_len": 50}, "input_len"),
    ("/api/search", {"models": ["qwen3-8b"], "users": 10, "input_len": 50}, "input_len"),
    ("/api/simulate", {"deployment": DEPLOYMENT, "trace": ROWS, "workload": {"input_len": 50}}, "workload.input_len"),
    ("/api/simulate", {"deployment": DEPLOYMENT, "trace": ROWS, "output_tokens_scv": 1}, "output_tokens_scv"),
    ("/api/simulate", {"deployment": DEPLOYMENT, "users": 10, "workload": {"output_len": 50}}, "workload.output_len"),
])
def test_an_input_the_load_would_ignore_is_a_422_naming_its_key(client, route, body, field):
    r = client.post(route, json=body)
    assert r.status_code == 422 and r.json()["error"]["field"] == field, r.text


def test_a_trace_replayed_more_or_less_than_once_says_so(client):
    many = client.post("/api/simulate", json={"deployment": DEPLOYMENT, "trace": ROWS, "requests": 2000})
    assert many.status_code == 200 and "trace of 8 requests (2/s), replayed 250 times end to end" in many.json()["load"]
    few = client.post("/api/simulate", json={"deployment": DEPLOYMENT, "trace": ROWS, "requests": 4})
    assert "its first 4" in few.json()["load"]
    once = client.post("/api/simulate", json={"deployment": DEPLOYMENT, "trace": ROWS, "requests": 8})
    assert once.json()["load"] == "trace of 8 requests (2/s)"


# users alone are planned on the default preset, as search does

def test_simulate_users_default_to_the_chat_seat_preset_as_search_does(client):
    alone = json.loads(_run([*SIM, "--users", "10", "--requests", "300", "--json"]).stdout)
    named = json.loads(_run([*SIM, "--users", "10", "--workload", "chat-seat", "--requests", "300", "--json"]).stdout)
    assert alone == named
    api = client.post("/api/simulate", json={"deployment": DEPLOYMENT, "users": 10, "requests": 300})
    assert api.status_code == 200 and api.json()["request_rate_per_s"] == alone["request_rate_per_s"]


# figures read as figures

def test_rates_and_counts_read_as_people_write_them():
    assert [rate_text(x) for x in (0.0012785, 2.0, 12.345, 1234.5, 1e5, 1e6)] == [
        "0.00128", "2", "12.3", "1,234", "100,000", "1,000,000"]
    assert (plural(1, "user"), plural(2000, "request")) == ("1 user", "2,000 requests")


def test_a_search_summary_shows_a_small_rate_to_three_figures(client):
    r = client.post("/api/views/search", json={"models": ["qwen3-8b"], "users": 10, "systems": ["hgx-h100"],
                                               "engines": ["vllm"], "top": 1})
    assert r.status_code == 200, r.text
    summary = r.json()["summary"]
    shown = float(re.search(r"10 users \(chat-seat\): ([\d.]+) requests/s", summary).group(1))
    rate = client.post("/api/simulate", json={"deployment": DEPLOYMENT, "users": 10, "requests": 100}).json()
    assert shown == pytest.approx(rate["request_rate_per_s"], rel=0.005) and shown > 0


def test_one_client_and_an_overload_are_worded_plainly():
    one = _run([*SIM, "--clients", "1", "--requests", "50"])
    assert one.exit_code == 0 and "closed loop of 1 client:" in one.output and "replica(s)" not in one.output
    over = _run([*SIM, "--request-rate", "100000", "--requests", "200"])
    assert over.exit_code == 0 and "over 100 × capacity (overloaded)" in over.output
    assert not re.search(r"utilisation \d{4,}%", over.output) and "1e+05" not in over.output


def test_an_unknown_vendor_is_refused_listing_the_catalogues(client):
    error = _refused([*SEARCH, "--users", "10", "--vendors", "foo"])
    assert error["field"] == "--vendors" and "nvidia" in error["allowed"] and "('" not in error["message"]
    r = client.post("/api/search", json={"models": ["qwen3-8b"], "users": 10, "vendors": "nvidia"})
    assert r.status_code == 422 and "tuple" not in r.text and "list" in r.json()["error"]["message"], r.text


def test_erlang_c_far_below_capacity_is_0_without_a_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert erlang_c(np.array([5000.0]), np.array([1.0]))[0] == 0.0


def test_a_family_without_a_price_is_worded_plainly():
    stats = FamilyStats(stable=True, met=True, feasible=True, least_gpus=1.0)
    for pricing in ("buy", "rent", "both"):
        message = explain(("m", "p", "e", "q"), stats, Targets(), max_gpus=None, max_capex_usd=None,
                          max_power_w=None, pricing=pricing).message
        assert message.startswith("the catalogue has no ") and " no a " not in message, message


# the docs say what the code takes and does

ROOT = __import__("pathlib").Path(__file__).resolve().parents[1]


def test_the_api_doc_names_only_keys_the_simulate_body_has():
    from inferplan.inputs.workload import Workload
    from inferplan.search.simulation import SimulationReport
    from inferplan.shells.api_simulate import SimulateRequest

    row = next(line for line in (ROOT / "docs" / "api.md").read_text().splitlines()
               if line.startswith("| `POST /api/simulate`"))
    body, answer = row.split("→", 1)
    spans = re.findall(r"`([a-z_]+|\{[^`]*\})`", body)  # a key, or a body written out as {key, key}
    named = {word for span in spans for word in re.findall(r"[a-z_]+", span)}
    values = {"poisson", "bursty", "lognormal", "uniform"}
    assert named and named <= set(SimulateRequest.model_fields) | set(Workload.model_fields) | values, named
    assert set(re.findall(r"`([a-z_]+)`", answer)) <= set(SimulationReport.model_fields) | set(SimulateRequest.model_fields)


def test_the_readme_says_search_prints_launch_commands_with_deploy():
    text = " ".join((ROOT / "README.md").read_text().split())
    said = [s for s in re.split(r"(?<=\.) ", text) if "launch command" in s and "search" in text]
    assert said and all("--deploy" in s for s in said), said
    plain = _run([*SEARCH, "--users", "10", "--systems", "hgx-h100", "--engines", "vllm", "--top", "1"])
    shown = _run([*SEARCH, "--users", "10", "--systems", "hgx-h100", "--engines", "vllm", "--top", "1", "--deploy"])
    assert "vllm serve" not in plain.output and "vllm serve" in shown.output


@pytest.mark.parametrize("command", [[*SIM, "--request-rate", "2"], [*SEARCH, "--users", "10"]])
def test_a_burst_period_without_bursty_arrivals_is_refused_by_both_commands(command, client):
    """simulate took --burst-period 30 on Poisson arrivals and ignored it (its default hid whether it
    was stated); search refused it. Both refuse it now, and so does the API."""
    assert _refused([*command, "--burst-period", "30"])["field"] == "--burst-period"
    reply = client.post("/api/simulate", json={"deployment": DEPLOYMENT, "request_rate_per_s": 2, "burst_period_s": 30})
    assert reply.status_code == 422 and reply.json()["error"]["field"] == "burst_period_s", reply.text


def test_separate_pools_simulate_from_the_cli_and_the_api(client):
    """``--prefill-instances`` runs the deployment as the decode pool behind that many prefill
    instances; the hand-over is the KV cache over the link joining them unless given."""
    args = [*SIM, "--request-rate", "4", "--replicas", "2", "--prefill-instances", "1", "--requests", "2000", "--json"]
    res = _run(args)
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert out["approximation"] is None
    assert out["pools"]["prefill_instances"] == 1 and out["pools"]["decode_instances"] == 2
    assert out["pools"]["kv_transfer_s"] > 0 and out["pools"]["kv_transfer_link"]
    given = _run([*args[:-1], "--kv-transfer-s", "0.5", "--json"])
    slower = json.loads(given.output)
    assert slower["pools"]["kv_transfer_s"] == 0.5 and slower["pools"]["kv_transfer_link"] is None
    assert slower["simulation"]["ttft_p50_s"] > out["simulation"]["ttft_p50_s"] + 0.4
    api = client.post("/api/simulate", json={"deployment": DEPLOYMENT, "request_rate_per_s": 4, "replicas": 2,
                                             "prefill_instances": 1, "requests": 2000})
    assert api.status_code == 200 and api.json()["simulation"] == out["simulation"]


@pytest.mark.parametrize("extra, flag", [(["--kv-transfer-s", "0.1"], "--kv-transfer-s"),
                                         (["--prefill-tensor-parallel-size", "2"], "--prefill-tensor-parallel-size")])
def test_a_pool_setting_without_a_prefill_pool_is_refused_naming_it(extra, flag):
    res = _run([*SIM, "--request-rate", "4", *extra])
    assert res.exit_code == 2 and res.output.startswith(f"error: {flag}:"), res.output


def test_separate_pools_under_a_closed_loop_are_refused_naming_clients(client):
    res = _run([*SIM, "--clients", "8", "--prefill-instances", "1"])
    assert res.exit_code == 2 and res.output.startswith("error: --clients:"), res.output
    api = client.post("/api/simulate", json={"deployment": DEPLOYMENT, "clients": 8, "prefill_instances": 1})
    assert api.status_code == 422 and api.json()["error"]["field"] == "clients"


def test_an_overload_names_the_fewest_replicas_that_keep_up(client):
    def post(replicas):
        r = client.post("/api/simulate", json={"deployment": DEPLOYMENT, "workload": {"input_len": 2048, "output_len": 512},
                                               "request_rate_per_s": 300, "requests": 300, "replicas": replicas})
        assert r.status_code == 200, r.text
        return r.json()

    over = post(1)
    assert not over["approximation"]["stable"]
    said = [n for n in over["notes"] if n.startswith("overloaded:")]
    needed = int(re.search(r"at least ([\d,]+) replicas keep up", said[0]).group(1).replace(",", ""))
    assert needed > 1 and not post(needed - 1)["approximation"]["stable"]
    kept_up = post(needed)
    assert kept_up["approximation"]["stable"] and not any(n.startswith("overloaded:") for n in kept_up["notes"])
    cli = _run([*SIM, "--input-len", "2048", "--output-len", "512", "--request-rate", "300", "--requests", "300"])
    assert cli.exit_code == 0 and f"at least {needed:,} replicas keep up" in " ".join(cli.output.split())
