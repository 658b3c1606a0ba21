"""A vLLM launch planned at its current release says its flags were checked against that release too, with
the source that read them there (engine_flags.yaml: version, version_source)."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from inferplan.shells.cli import app


def test_a_vllm_launch_at_0340_names_0340_among_the_releases_its_flags_were_checked_at(catalog):
    ran = CliRunner().invoke(app, ["deploy", "--model", "llama-3.1-8b", "--gpu", "H100", "--json"])
    command = json.loads(ran.stdout)["command"]
    assert command["engine_version"] == "0.34.0"
    assert "0.34.0" in command["flags_checked_against"], command["flags_checked_against"]
    flags = next(f for f in catalog.engine_flags if f.engine == "vllm")
    assert flags.version_source in catalog.sources
