"""The field memory set (measurements/memory_field.yaml): its declared held-out split, and how
``validate --memory`` scores it apart from the calibration records."""

from pathlib import Path

import pytest
import yaml

from inferplan.catalog.loader import DATA_DIR
from inferplan.validation.calibrate import activation_design, fit_runtime_overhead
from inferplan.validation.memory import MemoryCheck, summarise, validate_memory

GiB = 2**30
FIELD = Path(DATA_DIR) / "measurements" / "memory_field.yaml"
FIELD_FILES = sorted((Path(DATA_DIR) / "measurements").glob("memory_field*.yaml"))


def test_the_held_out_split_follows_the_rule_declared_in_the_file():
    points = yaml.safe_load(FIELD.read_text())["memory_points"]
    assert len(points) >= 8
    # rule in the header: in listing order the 2nd, 4th, 6th … record is held out
    assert [p["split"] for p in points] == ["development" if i % 2 == 0 else "holdout" for i in range(len(points))]


def test_field_records_are_scored_and_held_out_ones_never_fitted(catalog):
    v = validate_memory(catalog)
    field = [c for c in v.checks if c.split != "calibration"]
    assert len(field) == sum(len(yaml.safe_load(f.read_text())["memory_points"]) for f in FIELD_FILES)  # nothing dropped
    assert sum(s.points for s in v.by_engine_version) == v.field.points == sum(s.points for s in v.by_rule) == len(field)
    assert v.holdout.points == sum(c.split == "holdout" for c in field)
    ids, _, _ = activation_design(catalog)
    assert not {c.id for c in field} & set(ids)
    held_out = {c.id for c in field if c.split == "holdout"}
    assert not held_out & {p for c in catalog.calibration for p in c.fitted_on}
    # f03 logged 1.79 GiB of non-torch memory on one GPU: were it fitted, the single-GPU median would move
    single, _ = fit_runtime_overhead(catalog)
    assert single < 0.5 * GiB


def test_printed_log_values_are_read_in_gib(catalog):
    by_id = {c.id: c for c in validate_memory(catalog).checks}
    rtx = by_id["f01-llama31-8b-rtx3090-20k"]
    assert rtx.measured_weights_bytes == pytest.approx(14.9888 * GiB)
    assert rtx.measured_kv_bytes == pytest.approx(3.81 * GiB)
    # SGLang prints K and V separately: 8.23 + 8.23 GiB
    assert by_id["f05-qwen3-235b-fp8-tp4-h100-sglang"].measured_kv_bytes == pytest.approx(16.46 * GiB)
    # a point whose weights line was not published is scored on KV only
    vllm = by_id["f04-qwen3-235b-fp8-tp4-h100-vllm"]
    assert vllm.measured_weights_bytes is None and vllm.weights_error is None and vllm.kv_error is not None


def _check(kv_error, fits=True, predicted_fits=True, split="holdout"):
    return MemoryCheck(id="x", split=split, engine="vllm", engine_version="V1", accelerator="h100-sxm",
                       measured_weights_bytes=None, predicted_weights_bytes=None, weights_error=None,
                       measured_kv_bytes=1.0, predicted_kv_bytes=1.0, kv_error=kv_error, measured_fits=fits,
                       predicted_fits=predicted_fits, caveats=())


def test_summary_takes_absolute_errors_and_counts_refusals():
    s = summarise("t", [_check(-0.10), _check(0.02), _check(0.04, fits=False), _check(None, predicted_fits=None)])
    assert s.median_abs_kv_error == pytest.approx(0.04)
    assert s.worst_abs_kv_error == pytest.approx(0.10)
    assert s.fit_agreement == pytest.approx(2 / 3)  # the refused point is not a verdict
    assert s.refused == 1 and s.points == 4 and s.kv_points == 3
