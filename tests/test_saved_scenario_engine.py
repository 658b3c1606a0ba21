"""A scenario that leaves the engine out plans on its platform's own (llama.cpp on Apple silicon);
saved and read back, or returned by the API, it still leaves it out (economics/scenario.py)."""

import pytest
from fastapi.testclient import TestClient

from inferplan.economics.scenario import Scenario
from inferplan.shells.api import create_app


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    return TestClient(create_app(tmp_path_factory.mktemp("db") / "e.db"))


def test_a_dump_names_the_engine_only_when_the_scenario_does():
    platform = {"gpu": "apple-m4-max", "gpus": 1}
    assert "engine" not in Scenario(model="llama-3.3-70b", platform=platform).model_dump()
    assert Scenario(model="llama-3.3-70b", engine="vllm", platform=platform).model_dump()["engine"] == "vllm"


def test_a_saved_scenario_without_an_engine_loads_on_the_platforms_own(client):
    """Saved with the engine left out, a Mac's scenario came back naming vLLM, which loads no GGUF."""
    scenario = {"name": "mac", "model": "llama-3.3-70b", "quantization": "gguf-q4_k_m",
                "platform": {"gpu": "apple-m4-max-64gb", "gpus": 1, "quote_usd_per_system": 2700, "power_w_per_system": 300},
                "workload": {"preset": "chat-seat"}, "target_users": 5}
    saved = client.post("/api/scenarios", json={"name": "mac 64", "scenario": scenario, "replace": True})
    assert saved.status_code == 201, saved.text
    back = next(s for s in client.get("/api/scenarios").json() if s["name"] == "mac 64")["scenario"]
    assert "engine" not in back and back["platform"]["gpu"] == "apple-m4-max-64gb"
    replanned = client.post("/api/plan", json={"scenario": back, "draws": 0})
    assert replanned.status_code == 200, replanned.text
    assert "apple-m4-max-64gb" in replanned.json()["memory_summary"]
    named = client.post("/api/scenarios", json={"name": "mac sglang", "scenario": {**scenario, "engine": "llamacpp"},
                                                "replace": True}).json()
    assert named["scenario"]["engine"] == "llamacpp"  # a stated engine stays stated
