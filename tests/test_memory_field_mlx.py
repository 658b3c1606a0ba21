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
