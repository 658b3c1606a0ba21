"""What runs on N GPUs of one kind (performance/here.py what_runs_on), and its page view."""

import pytest

from inferplan.catalog.loader import load_catalog
from inferplan.memory.fit import fit
from inferplan.inputs.deployment import Deployment
from inferplan.performance.here import what_runs_on
from inferplan.report.homelab_view import homelab_view

CATALOG = load_catalog()


def test_a_model_runs_when_the_gpus_hold_it_and_more_gpus_never_run_fewer():
    one = what_runs_on("rtx-4090", 1, CATALOG, engine="vllm", quantizations=["int4-awq"])
    two = what_runs_on("rtx-4090", 2, CATALOG, engine="vllm", quantizations=["int4-awq"])
    ran_one = {m.model for m in one.models if m.fits}
    ran_two = {m.model for m in two.models if m.fits}
    assert ran_one <= ran_two and ran_two - ran_one
    for m in two.models:
        memory = fit(Deployment(model=m.model, gpu="rtx-4090", gpus=2, engine="vllm", quantization=m.quantization,
                                max_model_len=m.max_model_len), CATALOG)
        assert m.fits == memory.fits, m.model
        if m.fits and m.ttft_s is not None:
            assert m.output_tokens_per_s_per_user > 0


def test_the_rows_put_what_runs_first_fastest_first():
    r = what_runs_on("h100-sxm", 1, CATALOG)
    fits = [m.fits for m in r.models]
    assert fits == sorted(fits, reverse=True)
    speeds = [m.output_tokens_per_s_per_user for m in r.models if m.fits and m.output_tokens_per_s_per_user]
    assert speeds == sorted(speeds, reverse=True)
    view = homelab_view(r)
    assert view.rows[0].verdict == "runs" and view.rows[-1].verdict.startswith(("needs", "no layout"))


def test_the_api_names_an_unknown_gpu(tmp_path):
    from fastapi.testclient import TestClient

    from inferplan.shells.api import create_app

    r = TestClient(create_app(tmp_path / "h.db")).post("/api/views/homelab", json={"gpu": "RTX 9999", "gpus": 2})
    assert r.status_code == 422 and r.json()["error"]["field"] == "gpu"


def test_a_format_the_engine_does_not_load_is_refused_naming_quantization(tmp_path):
    from fastapi.testclient import TestClient

    from inferplan.shells.api import create_app

    client = TestClient(create_app(tmp_path / "h.db"))
    r = client.post("/api/views/homelab", json={"gpu": "RTX 4090", "gpus": 1, "engine": "vllm", "quantization": "q4_k_m"})
    assert r.status_code == 422 and r.json()["error"]["field"] == "quantization"
    assert "fp8" in r.json()["error"]["allowed"] and "gguf-q4_k_m" not in r.json()["error"]["allowed"]
    ok = client.post("/api/views/homelab", json={"gpu": "RTX 4090", "engine": "llama.cpp", "quantization": "q4_k_m"})
    assert ok.status_code == 200 and ok.json()["rows"]


@pytest.mark.parametrize("key", ["engine", "quantization", "gpu"])
def test_a_blank_name_is_refused_naming_its_key_not_read_as_the_default(tmp_path, key):
    from fastapi.testclient import TestClient

    from inferplan.shells.api import create_app

    r = TestClient(create_app(tmp_path / "h.db")).post("/api/views/homelab", json={"gpu": "RTX 4090", key: " "})
    assert r.status_code == 422 and r.json()["error"]["field"] == key
    assert "must not be empty" in r.json()["error"]["message"]
