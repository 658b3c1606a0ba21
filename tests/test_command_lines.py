"""A long launch line broken with shell continuations reads within the width and runs as the same command."""

from __future__ import annotations

import subprocess

import pytest

from inferplan.shells.command_lines import continued, script_lines

LONG = ("CUDA_VISIBLE_DEVICES=0,1,2,3 python3 -m sglang.launch_server --model-path nvidia/Qwen3-235B-A22B-FP8 "
        "--tp-size 4 --enable-dp-attention --chat-template 'a b  c' --json-model-override-args "
        "'{\"rope_scaling\": {\"type\": \"yarn\"}}' --host 0.0.0.0 --port 30000")


@pytest.mark.parametrize("width", [40, 60, 80])
def test_a_broken_line_runs_as_the_line_it_was(width):
    line = "printf '[%s]\\n' " + LONG
    lines = continued(line, width)
    assert len(lines) > 1 and all(part.endswith(" \\") for part in lines[:-1])
    # a part runs past the width only where it is one flag and its value, which no break parts
    assert all(len(part) <= width or part.strip(" \\").count(" --") == 0 for part in lines)
    run = lambda script: subprocess.run(["bash", "-c", script], capture_output=True, text=True, check=True).stdout  # noqa: E731
    assert run("\n".join(lines)) == run(line)


def test_a_flag_keeps_its_value_on_its_line():
    lines = continued(LONG, 60)
    assert any("--port 30000" in part for part in lines) and any("--tp-size 4" in part for part in lines)


@pytest.mark.parametrize("line", ["# on HOST0 (10.0.0.1): " + "x " * 60, "short command", "echo 'unbalanced " + "y " * 50])
def test_comments_short_lines_and_unbalanced_quotes_stay_whole(line):
    assert continued(line, 60) == [line]


def _bash(script: str, cwd) -> str:
    return subprocess.run(["bash", "-c", script], capture_output=True, text=True, check=True, cwd=cwd).stdout


def test_a_here_documents_body_is_written_as_typed(tmp_path):
    script = ("cat > opts.yaml <<'EOF'\n"
              "speculative_config: method=eagle3 model=some/very-long-draft-model-name-here num_speculative_tokens=3\n"
              "EOF\n"
              "trtllm-serve some/model --extra_llm_api_options opts.yaml --max_batch_size 64 --host 0.0.0.0 --port 8000")
    lines = list(script_lines(script, 50))
    assert lines[1] == script.splitlines()[1] and len(lines) > 4  # the body whole, the serve line broken
    assert _bash("\n".join(lines) + " --help >/dev/null 2>&1; cat opts.yaml", tmp_path) == \
        _bash(script + " --help >/dev/null 2>&1; cat opts.yaml", tmp_path)


def test_a_trailing_comment_is_not_broken_into_a_command(tmp_path):
    line = "echo a b c d e f g h  # a trailing comment long enough to wrap; touch HACKED"
    lines = continued(line, 30)
    _bash("\n".join(lines), tmp_path)
    assert not (tmp_path / "HACKED").exists() and lines[-1].endswith("touch HACKED")


def test_an_escaped_space_stays_inside_its_word(tmp_path):
    line = "printf '[%s]' " + "word " * 12 + r"/tmp/a\ b"
    assert _bash("\n".join(continued(line, 30)), tmp_path) == _bash(line, tmp_path)


def test_a_long_line_with_an_unbalanced_quote_stays_whole():
    line = "PARAMETER stop <|im_end|> " + "x " * 40 + "a" * 40 + "'"
    assert continued(line, 60) == [line]
