"""An Ollama tag's build planned where llama-server's --fit places its weights (memory/fit_placement.py): Ollama
states no --n-gpu-layers, so --fit keeps everything on the GPU where that leaves its margin (ollama.yaml
``placement``) free, else moves layers, or a mixture of experts' experts, to host RAM. A stated placement wins."""

from __future__ import annotations

from fastapi.testclient import TestClient

from inferplan.catalog.loader import load_catalog
from inferplan.inputs.deployment import Deployment
from inferplan.inputs.workload import Workload
from inferplan.memory.fit import fit
from inferplan.memory.hardware import with_default_engine
from inferplan.memory.slots import SLOT_LIMIT, most_slots
from inferplan.memory.suggest import fit_or_suggest
from inferplan.performance.serving import estimate
from inferplan.shells.api import create_app

from catalog_edits import with_record

CATALOG = load_catalog()
RULE = CATALOG.ollama_runners.records["ollama"].placement
QWEN3_32B_LAYERS = 64


def test_a_tag_too_large_for_the_gpu_whole_fits_with_the_split_fit_chooses():
    r = fit_or_suggest(Deployment(model="qwen3:32b", gpu="rtx-4090"), CATALOG)
    assert r.fits and r.placement_chosen_by == RULE.chosen_by == "llama-server --fit" and r.n_cpu_moe is None
    assert 0 < r.n_gpu_layers <= QWEN3_32B_LAYERS
    assert "Ollama (llama-server --fit) places the weights as -ngl" in r.placement_note
    assert "with the layers where llama-server --fit places them" in r.build_note
    assert r.host_memory_origin == "unstated" and "check the machine has it" in r.placement_note


def test_the_split_is_the_most_layers_that_keep_the_margin_free():
    n = fit(Deployment(model="qwen3:32b", gpu="rtx-4090"), CATALOG).n_gpu_layers
    margin_gb = RULE.margin_bytes.value / 2**30

    def fits(layers: int, other_gb: float) -> bool:
        return fit(Deployment(model="qwen3:32b", gpu="rtx-4090", n_gpu_layers=layers, host_memory_gb=64,
                              other_gpu_memory_gb=other_gb), CATALOG).fits
    assert fits(n, margin_gb) and not fits(n + 1, margin_gb)
    assert fits(n + 1, 0.0)  # without the margin one more layer would fit: the margin is what set the split


def test_the_margin_is_the_rules_data():
    d = Deployment(model="qwen3:32b", gpu="rtx-4090")
    none_kept = RULE.model_copy(update={"margin_bytes": RULE.margin_bytes.model_copy(update={"value": 0.0})})
    unwired = with_record(CATALOG, "ollama_runners", "ollama", placement=none_kept)
    assert fit(d, unwired).n_gpu_layers > fit(d, CATALOG).n_gpu_layers


def test_a_tag_that_fits_whole_keeps_every_layer_on_the_gpu():
    r = fit(Deployment(model="qwen3:8b", gpu="rtx-4090"), CATALOG)
    assert r.fits and r.n_gpu_layers is None and r.n_cpu_moe is None and r.placement_chosen_by == "llama-server --fit"
    assert r.host_memory_bytes_used == 0 and "keeps every layer on the GPU" in r.placement_note


def test_a_mixture_of_experts_keeps_the_experts_of_the_fewest_layers_in_host_ram():
    r = fit(Deployment(model="gpt-oss:120b", gpu="rtx-4090", host_memory_gb=128), CATALOG)
    assert r.fits and r.n_gpu_layers is None and r.n_cpu_moe and r.placement_chosen_by == "llama-server --fit"
    one_fewer = Deployment(model="gpt-oss:120b", gpu="rtx-4090", host_memory_gb=128, n_cpu_moe=r.n_cpu_moe - 1,
                           other_gpu_memory_gb=RULE.margin_bytes.value / 2**30)
    assert not fit(one_fewer, CATALOG).fits


def test_a_stated_placement_wins():
    r = fit(Deployment(model="qwen3:32b", gpu="rtx-4090", n_gpu_layers=40, host_memory_gb=64), CATALOG)
    assert r.placement_chosen_by is None and r.n_gpu_layers is None and r.placement_note is None
    assert "-ngl 40: 39 of 64 layers" in " ".join(r.assumptions) and "with the layers stated on the GPU" in r.build_note


def test_too_little_host_ram_for_any_split_does_not_fit_and_offers_what_does():
    r = fit_or_suggest(Deployment(model="qwen3:32b", gpu="rtx-4090", host_memory_gb=4), CATALOG)
    assert not r.fits and r.placement_chosen_by is None and r.n_gpu_layers is None and r.suggestions


def test_perf_prices_the_split_as_a_stated_one():
    placed = estimate(Deployment(model="qwen3:32b", gpu="rtx-4090", host_memory_gb=64), Workload(), CATALOG)
    n = placed.n_gpu_layers
    stated = estimate(Deployment(model="qwen3:32b", gpu="rtx-4090", host_memory_gb=64, n_gpu_layers=n), Workload(), CATALOG)
    assert placed.placement_chosen_by == "llama-server --fit" and stated.placement_chosen_by is None
    assert placed.tpot_s == stated.tpot_s and placed.ttft_s == stated.ttft_s


def test_the_split_chosen_on_unknown_host_ram_gets_the_same_answer_stated_back():
    """Host RAM unknown: the split --fit chooses is priced with what it needs said, and so is the same -ngl stated."""
    placed = estimate(Deployment(model="qwen3:32b", gpu="rtx-4090"), Workload(), CATALOG)
    n = placed.n_gpu_layers
    stated = estimate(Deployment(model="qwen3:32b", gpu="rtx-4090", n_gpu_layers=n), Workload(), CATALOG)
    assert placed.placement_chosen_by == "llama-server --fit" and stated.placement_chosen_by is None
    assert placed.tpot_s == stated.tpot_s and placed.ttft_s == stated.ttft_s
    said = fit(Deployment(model="qwen3:32b", gpu="rtx-4090", n_gpu_layers=n), CATALOG)
    assert said.fits and said.host_memory_origin == "unstated" and said.host_memory_budget_bytes is None
    assert any("host memory:" in a and "not stated (host_memory_gb)" in a for a in said.assumptions)
    client = TestClient(create_app())
    chosen = client.post("/api/perf", json={"deployment": {"model": "qwen3:32b", "gpu": "rtx-4090"}}).json()
    p = client.post("/api/perf", json={"deployment": {"model": "qwen3:32b", "gpu": "rtx-4090", "n_gpu_layers": n}})
    assert p.status_code == 200 and p.json()["tpot_s"] == chosen["tpot_s"] and chosen["n_gpu_layers"] == n


def test_the_api_answers_with_the_placement_chosen():
    client = TestClient(create_app())
    r = client.post("/api/fit", json={"model": "qwen3:32b", "gpu": "rtx-4090"}).json()
    assert r["fits"] and r["placement_chosen_by"] == "llama-server --fit" and r["n_gpu_layers"] > 0
    p = client.post("/api/perf", json={"deployment": {"model": "qwen3:32b", "gpu": "rtx-4090"}}).json()
    assert p["placement_chosen_by"] == "llama-server --fit" and p["n_gpu_layers"] == r["n_gpu_layers"]


def test_the_slots_offered_keep_the_placement_fit_chose():
    # --fit keeps its margin at whatever -np Ollama starts it with: the most slots offered are the most at which it
    # still keeps every layer (every expert) on the GPU, and one more moves weights to host RAM
    for tag in ("qwen3:8b", "gpt-oss:20b"):
        most = most_slots(with_default_engine(Deployment(model=tag, gpu="t4"), CATALOG), CATALOG, SLOT_LIMIT)
        at_most = fit(Deployment(model=tag, gpu="t4", max_num_seqs=most), CATALOG)
        beyond = fit(Deployment(model=tag, gpu="t4", max_num_seqs=most + 1), CATALOG)
        assert at_most.n_gpu_layers is None and at_most.n_cpu_moe is None, tag
        assert beyond.n_gpu_layers is not None or beyond.n_cpu_moe is not None, tag


def test_the_kv_room_of_a_placed_tag_leaves_the_margin_free():
    placed = fit(Deployment(model="qwen3:32b", gpu="rtx-4090", host_memory_gb=64), CATALOG)
    stated = fit(Deployment(model="qwen3:32b", gpu="rtx-4090", host_memory_gb=64, n_gpu_layers=placed.n_gpu_layers,
                            other_gpu_memory_gb=RULE.margin_bytes.value / 2**30), CATALOG)
    assert placed.kv_cache_bytes_per_gpu == stated.kv_cache_bytes_per_gpu
    assert placed.kv_cache_tokens == stated.kv_cache_tokens
    assert any("llama-server --fit keeps 1.00 GiB of each GPU free" in a for a in placed.assumptions)
