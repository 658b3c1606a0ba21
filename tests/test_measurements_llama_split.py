"""A llama.cpp run stated only by its GPU count ran llama.cpp's default layer split (a pipeline stage per GPU, said
in the run's note); a run refused for its split or its model names the flags that state them."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from inferplan.errors import InvalidScenarioError
from inferplan.measurements.records import RunProvenance, read_runs
from inferplan.shells.cli import app

DATA = Path(__file__).parent / "data" / "measurements"
LB = DATA / "llama_bench.md"
SEVENTY_B = RunProvenance(model="llama-3.3-70b", gpu="rtx-3090", gpus=2, quantization="q4_k_m")


def test_a_llama_cpp_run_on_gpus_alone_is_a_pipeline_stage_per_gpu(catalog):
    (run,) = read_runs(catalog, [(LB.name, LB.read_bytes())], SEVENTY_B)
    assert (run.tensor_parallel_size, run.pipeline_parallel_size, run.gpus) == (1, 2, 2)
    assert "pipeline parallel 2: no split stated" in run.note


@pytest.mark.parametrize(("stated", "split"), [({"pipeline_parallel_size": 1, "model": "llama-3.1-8b", "quantization": "q4_0"}, (1, 1)),
                                               ({"tensor_parallel_size": 2}, (2, 1))])
def test_a_stated_split_wins(catalog, stated, split):
    (run,) = read_runs(catalog, [(LB.name, LB.read_bytes())], SEVENTY_B.model_copy(update=stated))
    assert (run.tensor_parallel_size, run.pipeline_parallel_size) == split and "no split stated" not in run.note


def test_a_tensor_splitting_engine_on_gpus_alone_keeps_one_stage(catalog):
    f = DATA / "vllm_bench_serve_c8.json"
    (run,) = read_runs(catalog, [(f.name, f.read_bytes())], RunProvenance(model="llama-3.1-8b", gpu="h100", gpus=2))
    assert run.pipeline_parallel_size == 1 and not run.note


def _import(tmp_path, *args):
    return CliRunner().invoke(app, ["measurements", "import", str(LB), "--gpu", "RTX 3090", "--gpus", "2", *args,
                                    "--db", str(tmp_path / "m.db")], prog_name="inferplan")


def test_a_split_that_cannot_hold_the_weights_names_the_split_flags(tmp_path):
    done = _import(tmp_path, "--model", "llama-3.3-70b", "-q", "q4_k_m", "-pp", "1")
    assert done.exit_code == 2
    assert "state the split it ran with (--tensor-parallel-size, --pipeline-parallel-size) and its --quantization" in done.stderr


def test_a_file_model_the_catalogue_lacks_names_the_model_flag(tmp_path):
    path = tmp_path / "lb.md"
    path.write_text(LB.read_text().replace("llama 8B Q4_0       ", "llama 70000B Q4_0   "))
    done = CliRunner().invoke(app, ["measurements", "import", str(path), "--gpu", "RTX 3090", "--db",
                                    str(tmp_path / "m.db")], prog_name="inferplan")
    assert done.exit_code == 2 and "state the one the run served as --model" in done.stderr, done.stderr


def _with_split(split: str) -> tuple[str, bytes]:
    text = (DATA / "llama_bench.json").read_text().replace('"split_mode": "layer"', f'"split_mode": "{split}"')
    return f"lb_{split}.json", text.encode()


EIGHT_B = RunProvenance(model="llama-3.1-8b", gpu="rtx-4090", gpus=2)


def test_the_files_layer_split_is_a_stage_per_gpu(catalog):
    (run,) = read_runs(catalog, [_with_split("layer")], EIGHT_B)
    assert (run.tensor_parallel_size, run.pipeline_parallel_size) == (1, 2) and "split_mode is layer" in run.note


@pytest.mark.parametrize("split", ["none", "row", "tensor"])
def test_a_file_split_other_than_layer_on_several_gpus_is_refused_naming_it(catalog, split):
    with pytest.raises(InvalidScenarioError) as e:
        read_runs(catalog, [_with_split(split)], EIGHT_B)
    assert e.value.field == "split_mode" and split in str(e.value)


@pytest.mark.parametrize(("split", "stated", "layout"), [("none", {"gpus": 1}, (1, 1, 1)),
                                                         ("row", {"tensor_parallel_size": 2}, (2, 1, 2))])
def test_a_file_split_with_a_layout_it_allows_is_read(catalog, split, stated, layout):
    (run,) = read_runs(catalog, [_with_split(split)], EIGHT_B.model_copy(update=stated))
    assert (run.tensor_parallel_size, run.pipeline_parallel_size, run.gpus) == layout and "split" not in run.note


def test_the_markdown_tables_sm_column_is_read(tmp_path):
    path = tmp_path / "lb.md"
    lines = LB.read_text().splitlines()
    lines[0], lines[1] = lines[0] + " sm |", lines[1] + " -: |"
    path.write_text("\n".join(line + " none |" if line.startswith("|") and i > 1 else line
                              for i, line in enumerate(lines)) + "\n")
    done = CliRunner().invoke(app, ["measurements", "import", str(path), "--gpu", "RTX 3090", "--gpus", "2", "--model", "llama-3.1-8b",
                                    "--db", str(tmp_path / "m.db")], prog_name="inferplan")
    assert done.exit_code == 2 and "split_mode is none" in done.stderr, done.stderr
