"""fit takes speculative decoding as search, perf, simulate and deploy do (--speculative-tokens,
--speculative-method; speculative_tokens and speculative_method on POST /api/fit): drafting with the model's
MTP layers counts them in memory, as --mtp-draft does."""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from inferplan.shells.cli import app

DSV3 = ["fit", "--model", "deepseek-v3", "--system", "hgx-h200", "--json"]


def _kv_tokens(*extra: str) -> int:
    result = CliRunner().invoke(app, [*DSV3, *extra])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)["kv_cache_tokens"]


def test_speculative_tokens_count_the_mtp_layers_as_mtp_draft_does():
    plain, mtp = _kv_tokens(), _kv_tokens("--mtp-draft")
    assert mtp < plain
    assert _kv_tokens("--speculative-tokens", "1") == mtp  # left out, the method perf plans: MTP for DeepSeek-V3
    assert _kv_tokens("--speculative-tokens", "2", "--speculative-method", "mtp") == mtp
    assert _kv_tokens("--speculative-tokens", "2", "--speculative-method", "ngram") == plain


@pytest.mark.parametrize("extra", [["--speculative-method", "mtp"], ["--speculative-tokens", "1", "--speculative-method", "x"],
                                   ["--speculative-tokens", "1", "--speculative-method", "ngram", "--mtp-draft"]])
def test_a_speculative_method_fit_cannot_plan_names_the_flag(extra):
    result = CliRunner().invoke(app, [*DSV3, *extra])
    assert result.exit_code == 2 and "--speculative-method" in result.output


def test_mtp_on_a_model_without_mtp_layers_names_the_method():
    result = CliRunner().invoke(app, ["fit", "--model", "qwen3-32b", "--gpu", "H100", "--speculative-tokens", "1",
                                      "--speculative-method", "mtp"])
    assert result.exit_code == 2 and "--speculative-method" in result.output


def test_the_fit_route_takes_the_same_fields(tmp_path):
    from inferplan.shells.api import create_app

    client = TestClient(create_app(tmp_path / "api.db"))
    body = {"model": "deepseek-v3", "system": "hgx-h200"}
    plain = client.post("/api/fit", json=body).json()["kv_cache_tokens"]
    mtp = client.post("/api/fit", json={**body, "mtp_draft": True}).json()["kv_cache_tokens"]
    drafted = client.post("/api/fit?speculative_tokens=1&speculative_method=mtp", json=body)
    assert drafted.status_code == 200 and drafted.json()["kv_cache_tokens"] == mtp < plain
    refused = client.post("/api/fit?speculative_method=mtp", json=body)
    assert refused.status_code == 422 and refused.json()["error"]["field"] == "speculative_method"
