"""A value outside a fixed set (a Literal field) is refused naming the set as ``allowed`` in both shells."""

import json

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from inferplan.shells.api import create_app
from inferplan.shells.cli import app
from inferplan.shells.pydantic_errors import allowed_by


@pytest.mark.parametrize(("expected", "allowed"), [
    ("'flashinfer' or 'pytorch'", "flashinfer, pytorch"),
    ("'both', 'prefill' or 'decode'", "both, prefill, decode"),
])
def test_a_literal_error_lists_its_values(expected, allowed):
    assert allowed_by({"type": "literal_error", "ctx": {"expected": expected}}) == allowed


def test_an_error_of_another_kind_allows_nothing_named():
    assert allowed_by({"type": "int_parsing", "ctx": {}}) is None


def test_the_cli_names_the_sampler_values():
    done = CliRunner().invoke(app, ["fit", "--model", "llama-3.1-8b", "--gpu", "H100", "--topk-topp-sampler", "x",
                                    "--json"], prog_name="inferplan")
    assert done.exit_code == 2
    error = json.loads(done.stdout)["error"]
    assert error["field"] == "--topk-topp-sampler" and error["allowed"] == "flashinfer, pytorch"
    assert "(allowed: flashinfer, pytorch)" in done.stderr


@pytest.mark.parametrize(("body", "path", "allowed"), [
    ({"deployment": {"model": "llama-3.1-8b", "gpu": "h100-sxm", "topk_topp_sampler": "x"}},
     "deployment.topk_topp_sampler", "flashinfer, pytorch"),
    ({"deployment": {"model": "llama-3.1-8b", "gpu": "h100-sxm"}, "role": "x"}, "role", "both, prefill, decode"),
])
def test_the_api_names_the_values(body, path, allowed, tmp_path):
    reply = TestClient(create_app(tmp_path / "literal.db")).post("/api/deploy", json=body)
    assert reply.status_code == 422
    error = reply.json()["error"]
    assert (error["field"], error["allowed"]) == (path, allowed)


@pytest.mark.parametrize("args", [["deploy", "--model", "llama-3.1-8b", "--gpu", "H100", "--format", "compose"],
                                  ["deploy", "--model", "llama-3.1-8b", "--gpu", "H100", "--role", "x"],
                                  ["perf", "--model", "llama-3.1-8b", "--gpu", "H100", "--concurrency", "many"]],
                         ids=lambda a: a[-2])
def test_a_flag_refused_by_its_command_says_what_is_allowed_on_its_line(args):
    done = CliRunner().invoke(app, args, prog_name="inferplan")
    assert done.exit_code == 2 and "(allowed: " in done.stderr, done.stderr
