"""The checkpoints a home user starts first are catalogue builds, so their launch commands name a
real repo instead of a placeholder for the user to fill in."""

from __future__ import annotations

import pytest

from inferplan.deploy import launch_command
from inferplan.inputs.deployment import Deployment


@pytest.mark.parametrize(("model", "gpu", "engine", "quant", "flag", "expected"), [
    ("qwen3-30b-a3b", "rtx-4090", "llamacpp", "q4_k_m", "--hf-repo", "Qwen/Qwen3-30B-A3B-GGUF:Q4_K_M"),
    ("qwen3-30b-a3b", "apple-m4-max", "mlx", "mlx-4bit", "--model", "mlx-community/Qwen3-30B-A3B-4bit"),
    ("llama-3.3-70b", "apple-m4-max", "mlx", "mlx-4bit", "--model", "mlx-community/Llama-3.3-70B-Instruct-4bit"),
])
def test_home_builds_launch_a_published_repo(catalog, model, gpu, engine, quant, flag, expected):
    cmd = launch_command(Deployment(model=model, gpu=gpu, engine=engine, quantization=quant), catalog)
    assert cmd.argv[cmd.argv.index(flag) + 1] == expected
    assert not any(a.startswith("<") for a in cmd.argv)  # no placeholder left to fill in
