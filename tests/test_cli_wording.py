"""Refusals say what is allowed in the user's words, and every speed option has help text."""

from __future__ import annotations

import pytest
import typer
from typer.testing import CliRunner

from inferplan.shells.cli import app

runner = CliRunner()
PERF = ["perf", "--model", "qwen3-8b", "--gpu", "h100"]


def test_an_acceptance_rate_without_drafts_names_no_internal_field_and_says_what_is_allowed():
    r = runner.invoke(app, [*PERF, "--acceptance-rate", "0.5"])
    assert r.exit_code == 2 and r.stderr.startswith("error: --acceptance-rate:"), r.output
    assert "speculative_tokens" not in r.stderr and "(allowed: " in r.stderr


def test_concurrency_out_of_range_says_what_is_allowed():
    r = runner.invoke(app, [*PERF, "--concurrency", "0"])
    assert r.exit_code == 2 and "(allowed: 1 to 10,000,000, or max)" in r.stderr, r.output


@pytest.mark.parametrize("command", ["perf", "frontier", "simulate"])
def test_every_speculative_and_prefix_cache_option_has_help(command):
    params = typer.main.get_command(app).commands[command].params
    named = {p.opts[0]: p for p in params if p.opts[0] in ("--speculative-tokens", "--prefix-cache-hit-rate")}
    assert "--speculative-tokens" in named
    assert all(p.help for p in named.values()), [o for o, p in named.items() if not p.help]


@pytest.mark.parametrize("args, flag", [
    (["fit", "--model", "qwen3-8b", "--gpu", "H100", "--moe-kernel", "marlin"], "--moe-kernel"),  # a dense model
    ([*PERF, "--prefix-cache-host-share", "0.5"], "--prefix-cache-host-share"),  # no cached tokens to share
])
def test_a_setting_that_would_change_nothing_is_refused_naming_it(args, flag):
    r = runner.invoke(app, args)
    assert r.exit_code == 2 and r.stderr.startswith(f"error: {flag}:") and "(allowed: " in r.stderr, r.output


def test_the_same_settings_where_they_apply_are_taken():
    assert runner.invoke(app, ["fit", "--model", "gpt-oss-20b", "--gpu", "H100", "--moe-kernel", "triton"]).exit_code == 0
    assert runner.invoke(app, [*PERF, "--prefix-cache-hit-rate", "0.5"]).exit_code == 0


def test_every_acceptance_option_has_help():
    params = typer.main.get_command(app).commands["acceptance"].params
    assert "--quantization" in {p.opts[0] for p in params}
    assert [p.opts[0] for p in params if not p.help] == []
