"""`simulate` says a field as its flag only where the error names the field (an underscore, or the error's
names), as `search` does: "the Azure LLM inference trace" keeps its word."""

from __future__ import annotations

from typer.testing import CliRunner

from inferplan.shells.cli import app


def test_a_bad_trace_header_keeps_the_word_trace_in_the_prose(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("foo,bar\n1,2\n")
    ran = CliRunner().invoke(app, ["simulate", "--model", "qwen3-32b", "--gpu", "H100", "--trace", str(bad)])
    said = " ".join(ran.stderr.split())
    assert ran.exit_code == 2 and said.startswith("error: --trace: ")
    assert "the Azure LLM inference trace, 2023" in said and "the Mooncake trace:" in said
    assert "--trace: --trace" not in said and "inference --trace" not in said
    searched = CliRunner().invoke(app, ["search", "--model", "qwen3-32b", "--trace", str(bad), "--accelerators", "h100-sxm"])
    assert " ".join(searched.stderr.split()) == said  # the same message from both commands


def test_the_allowed_load_sources_are_said_as_flags_and_a_trace_stays_a_word():
    ran = CliRunner().invoke(app, ["simulate", "llama-3.1-8b", "--gpu", "h100"])
    said = " ".join(ran.stderr.split())
    assert ran.exit_code == 2 and "(allowed: --request-rate, --users, --clients, --trace)" in said, said
    assert "or a trace (allowed" in said  # the word, not the flag: only the load's fields are said as flags
