"""The mlx-lm field records (measurements/memory_field_mlx.yaml): their declared held-out split and
the allocator peak they printed."""

from pathlib import Path

import yaml

from inferplan.catalog.loader import DATA_DIR

FILE = Path(DATA_DIR) / "measurements" / "memory_field_mlx.yaml"


def test_the_held_out_split_follows_the_rule_declared_in_the_file():
    points = yaml.safe_load(FILE.read_text())["memory_points"]
    assert len(points) >= 4
    assert [p["split"] for p in points] == ["development" if i % 2 == 0 else "holdout" for i in range(len(points))]


def test_each_record_keeps_the_peak_mlx_lm_printed_in_decimal_gigabytes(catalog):
    points = {p.id: p for p in catalog.memory_points if p.engine == "mlx"}
    assert points["x03-mistral-7b-mlx4-m2ultra-34k-v0222"].measured.peak_bytes_per_gpu.value == 9.111e9
    assert all(p.measured.peak_bytes_per_gpu is not None for p in points.values())


def test_validate_memory_scores_the_printed_peak_against_the_planned_parts(catalog):
    from inferplan.memory.fit import fit
    from inferplan.validation.memory import deployment_for, validate_memory

    checks = {c.id: c for c in validate_memory(catalog).checks if c.engine == "mlx"}
    assert len(checks) >= 4 and all(c.peak_error is not None for c in checks.values())
    point = next(p for p in catalog.memory_points if p.id == "x03-mistral-7b-mlx4-m2ultra-34k-v0222")
    planned = fit(deployment_for(point), catalog)
    parts = planned.weights_bytes_per_gpu + planned.kv_cache_allocated_bytes_per_gpu + planned.activation_bytes_per_gpu
    check = checks[point.id]
    assert check.predicted_peak_bytes == parts
    assert check.peak_error == (parts - 9.111e9) / 9.111e9
    # the cache for the run's context is counted: 34048 cells (33998 tokens in steps of 256) x 128 KiB
    assert planned.kv_cache_allocated_bytes_per_gpu == 34048 * 128 * 1024


def test_records_without_a_printed_peak_have_no_peak_score(catalog):
    from inferplan.validation.memory import validate_memory

    assert all(c.peak_error is None for c in validate_memory(catalog).checks if c.engine != "mlx")


def test_validate_prints_each_printed_peak_with_its_plan(catalog):
    from rich.console import Console

    from inferplan.shells.render_validate import print_memory_validation
    from inferplan.validation.memory import validate_memory

    console = Console(record=True, width=200)
    print_memory_validation(console, validate_memory(catalog))
    text = console.export_text()
    assert "x03-mistral-7b-mlx4-m2ultra-34k-v0222: allocator peak 9.1 GB measured, 9.1 GB planned" in text
