"""An engine's default memory fraction on an accelerator whose record carries the memory its cap is
read from (engines.yaml ``memory_fraction_of_reported``): MLX on an Apple GPU takes all of Metal's working
set, measured or by the Mac's size (metal_working_set.yaml), not a share of it again."""

from __future__ import annotations

from inferplan.catalog.loader import load_catalog
from inferplan.inputs.deployment import Deployment
from inferplan.memory.engine_budget import device_total_bytes
from inferplan.memory.fit import plan_memory
from inferplan.memory.settings import engine_settings

CATALOG = load_catalog()
MLX = CATALOG.engine("mlx")


def _fraction(gpu: str, engine=MLX) -> float:
    accel = CATALOG.accelerator(gpu)
    total, _ = device_total_bytes(CATALOG, accel)
    return engine_settings(Deployment(model="llama-3.1-8b", gpu=gpu, engine="mlx"), engine, accel, total).memory_fraction


def test_mlx_takes_the_whole_working_set_measured_or_by_the_macs_size():
    assert CATALOG.accelerator("apple-m5-max").memory_reported_bytes is not None
    m4_max = CATALOG.accelerator("apple-m4-max")
    assert m4_max.memory_reported_bytes is None
    assert _fraction("apple-m5-max") == MLX.memory_fraction_of_reported.value == 1.0
    assert _fraction("apple-m4-max") == 1.0  # of the working set the Mac's size gives: 3/4 of 128 GiB
    assert device_total_bytes(CATALOG, m4_max, MLX)[0] == 0.75 * 128 * 2**30
    plan = plan_memory(Deployment(model="llama-3.1-8b", gpu="apple-m5-max", engine="mlx"), CATALOG)
    assert plan.settings.memory_fraction == 1.0


def test_the_fraction_is_read_from_the_engine_record():
    """Fails when the rule is code again: another value in the record is the value planned, and an
    engine without one keeps its own default on a reported total."""
    half = MLX.model_copy(update={"memory_fraction_of_reported": MLX.memory_fraction_of_reported.model_copy(
        update={"value": 0.5})})
    assert _fraction("apple-m5-max", half) == 0.5
    assert _fraction("apple-m5-max", MLX.model_copy(update={"memory_fraction_of_reported": None})) == 0.75
