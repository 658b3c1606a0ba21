"""The datacenter field memory set (measurements/memory_field_datacenter.yaml): its declared
held-out split, and that the loaded field set spans the GPU kinds those records add."""

from collections import Counter
from pathlib import Path

import yaml

from inferplan.catalog.loader import DATA_DIR

DATACENTER = Path(DATA_DIR) / "measurements" / "memory_field_datacenter.yaml"

# field records per GPU kind that memory_field_datacenter.yaml contributes (memory_field.yaml
# holds RTX 3090, L4, A100 80GB and H100 records only)
DATACENTER_KINDS = {
    "a10": 2, "a100-40gb": 1, "b200": 2, "gh200": 1, "h200-sxm": 2, "h20": 2,
    "mi300x": 1, "mi325x": 1, "mi355x": 2, "gb10": 1, "rtx-5090": 1,
}


def test_the_held_out_split_follows_the_rule_declared_in_the_file():
    points = yaml.safe_load(DATACENTER.read_text())["memory_points"]
    assert len(points) >= 20
    # rule in the header: in listing order the 2nd, 4th, 6th … record is held out
    assert [p["split"] for p in points] == ["development" if i % 2 == 0 else "holdout" for i in range(len(points))]


def test_the_loaded_field_set_spans_the_datacenter_gpu_kinds(catalog):
    field = Counter(p.accelerator for p in catalog.memory_points if p.split != "calibration")
    short = {kind: (field[kind], need) for kind, need in DATACENTER_KINDS.items() if field[kind] < need}
    assert not short, f"field records per GPU kind (have, need): {short}"
    assert sum(field[k] > 0 for k in DATACENTER_KINDS) >= 7
    engines = Counter(p.engine for p in catalog.memory_points if p.split != "calibration")
    assert engines["sglang"] >= 5 and engines["trtllm"] >= 3


def test_the_large_tp_v0_records_are_scored_with_the_release_rule_and_nvls_buffers(catalog):
    """d20 and d24 (Llama-3.1-405B at TP 8 on Hopper NVSwitch, vLLM V0) both print a KV pool; the
    planner scores them with the 0.4.1-0.6.3 rule and its NVLS buffers, untuned: both stay high."""
    from inferplan.validation.memory import check_point

    wanted = {"d20-llama31-405b-fp8-tp8-h100-128k-fails", "d24-llama31-405b-bf16-tp8-h200-nvls"}
    checks = {p.id: check_point(p, catalog) for p in catalog.memory_points if p.id in wanted}
    for record in ("d20-llama31-405b-fp8-tp8-h100-128k-fails", "d24-llama31-405b-bf16-tp8-h200-nvls"):
        check = checks[record]
        assert check.split == "holdout"
        assert check.memory_rule.startswith("vLLM 0.4.1-0.6.3")
        assert check.kv_error is not None and check.kv_error > 0.1
    assert checks["d24-llama31-405b-bf16-tp8-h200-nvls"].measured_kv_bytes == 17595 * 1032192
