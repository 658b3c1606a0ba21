"""KTransformers with short host RAM: the release's other CPU-expert methods as a smaller host copy."""

from __future__ import annotations

import shlex

from typer.testing import CliRunner

from inferplan.inputs.deployment import Deployment
from inferplan.memory.fit import fit
from inferplan.memory.suggest import fit_or_suggest
from inferplan.shells.cli import app

# DeepSeek-R1's FP8 CPU experts overfill 512 GiB of host RAM; AMXINT4's converted copy does not
SHORT = dict(model="deepseek-r1", gpu="rtx-4090", engine="ktransformers", host_memory_gb=512)


def test_a_smaller_cpu_expert_method_is_suggested_with_the_longest_context_it_holds(catalog):
    d = Deployment(**SHORT)
    r = fit_or_suggest(d, catalog)
    assert not r.fits and r.host_shortfall_bytes > 0 and r.offload_note is None
    s = next(s for s in r.suggestions if s.kind == "kt_method")
    assert s.changes["kt_method"] == "AMXINT4" and 0 < s.changes["max_model_len"] < r.max_model_len
    there = fit(d.model_copy(update=s.changes), catalog)
    assert there.fits and there.host_memory_bytes_used < r.host_memory_bytes_used
    assert not fit(d.model_copy(update={**s.changes, "max_model_len": s.changes["max_model_len"] + 1024}), catalog).fits


def test_the_kt_method_command_fit_prints_fits_when_re_run():
    runner = CliRunner()
    args = ["fit", "--model", "deepseek-r1", "--gpu", "RTX 4090", "--engine", "ktransformers", "--host-memory-gb", "512"]
    out = runner.invoke(app, args).output
    assert "nothing tried fits" not in out
    line = next(x.strip() for x in out.splitlines() if x.strip().startswith("inferplan fit") and "--kt-method AMXINT4" in x)
    again = runner.invoke(app, shlex.split(line)[1:])
    assert again.exit_code == 0 and "does not fit" not in again.output and "fits" in again.output


def test_the_note_that_nothing_fits_comes_when_no_method_holds_the_experts(catalog):
    r = fit_or_suggest(Deployment(**{**SHORT, "host_memory_gb": 128}), catalog)  # AMXINT4's copy is over 300 GiB
    assert not any(s.kind == "kt_method" for s in r.suggestions)
    assert r.offload_note is not None and "nothing tried fits" in r.offload_note
