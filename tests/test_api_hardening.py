"""What the HTTP server refuses and adds (shells/api_guard.py): body cap, text limits, Host check,
security headers, one error shape for every 4xx and the responses OpenAPI declares."""

import json

import pytest
from fastapi.testclient import TestClient
from pydantic import ValidationError

from inferplan.inputs import MAX_TEXT_CHARS
from inferplan.inputs.deployment import Deployment
from inferplan.economics.scenario import Scenario
from inferplan.shells.api import create_app
from inferplan.shells.api_guard import ECHO_CHARS, MAX_BODY_BYTES, loopback_hosts

SCENARIO = {"name": "hardening", "model": "llama-3.1-8b", "platform": {"system": "hgx-h100"},
            "workload": {"preset": "chat-seat"}, "target_users": 100}
JSON = {"content-type": "application/json"}


@pytest.fixture()
def client(tmp_path):
    return TestClient(create_app(tmp_path / "h.db"))


def assert_error_shape(response, status):
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error", "detail"}, body
    assert set(body["error"]) == {"field", "message", "allowed"} and body["error"]["message"]
    assert body["detail"] and {"loc", "msg", "type", "allowed"} <= set(body["detail"][0])
    return body


# --- body size
def test_a_body_over_the_cap_is_a_413_stating_the_limit_before_it_is_read(client):
    body = json.dumps({"scenario": SCENARIO, "junk": "x" * MAX_BODY_BYTES})
    r = client.post("/api/plan", content=body, headers=JSON)
    err = assert_error_shape(r, 413)
    assert str(MAX_BODY_BYTES) in err["error"]["message"] and str(MAX_BODY_BYTES) in err["error"]["allowed"]
    assert "junk" not in r.text  # refused on its length, never parsed


def test_a_chunked_body_without_a_length_is_counted_as_it_arrives(client):
    def chunks():
        yield b'{"scenario": {"name": "'
        for _ in range(MAX_BODY_BYTES // 1024 + 2):
            yield b"x" * 1024
        yield b'"}}'

    assert_error_shape(client.post("/api/plan", content=chunks(), headers=JSON), 413)


def test_a_body_just_under_the_cap_is_read(client):
    body = json.dumps({"scenario": SCENARIO, "draws": 0})
    padded = body + " " * (MAX_BODY_BYTES - len(body) - 10)
    assert client.post("/api/plan", content=padded, headers=JSON).status_code == 200


def test_a_lying_content_length_is_refused(client):
    r = client.post("/api/plan", content=b"{}", headers={**JSON, "content-length": "not-a-number"})
    assert r.status_code in (400, 413)


# --- echoed input and encodable replies
def test_a_422_quotes_only_a_short_excerpt_of_a_large_bad_input(client):
    r = client.post("/api/plan", json={"scenario": SCENARIO, "unknown": "y" * 60_000})
    err = assert_error_shape(r, 422)
    assert err["detail"][0]["loc"] == ["body", "unknown"]
    assert len(err["detail"][0]["input"]) <= ECHO_CHARS + 1 and len(r.content) < 2000


@pytest.mark.parametrize("body", [
    '{"scenario": {"name": "\\ud800", "model": "llama-3.1-8b", "platform": {"system": "hgx-h100"}}}',
    '{"scenario": {"model": "llama-3.1-8b", "platform": {"system": "hgx-h100"}}, "\\udfff": 1}',
    '{"model": "\\ud800\\udc00\\ud800", "gpu": "H100"}',
    '{"models": ["llama-3.1-8b", "\\ud800"]}',
])
def test_a_lone_surrogate_anywhere_is_a_422_not_a_500(client, body):
    route = "/api/plan" if "scenario" in body else "/api/fits" if "models" in body else "/api/fit"
    r = client.post(route, content=body.encode(), headers=JSON)
    err = assert_error_shape(r, 422)
    assert "\\ud8" in r.text or "\\udf" in r.text or "U+D" in err["error"]["message"]


@pytest.mark.parametrize("bad", ["a\x00b", "evil\u202egpj.exe", "x\u2066y", "\x1b[31mred"])
def test_control_and_bidi_characters_in_a_name_are_refused(client, bad):
    r = client.post("/api/scenarios", json={"name": bad, "scenario": SCENARIO})
    assert_error_shape(r, 422)
    assert r.json()["detail"][0]["loc"] == ["body", "name"]
    r = client.post("/api/plan", json={"scenario": {**SCENARIO, "name": bad}, "draws": 0})
    assert r.status_code == 422 and r.json()["error"]["field"] == "scenario.name"


def test_tabs_and_line_breaks_are_plain_text(client):
    q = client.post("/api/quotes", json={"system": "hgx-h100", "price_usd": 2e5, "quoted_on": "2026-11-01",
                                         "vendor": "Acme", "note": "line one\nline two\tand a tab"})
    assert q.status_code == 201


def test_every_text_in_an_input_is_bounded_and_a_stored_row_stays_readable():
    with pytest.raises(ValidationError, match="at most"):
        Deployment(model="m" * (MAX_TEXT_CHARS + 1), gpu="H100")
    with pytest.raises(ValidationError, match="U\\+0000"):
        Deployment(model="llama-3.1-8b", gpu="H\x00100")
    with pytest.raises(ValidationError, match="at most 200"):
        Scenario.model_validate({**SCENARIO, "name": "n" * 201})
    old = Scenario.model_validate({**SCENARIO, "name": "saved\x00before"}, context={"stored": True})
    assert old.name == "saved\x00before"


def test_a_long_name_cannot_make_a_long_header(client):
    r = client.post("/api/report", json={"scenario": {**SCENARIO, "name": "é" * 200}, "draws": 0})
    assert r.status_code == 200 and len(r.headers["content-disposition"]) < 1000
    assert client.post("/api/report", json={"scenario": {**SCENARIO, "name": "n" * 201}, "draws": 0}).status_code == 422


# --- Host check
def test_bound_to_loopback_only_loopback_host_names_are_answered(tmp_path):
    app = create_app(tmp_path / "h.db", allowed_hosts=loopback_hosts(8123))
    for host in ("localhost:8123", "127.0.0.1:8123", "[::1]:8123", "LOCALHOST", "127.0.0.1"):
        assert TestClient(app).get("/api/catalog", headers={"host": host}).status_code == 200, host
    for host in ("evil.example:8123", "localhost:9999", "127.0.0.1.evil.example", "attacker.test"):
        r = TestClient(app).get("/api/catalog", headers={"host": host})
        err = assert_error_shape(r, 400)
        assert err["error"]["field"] == "host" and "localhost:8123" in err["error"]["allowed"], host


def test_serve_checks_hosts_on_loopback_only_and_runs_workers(monkeypatch, tmp_path):
    import uvicorn
    from typer.testing import CliRunner

    from inferplan.shells import server
    from inferplan.shells.cli import app

    seen = {}
    monkeypatch.setattr(uvicorn, "run", lambda target, **kw: seen.update(target=target, **kw))
    monkeypatch.delenv(server.ENV_HOSTS, raising=False)
    result = CliRunner().invoke(app, ["serve", "--port", "8124", "--db", str(tmp_path / "s.db"), "--workers", "3"])
    assert result.exit_code == 0, result.output
    assert seen["workers"] == 3 and seen["factory"] and seen["target"] == "inferplan.shells.server:app_from_env"
    built = server.app_from_env()
    assert TestClient(built).get("/api/catalog", headers={"host": "evil.example"}).status_code == 400
    assert TestClient(built).get("/api/catalog", headers={"host": "localhost:8124"}).status_code == 200
    CliRunner().invoke(app, ["serve", "--host", "0.0.0.0", "--port", "8124", "--db", str(tmp_path / "s.db")])
    assert seen["workers"] == server.default_workers() and server.ENV_HOSTS not in __import__("os").environ
    assert server.allowed_hosts("0.0.0.0", 1) is None
    assert "[::1]:8" in server.allowed_hosts("::1", 8) and "127.0.0.2:8" in server.allowed_hosts("127.0.0.2", 8)


def test_serve_on_a_port_another_server_holds_is_one_line_naming_the_port(monkeypatch, tmp_path):
    import socket

    import uvicorn
    from typer.testing import CliRunner

    from inferplan.shells.cli import app

    started = []
    monkeypatch.setattr(uvicorn, "run", lambda target, **kw: started.append(target))
    with socket.socket() as other:  # another server (vLLM listens on 8000 too) holds the port
        other.bind(("127.0.0.1", 0))
        other.listen()
        port = other.getsockname()[1]
        result = CliRunner().invoke(app, ["serve", "--port", str(port), "--db", str(tmp_path / "s.db")],
                                    terminal_width=400)
    assert result.exit_code == 2 and not started
    said = " ".join(result.output.split())
    assert f"error: --port: cannot listen on 127.0.0.1:{port}" in said and "(allowed: a free port" in said
    assert "open http" not in said  # the calculator's address is printed only when it will answer there
    bad = CliRunner().invoke(app, ["serve", "--host", "nosuchhost.invalid", "--db", str(tmp_path / "s.db")])
    assert bad.exit_code == 2 and "--host" in bad.output and not started



def test_serve_on_a_privileged_port_names_the_port_and_the_first_one_a_user_may_take(monkeypatch, tmp_path):
    import errno

    import uvicorn
    from typer.testing import CliRunner

    from inferplan.errors import InvalidScenarioError
    from inferplan.listen import check_listen, next_port
    from inferplan.shells import server
    from inferplan.shells.cli import app

    denied = PermissionError(errno.EACCES, "Permission denied")  # bind() below ip_unprivileged_port_start, not root
    with pytest.raises(InvalidScenarioError) as exc:
        check_listen("127.0.0.1", 80, denied, first_unprivileged=1024)
    assert exc.value.field == "port" and exc.value.allowed.startswith("a port from 1024 up") and "e.g. 8000" in exc.value.allowed
    with pytest.raises(InvalidScenarioError) as exc:
        check_listen("10.255.255.1", 8000, OSError(errno.EADDRNOTAVAIL, "Cannot assign requested address"))
    assert exc.value.field == "host"
    assert (next_port(8000), next_port(65535)) == (8001, 8000)
    started = []
    monkeypatch.setattr(uvicorn, "run", lambda target, **kw: started.append(target))
    monkeypatch.setattr(server, "bind_error", lambda host, port: denied)
    result = CliRunner().invoke(app, ["serve", "--port", "80", "--db", str(tmp_path / "s.db")], terminal_width=400)
    said = " ".join(result.output.split())
    assert result.exit_code == 2 and not started
    assert "error: --port: cannot listen on 127.0.0.1:80: Permission denied (allowed: a port from" in said, said


# --- security headers
@pytest.mark.parametrize("path", ["/", "/static/app.js", "/api/catalog", "/openapi.json", "/nope", "/docs"])
def test_every_response_carries_the_security_headers(client, path):
    r = client.get(path)
    assert r.headers["x-frame-options"] == "DENY" and r.headers["x-content-type-options"] == "nosniff"
    assert r.headers["referrer-policy"] and "frame-ancestors 'none'" in r.headers["content-security-policy"]
    assert "script-src 'self'" in r.headers["content-security-policy"]


def test_the_docs_inline_start_script_is_allowed_by_its_hash_only(client):
    csp = client.get("/docs").headers["content-security-policy"]
    assert "'sha256-" in csp and "'unsafe-inline'" not in csp.split("script-src")[1].split(";")[0]
    assert "'sha256-" not in client.get("/").headers["content-security-policy"]


def test_an_oversized_body_reply_carries_the_headers_too(client):
    r = client.post("/api/plan", content=b"x" * (MAX_BODY_BYTES + 1), headers=JSON)
    assert r.status_code == 413 and r.headers["x-frame-options"] == "DENY"


# --- one error shape for every 4xx
def test_every_client_error_has_the_documented_shape(client):
    bad_json = client.post("/api/plan", content=b'{"scenario": ', headers=JSON)
    assert assert_error_shape(bad_json, 400)["error"]["allowed"] == "a JSON object"
    not_utf8 = client.post("/api/plan", content=b'{"scenario": "\xff"}', headers=JSON)
    assert_error_shape(not_utf8, 400)
    assert_error_shape(client.get("/api/nope"), 404)
    assert_error_shape(client.get("/api/scenarios/12345"), 404)
    assert_error_shape(client.get("/api/catalog/gizmos"), 404)
    wrong_method = client.put("/api/plan")
    assert_error_shape(wrong_method, 405)
    assert "POST" in wrong_method.headers["allow"]
    assert_error_shape(client.post("/api/plan", content=b"x" * (MAX_BODY_BYTES + 1), headers=JSON), 413)
    assert_error_shape(client.post("/api/fit", json={"model": "llama-3.1-8b", "gpu": "H100", "gpu_memory_utilization": 2}), 422)
    assert client.post("/api/scenarios", json={"name": "twice", "scenario": SCENARIO}).status_code == 201
    conflict = assert_error_shape(client.post("/api/scenarios", json={"name": "twice", "scenario": SCENARIO}), 409)
    assert conflict["error"]["field"] == "name" and "replace" in conflict["error"]["allowed"]


def test_openapi_declares_the_error_responses(client):
    schema = client.get("/openapi.json").json()
    assert {"error", "detail"} <= set(schema["components"]["schemas"]["Error"]["properties"])
    for path, methods in schema["paths"].items():
        for method, op in methods.items():
            assert {"400", "404", "413", "422"} <= set(op["responses"]), (path, method)
            assert op["responses"]["422"]["content"]["application/json"]["schema"]["$ref"].endswith("/Error")
    assert "409" in schema["paths"]["/api/scenarios"]["post"]["responses"]
    assert "409" in schema["paths"]["/api/scenarios/{scenario_id}"]["patch"]["responses"]


def test_openapi_declares_the_415_on_every_route_that_takes_a_body(client):
    schema = client.get("/openapi.json").json()
    posts = [(path, op) for path, methods in schema["paths"].items() for method, op in methods.items() if method == "post"]
    assert len(posts) > 10
    for path, op in posts:
        assert op["responses"]["415"]["content"]["application/json"]["schema"]["$ref"].endswith("/Error"), path
    patch = schema["paths"]["/api/scenarios/{scenario_id}"]["patch"]
    assert "415" in patch["responses"] and "415" not in schema["paths"]["/api/catalog"]["get"]["responses"]
    sent_as_text = client.post("/api/plan", content=json.dumps({"scenario": SCENARIO}), headers={"content-type": "text/plain"})
    assert_error_shape(sent_as_text, 415)


@pytest.mark.parametrize("chars", [201, 4000, 5000])
def test_a_long_scenario_name_is_refused_naming_the_names_own_limit(client, chars):
    r = client.post("/api/plan", json={"scenario": {**SCENARIO, "name": "n" * chars}, "draws": 0})
    err = assert_error_shape(r, 422)["error"]
    assert err["field"] == "scenario.name" and err["message"] == f"a text of {chars} characters: at most 200", err


def test_a_saved_scenarios_links_name_operations_that_exist(client):
    schema = client.get("/openapi.json").json()
    ids = {op["operationId"] for methods in schema["paths"].values() for op in methods.values()}
    links = schema["paths"]["/api/scenarios"]["post"]["responses"]["201"]["links"]
    assert len(links) == 4 and {link["operationId"] for link in links.values()} <= ids


@pytest.mark.parametrize("path, status", [("/", 200), ("/api/catalog", 200), ("/api/catalog/models/qwen3-8b", 200),
                                          ("/api/catalog/nope", 404), ("/static/index.html", 200), ("/api/fit", 405)])
def test_head_is_answered_as_get_without_the_body(client, path, status):
    got = client.get(path)
    r = client.head(path)
    assert (r.status_code, r.content) == (status, b""), r.text
    assert r.headers["content-length"] == got.headers["content-length"]
    assert r.headers["content-type"] == got.headers["content-type"]
    assert r.headers["x-frame-options"] == "DENY"


@pytest.mark.parametrize("path, field, bound", [("/api/catalog/models/" + "a" * 60_000, "name", 300),
                                                ("/api/catalog/" + "k" * 5_000, "kind", 200)])
def test_a_long_name_in_a_path_is_a_short_422_not_a_404_quoting_it(client, path, field, bound):
    r = client.get(path)
    err = assert_error_shape(r, 422)
    assert err["detail"][0]["loc"] == ["path", field] and err["error"]["allowed"] == f"at most {bound} characters"
    assert len(r.content) < 1000


@pytest.mark.parametrize("method, path, allow", [
    ("options", "/api/scenarios/1", "DELETE, GET, HEAD, PATCH"),  # Starlette named only the first route's GET
    ("post", "/api/measurements/3", "DELETE, GET, HEAD"),
    ("put", "/api/scenarios", "GET, HEAD, POST"),
    ("put", "/api/fit", "POST"),
    ("post", "/", "GET, HEAD"),
])
def test_a_405_names_every_method_the_path_takes(client, method, path, allow):
    r = client.request(method, path)
    err = assert_error_shape(r, 405)
    assert r.headers["allow"] == allow and err["error"]["allowed"] == allow


def test_a_404_says_which_paths_are_served(client):
    err = assert_error_shape(client.get("/nope"), 404)
    assert "/openapi.json" in err["error"]["allowed"]


def test_a_fits_matrix_of_more_cells_than_one_request_computes_is_refused_before_any(client):
    """60 models × 60 GPUs × 10 quantizations in a 1.4 KB body was 143 s of one core and a 159 MB reply."""
    from inferplan.memory.matrix import MAX_FITS_CELLS

    gpus = [a["id"] for a in client.get("/api/catalog/accelerators").json()][:17]
    err = assert_error_shape(client.post("/api/fits", json={"all_models": True, "gpus": gpus}), 422)
    assert err["error"]["field"] == "gpus" and f"at most {MAX_FITS_CELLS:,} cells" in err["error"]["allowed"]
    assert "builds) × 17 GPUs or systems is" in err["error"]["message"]
    assert client.post("/api/fits", json={"all_models": True}).status_code == 200  # the default grid, every model


def test_a_number_too_large_for_a_count_is_named_as_too_large_not_as_a_string(client):
    """1e308 in a whole-number field: pydantic calls it an "input string" it cannot parse; the 422 says it is too
    large, at its key, with the field's bounds."""
    r = client.post("/api/plan", json={"scenario": {"model": "qwen3-8b", "platform": {"system": "hgx-h100"},
                                                    "target_users": 1e308}})
    assert r.status_code == 422
    item = r.json()["detail"][0]
    assert item["loc"] == ["body", "scenario", "target_users"] and "string" not in item["msg"]
    assert item["msg"].startswith("Input is too large") and item["allowed"] == "a whole number at least 1 and at most 1,000,000,000"
