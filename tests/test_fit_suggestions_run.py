"""Every command `fit` prints under "To fit, run one of:" runs as printed: a field the suggestion changes
or the user stated is written even where it holds the field's default, which the CLI's own default may not be
(llama.cpp on Apple)."""

from __future__ import annotations

import shlex

import pytest
from typer.testing import CliRunner

from inferplan.shells.cli import app

NOT_FITTING = {
    "Apple, default engine": ["fit", "llama-3.3-70b", "--gpu", "M3 Ultra 96GB"],
    "Apple, llama.cpp": ["fit", "llama-3.3-70b", "--gpu", "M4 Pro 64GB", "--engine", "llamacpp"],
    "Apple, vLLM": ["fit", "llama-3.3-70b", "--gpu", "M4 Max 64GB", "--engine", "vllm"],
    "Apple, MLX": ["fit", "llama-3.3-70b", "--gpu", "M4 Pro 64GB", "--engine", "mlx"],
    "CUDA, vLLM": ["fit", "qwen3-32b", "--gpu", "RTX 4090"],
    "CUDA, SGLang, MoE": ["fit", "qwen3-30b-a3b", "--gpu", "RTX 4090", "--engine", "sglang"],
    "CUDA, llama.cpp": ["fit", "llama-3.3-70b", "--gpu", "RTX 4090", "--engine", "llamacpp"],
}


def _suggested(argv: list[str]) -> list[list[str]]:
    shown = CliRunner().invoke(app, argv)
    assert shown.exit_code == 1 and "To fit, run one of:" in shown.stdout, shown.stdout
    lines = shown.stdout.splitlines()
    return [shlex.split(line)[1:] for line in lines[lines.index("To fit, run one of:") + 1:]
            if line.strip().startswith("inferplan fit ")]


@pytest.mark.parametrize("case", NOT_FITTING)
def test_every_suggested_fit_command_runs_as_printed(case):
    commands = _suggested(NOT_FITTING[case])
    assert commands
    for argv in commands:
        ran = CliRunner().invoke(app, argv)
        assert ran.exit_code == 0, (argv, ran.stdout, ran.stderr)


def test_a_build_a_suggestion_calls_a_published_file_is_one_deploy_serves_by_its_repo():
    """vLLM on a Mac (vllm-metal) loads mlx-community's builds: deploy names the repo fit's suggestion calls
    published, not a placeholder."""
    shown = CliRunner().invoke(app, NOT_FITTING["Apple, default engine"])
    lines = shown.stdout.splitlines()
    start = lines.index("To fit, run one of:") + 1
    published = [shlex.split(line)[1:] for i, line in enumerate(lines[start:], start)
                 if line.strip().startswith("inferplan fit ") and "a published file" in " ".join(lines[start:i][-4:])]
    vllm = [argv for argv in published if argv[argv.index("--engine") + 1] == "vllm"]
    assert vllm, shown.stdout
    for argv in vllm:
        ran = CliRunner().invoke(app, ["deploy", *argv[1:]])
        assert ran.exit_code == 0 and "names no" not in ran.stderr + ran.stdout, (argv, ran.stdout, ran.stderr)
        assert "mlx-community/Llama-3.3-70B-Instruct-4bit" in ran.stdout
