"""A run's layout survives export: the speed point states its GPUs, tensor and pipeline parallel sizes and expert
parallelism (data parallel = GPUs / (TP × PP)), and the point read back as a run's statements gives the same run."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from inferplan.catalog.points_schema import SpeedPoint
from inferplan.measurements.export import run_as_catalogue
from inferplan.measurements.records import RunProvenance, read_runs

DATA = Path(__file__).parent / "data" / "measurements"
LLAMA_3090 = RunProvenance(model="llama-3.3-70b", gpu="rtx-3090", engine="llamacpp", quantization="q4_k_m")
VLLM_H100 = RunProvenance(gpu="h100", engine="vllm", engine_version="0.11.0")
LAYOUTS = [  # (file, statements): each deployment field a speed point has, set away from its default
    ("llama_bench.md", LLAMA_3090.model_copy(update={"gpus": 2, "pipeline_parallel_size": 2})),
    ("vllm_bench_serve_c8.json", VLLM_H100.model_copy(update={"model": "llama-3.1-70b", "tensor_parallel_size": 2,
                                                              "pipeline_parallel_size": 2})),
    ("vllm_bench_serve_c8.json", VLLM_H100.model_copy(update={"model": "llama-3.1-8b", "gpus": 2,
                                                              "data_parallel_size": 2})),
    ("vllm_bench_serve_c8.json", VLLM_H100.model_copy(update={"model": "qwen3-30b-a3b", "gpus": 4, "data_parallel_size": 4,
                                                              "enable_expert_parallel": True})),
]


def _layout(run) -> tuple:
    dp = run.data_parallel_size or run.gpus // (run.tensor_parallel_size * run.pipeline_parallel_size)
    return run.gpus, run.tensor_parallel_size, run.pipeline_parallel_size, dp, run.enable_expert_parallel


@pytest.mark.parametrize(("name", "given"), LAYOUTS)
def test_export_then_import_keeps_every_deployment_field(catalog, name, given):
    (run,) = read_runs(catalog, [(name, (DATA / name).read_bytes())], given)
    data = yaml.safe_load(yaml.safe_dump(run_as_catalogue(run.model_copy(update={"id": 1}), catalog=catalog)))
    point = SpeedPoint.model_validate(data["speed_points"][0])
    again = RunProvenance(model=point.model, gpu=point.accelerator, engine=point.engine, quantization=point.quantization,
                          gpus=point.gpus, tensor_parallel_size=point.tensor_parallel_size,
                          pipeline_parallel_size=point.pipeline_parallel_size, enable_expert_parallel=point.expert_parallel)
    (back,) = read_runs(catalog, [(name, (DATA / name).read_bytes())], again)
    assert _layout(back) == _layout(run)


@pytest.mark.parametrize(("given", "shown"), [(LAYOUTS[0][1], "(TP 1 × PP 2)"), (LAYOUTS[3][1], "(TP 1 × DP 4, EP)")])
def test_the_list_shows_the_runs_layout(catalog, given, shown):
    from rich.console import Console

    from inferplan.shells.render_local import print_runs

    name = "llama_bench.md" if given.engine == "llamacpp" else "vllm_bench_serve_c8.json"
    (run,) = read_runs(catalog, [(name, (DATA / name).read_bytes())], given)
    console = Console(width=200, record=True)
    print_runs(console, [run.model_copy(update={"id": 1})])
    assert shown in console.export_text()
