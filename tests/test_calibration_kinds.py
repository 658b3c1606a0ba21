"""Every calibration constant says what kind of number it is, and an assumed one what it rests on."""

import pytest
import yaml

from inferplan.catalog.loader import DATA_DIR, load_files
from inferplan.errors import CatalogError

def _load_one(tmp_path, constant: dict):
    good = yaml.safe_load((DATA_DIR / "calibration.yaml").read_text())
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump({"sources": good.get("sources", []), "calibration": [constant]}))
    return load_files([bad])


def _shipped(constant_id: str) -> dict:
    good = yaml.safe_load((DATA_DIR / "calibration.yaml").read_text())
    return next(c for c in good["calibration"] if c["id"] == constant_id)


def test_a_constant_without_a_kind_fails_to_load(tmp_path):
    constant = {k: v for k, v in _shipped("monte-carlo-power-draw-spread").items() if k != "kind"}
    with pytest.raises(CatalogError, match="kind"):
        _load_one(tmp_path, constant)


def test_an_assumed_constant_without_a_basis_fails_to_load(tmp_path):
    constant = {k: v for k, v in _shipped("monte-carlo-quote-spread").items() if k != "basis"}
    assert constant["kind"] == "assumed" and not constant.get("sources")
    with pytest.raises(CatalogError, match="assumed with no basis"):
        _load_one(tmp_path, constant)
    _load_one(tmp_path, dict(constant, sources=["seed001-rent-first"]))  # a source is a basis too


def test_a_constant_says_how_it_was_reached(catalog):
    """Solved against measurement points (one record or several, by bisection too): fitted; a header's
    constant taken as the driver's answer, or a value picked inside a published range: assumed; computed from
    a measured total: derived."""
    kinds = {c.id: c.kind for c in catalog.calibration}
    fitted = ("vllm-v02-non-torch-bytes-multi-gpu", "llamacpp-compute-activation-bytes-per-ubatch-hidden",
              "host-memory-expert-read-efficiency")
    assert [kinds[i] for i in fitted] == ["fitted"] * len(fitted)
    assert kinds["nccl-v220-nvls-multicast-granularity-bytes"] == kinds["allreduce-latency-s-nvlink"] == "assumed"
    assert kinds["driver-reserved-fraction"] == "derived"
