"""Memory other processes hold past what the engine can start beside: the fit says none is usable,
and by how much it falls short, never a negative usable amount (library, CLI and API alike)."""

from fastapi.testclient import TestClient
from typer.testing import CliRunner

from inferplan.catalog.loader import load_catalog
from inferplan.inputs.deployment import Deployment
from inferplan.memory.fit import fit
from inferplan.shells.api import create_app
from inferplan.shells.cli import app

CROWDED = {"model": "llama-3.1-8b", "gpu": "h100", "other_gpu_memory_gb": 79}


def test_no_usable_memory_is_zero_with_the_shortfall():
    r = fit(Deployment(**CROWDED), load_catalog())
    assert not r.fits and r.usable_bytes_per_gpu == 0.0 and r.usable_short_bytes_per_gpu > 1e9
    room = fit(Deployment(model="llama-3.1-8b", gpu="h100"), load_catalog())
    assert room.usable_bytes_per_gpu > 70e9 and room.usable_short_bytes_per_gpu == 0.0


def test_the_cli_and_the_api_show_no_negative_usable_memory(tmp_path):
    out = CliRunner().invoke(app, ["fit", "--model", "llama-3.1-8b", "--gpu", "h100", "--other-gpu-memory-gb", "79"],
                             env={"COLUMNS": "200"}).output
    assert "0.00 GiB usable by the engine (1.85 GiB short of any)" in out and "-1" not in out
    body = TestClient(create_app(tmp_path / "api.db")).post("/api/fit", json=CROWDED).json()
    assert body["usable_bytes_per_gpu"] == 0.0 and body["usable_short_bytes_per_gpu"] > 1e9
