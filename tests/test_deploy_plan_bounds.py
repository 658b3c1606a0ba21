"""A setting the engine's launcher takes no flag for that only bounds the plan (``plan_bounds`` in
engine_flags.yaml: mlx_lm.server's context, which each request bounds) is said in a note beside the command,
whether a search picked it or a user stated it as fit and perf took it."""

from __future__ import annotations

import pytest

from inferplan.deploy import launch_command, launch_plan
from inferplan.errors import UnsupportedSettingError
from inferplan.inputs.deployment import Deployment
from inferplan.search.request import SearchRequest
from inferplan.search.run import search

MLX = dict(model="qwen3-8b", gpu="M4 Max", engine="mlx", max_model_len=8192, max_num_seqs=8)


def test_every_mlx_search_pick_comes_with_a_launch_command(catalog):
    res = search(SearchRequest(models=("qwen3-8b",), engines=("mlx",), request_rate_per_s=0.2, input_len=2000,
                               output_len=400), catalog)
    assert res.results
    for pick in res.results:
        assert pick.deploy.startswith("mlx_lm.server "), pick.deploy
        assert any(note.startswith("max_model_len ") for note in pick.notes)


def test_a_plans_context_on_mlx_is_a_note_beside_the_command(catalog):
    command = launch_command(Deployment(**MLX), catalog)
    assert "--decode-concurrency" in command.argv and not any("ctx" in a or "len" in a for a in command.argv)
    assert any("max_model_len 8192" in note and "256-token" in note for note in command.notes)


def test_a_user_stating_a_context_mlx_takes_no_flag_for_gets_the_command_and_a_note(catalog):
    plan = launch_plan(Deployment(**MLX), catalog)
    assert not any("ctx" in a or "len" in a for a in plan.command.argv)
    assert any("max_model_len 8192" in n and "no context-limit flag" in n for n in plan.command.notes)


def test_a_plan_bound_cannot_hide_a_setting_the_launcher_refuses(catalog):
    with pytest.raises(UnsupportedSettingError) as err:  # not a plan bound: still refused from a plan
        launch_command(Deployment(**MLX, gpu_memory_utilization=0.8), catalog)
    assert err.value.field == "gpu_memory_utilization"
