"""A refused deployment names the cause with a shortfall above 0 (memory/refusal.py): the running-sequence
cap where llama.cpp allocates a whole context per slot at start-up, the context where the weights leave
room for a shorter one, the hardware where the weights themselves do not fit."""

from __future__ import annotations

import re

import pytest
from typer.testing import CliRunner

from inferplan.errors import InvalidScenarioError
from inferplan.deploy import launch_plan
from inferplan.inputs.deployment import Deployment
from inferplan.shells.cli import app

LLAMA_SLOTS = dict(model="llama-3.3-70b", system="tinybox-green-v2", engine="llamacpp", quantization="gguf-q4_k_m",
                   tensor_parallel_size=4, max_model_len=8192, max_num_seqs=200)


def _shortfall_gib(message: str) -> float:
    return float(re.search(r"short by (-?[\d.]+) GiB", message).group(1))


def test_too_many_llamacpp_slots_blame_max_num_seqs_with_a_positive_shortfall(catalog):
    with pytest.raises(InvalidScenarioError) as err:
        launch_plan(Deployment(**LLAMA_SLOTS), catalog)
    assert err.value.field == "max_num_seqs" and _shortfall_gib(str(err.value)) > 0
    held = int(re.search(r"at most ([\d,]+) sequences", err.value.allowed).group(1).replace(",", ""))
    assert 1 <= held < 200
    launch_plan(Deployment(**{**LLAMA_SLOTS, "max_num_seqs": held}), catalog)  # the cap it names starts


def test_a_context_the_weights_leave_no_room_for_blames_the_context_not_the_gpus(catalog):
    r = CliRunner().invoke(app, ["deploy", "--model", "qwen3-32b", "--gpu", "RTX 4090", "-q", "q4_k_m",
                                 "--engine", "llamacpp"])
    assert r.exit_code == 2 and r.stderr.startswith("error: --max-model-len:"), r.output
    assert _shortfall_gib(r.stderr) > 0
    longest = int(re.search(r"at most ([\d,]+) tokens", r.stderr).group(1).replace(",", ""))
    ok = CliRunner().invoke(app, ["deploy", "--model", "qwen3-32b", "--gpu", "RTX 4090", "-q", "q4_k_m",
                                  "--engine", "llamacpp", "--max-model-len", str(longest)])
    assert ok.exit_code == 0, ok.output  # the context it names starts


def test_weights_that_do_not_fit_still_blame_the_gpu_count(catalog):
    with pytest.raises(InvalidScenarioError) as err:
        launch_plan(Deployment(model="llama-3.1-70b", gpu="rtx-4090"), catalog)
    assert err.value.field == "gpus" and _shortfall_gib(str(err.value)) > 0


def test_a_refusal_names_the_weights_it_planned_and_whether_they_were_the_default():
    # MLX on an M4 Max plans Llama 3.3 70B in bf16 where no -q is given: the refusal says so, so the user
    # sees that a 4-bit build is the way in; a stated precision is named without "the default"
    default = CliRunner().invoke(app, ["perf", "--model", "llama-3.3-70b", "--gpu", "M4 Max 128GB", "--engine", "mlx"])
    assert default.exit_code == 2 and "llama-3.3-70b (bf16, the default) does not fit on 1×" in default.stderr
    stated = CliRunner().invoke(app, ["deploy", "--model", "llama-3.3-70b", "--gpu", "rtx-4090", "-q", "awq"])
    assert stated.exit_code == 2 and "llama-3.3-70b (int4-awq) does not fit on 1× rtx-4090" in stated.stderr
    assert "where the memory fit of the same deployment finds and lists the ones that hold it" in " ".join(stated.stderr.split())
