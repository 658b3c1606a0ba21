"""The third field memory set (measurements/memory_field_more.yaml) and the size of the whole field
set (memory_field*.yaml): its declared held-out split, that every field file is loaded, and the GPU
kinds and record count issue #25 asks of it."""

from pathlib import Path

import yaml

from inferplan.catalog.loader import DATA_DIR

MEASUREMENTS = Path(DATA_DIR) / "measurements"
MORE = MEASUREMENTS / "memory_field_more.yaml"
# the field files the set is made of; a file missing here or on disk fails the count below
FIELD_FILES = ("memory_field.yaml", "memory_field_datacenter.yaml", "memory_field_more.yaml", "memory_field_2026.yaml",
               "memory_field_hybrid.yaml")
TARGET_RECORDS, TARGET_GPU_KINDS = 60, 12  # issue #25, item 1


def _listed(name):
    return yaml.safe_load((MEASUREMENTS / name).read_text())["memory_points"]


def test_the_held_out_split_follows_the_rule_declared_in_the_file():
    points = _listed(MORE.name)
    assert len(points) >= 4
    # rule in the header: in listing order the 2nd, 4th, 6th … record is held out
    assert [p["split"] for p in points] == ["development" if i % 2 == 0 else "holdout" for i in range(len(points))]


def test_every_field_file_is_loaded(catalog):
    loaded = {p.id: p for p in catalog.memory_points if p.split != "calibration"}
    for name in FIELD_FILES:
        ids = {p["id"] for p in _listed(name)}
        assert ids and ids <= set(loaded), f"{name}: records not loaded: {sorted(ids - set(loaded))}"
    assert sum(len(_listed(n)) for n in FIELD_FILES) <= len(loaded)


def test_the_field_set_spans_twelve_gpu_kinds(catalog):
    kinds = {p.accelerator for p in catalog.memory_points if p.split != "calibration"}
    assert len(kinds) >= TARGET_GPU_KINDS, sorted(kinds)


def test_the_field_set_holds_sixty_records(catalog):
    assert sum(p.split != "calibration" for p in catalog.memory_points) >= TARGET_RECORDS
