"""What each GPU holds when weights go to host RAM, by hand from the models' configs: llama.cpp's -ngl over
two GPUs gives each GPU the KV cache of its own share of the GPU layers; vLLM's --cpu-offload-gb moves
decoder layers only, so the embeddings and lm_head stay on the GPU; and a launch refused for too long a
context names the same longest context as fit's suggestion."""

from __future__ import annotations

import pytest

from inferplan.deploy import launch_plan
from inferplan.errors import InvalidScenarioError
from inferplan.inputs.deployment import Deployment
from inferplan.memory.fit import fit
from inferplan.memory.suggest import fit_or_suggest

GIB = 2**30
# Qwen3-32B and Llama 3.x 70B: 8 KV heads of 128, K and V at 2 bytes: 4 KiB per layer per token
KV_PER_LAYER_TOKEN = 2 * 8 * 128 * 2
QWEN3_32B = dict(model="qwen3-32b", gpu="rtx-3090", engine="llamacpp", quantization="gguf-q4_k_m", host_memory_gb=64,
                 max_model_len=32768)
LLAMA_70B_Q4 = dict(model="llama-3.3-70b", gpu="rtx-3090", gpus=2, engine="llamacpp", quantization="gguf-q4_k_m")


@pytest.mark.parametrize("build, gpus, ngl, layers_on_fullest_gpu", [
    ("b7437", 1, 32, 32), ("b7437", 2, 32, 16), ("b7437", 2, 33, 17), ("b7437", 2, 9, 5),
    ("b7438", 1, 32, 31), ("b7438", 2, 32, 16), ("b7438", 2, 33, 17), ("b7438", 2, 9, 5), (None, 1, 32, 31)])
def test_each_gpu_holds_the_kv_cache_of_its_own_gpu_layers(build, gpus, ngl, layers_on_fullest_gpu):
    """64 layers, -ngl N: N slots from the end shared over the GPUs as evenly as they go (the odd one on the first).
    To b7437 all N are repeating layers; from b7438 (PR #18148) the last slot is the output layer, which has no
    KV cache: one GPU holds 31 layers' cache, and of two the first holds 16 (32 slots) or 17 (33 slots)."""
    r = fit(Deployment(**QWEN3_32B, gpus=gpus, n_gpu_layers=ngl, engine_version=build))
    assert r.kv_cache_allocated_bytes_per_gpu == layers_on_fullest_gpu * KV_PER_LAYER_TOKEN * 32768


def test_two_3090s_are_offered_the_most_layers_that_fit_on_llama_70b():
    """Per GPU at 131,072 tokens (the published 42.5 GB Q4_K_M file, the default build's order: the output layer
    first): -ngl 45 is the output layer and 44 layers, 23 on the first GPU and 21 beside the output layer on the
    second, so the fuller GPU holds 23 × 4 KiB × 131,072 of KV; -ngl 46 does not fit two 24 GB cards."""
    r = fit_or_suggest(Deployment(**LLAMA_70B_Q4))
    offload = next(s for s in r.suggestions if s.kind == "offload")
    assert offload.changes["n_gpu_layers"] == 45
    there = fit(Deployment(**LLAMA_70B_Q4, **offload.changes))
    assert there.fits
    assert there.kv_cache_allocated_bytes_per_gpu == 23 * KV_PER_LAYER_TOKEN * 131072
    assert not fit(Deployment(**LLAMA_70B_Q4, n_gpu_layers=46, host_memory_gb=64)).fits


@pytest.mark.parametrize("ngl, layers_on_fullest_gpu", [(32, 16), (33, 17)])
def test_each_gpu_holds_the_weights_of_its_own_gpu_layers(ngl, layers_on_fullest_gpu):
    """The same split for the weights: to b7437 a GPU holds its layers' weights, the output layer on the CPU."""
    one = fit(Deployment(**QWEN3_32B, gpus=1, n_gpu_layers=64, engine_version="b7437"))  # every layer, not the output
    two = fit(Deployment(**QWEN3_32B, gpus=2, n_gpu_layers=ngl, engine_version="b7437"))
    assert two.weights_bytes_per_gpu == pytest.approx(one.weights_bytes_per_gpu * layers_on_fullest_gpu / 64, rel=1e-9)


def test_the_output_layer_takes_the_last_gpu_slot_from_b7438():
    """-ngl 32 over two GPUs from PR #18148: 16 layers on the first, 15 and the output layer on the second, which
    is the fuller (Qwen3-32B's Q4_K_M output layer, 151,936 × 5,120 weights, outweighs a layer); -ngl 64 is 63
    layers and the output layer."""
    old = fit(Deployment(**QWEN3_32B, gpus=1, n_gpu_layers=64, engine_version="b7437"))  # 64 layers, no output
    layer = old.weights_bytes_per_gpu / 64
    every = fit(Deployment(**QWEN3_32B, gpus=1, n_gpu_layers=64, engine_version="b7438"))
    head = every.weights_bytes_per_gpu - 63 * layer
    q4 = 4.8944 / 8
    layer_at_bits = (5120 * (8192 + 2 * 1024) + 8192 * 5120 + 3 * 5120 * 25600) * q4 + (2 * 5120 + 2 * 128) * 2
    whole_at_bits = 64 * layer_at_bits + 2 * 151936 * 5120 * q4 + 5120 * 2  # embedding table and lm_head
    scale = 19_762_149_024 / whole_at_bits  # Qwen's own file: each part takes its share of the file's bytes
    assert head == pytest.approx(scale * (151936 * 5120 * q4 + 5120 * 2), rel=1e-3)
    two = fit(Deployment(**QWEN3_32B, gpus=2, n_gpu_layers=32, engine_version="b7438"))
    assert two.weights_bytes_per_gpu == pytest.approx(15 * layer + head, rel=1e-9)


def test_n_cpu_moe_frees_the_gpu_that_holds_those_layers_only():
    """gpt-oss-120b's 36 layers over two GPUs, 18 each: --n-cpu-moe 18 keeps the first GPU's experts in host
    RAM and leaves the second GPU, which holds layers 18 to 35 and the output layer, as full as without it."""
    base = dict(model="gpt-oss-120b", gpu="rtx-3090", gpus=2, engine="llamacpp", max_model_len=32768)
    whole = fit(Deployment(**base))
    moved = fit(Deployment(**base, n_cpu_moe=18, host_memory_gb=128))
    assert moved.weights_bytes_per_gpu == pytest.approx(whole.weights_bytes_per_gpu, rel=1e-9)
    assert not moved.fits


@pytest.mark.parametrize("model, hidden, gpus", [("llama-3.1-8b", 4096, 1), ("llama-3.3-70b", 8192, 2)])
def test_cpu_offload_gb_leaves_the_embeddings_and_lm_head_on_the_gpu(model, hidden, gpus):
    """Asking for more GiB than the weights: the GPU keeps embed_tokens and lm_head (untied, vocab 128,256,
    BF16), split over the tensor-parallel GPUs."""
    ends = 2 * 128256 * hidden * 2 / gpus
    r = fit(Deployment(model=model, gpu="rtx-3090", gpus=gpus, cpu_offload_gb=200, host_memory_gb=512))
    assert r.weights_bytes_per_gpu == pytest.approx(ends, rel=1e-9)


def test_the_suggested_cpu_offload_for_llama_70b_on_two_3090s_fits_when_run():
    """With 1.96 GiB of embeddings and lm_head left on each GPU, 131,072 tokens of KV cache (160 KiB a token on
    each of the two) do not fit: the suggestion comes with a shorter context, and fits as suggested."""
    d = Deployment(model="llama-3.3-70b", gpu="rtx-3090", gpus=2)
    offload = next(s for s in fit_or_suggest(d).suggestions if s.kind == "offload" and "engine" not in s.changes)
    assert "cpu_offload_gb" in offload.changes
    tokens = offload.changes["max_model_len"]
    ends_per_gpu = 128256 * 8192 * 2
    assert tokens * 80 * KV_PER_LAYER_TOKEN / 2 < 23.58 * GIB - ends_per_gpu
    assert fit(d.model_copy(update=offload.changes)).fits
    assert not fit(d.model_copy(update={**offload.changes, "max_model_len": 131072})).fits


def test_a_launch_refused_for_its_context_names_fits_longest_context():
    d = Deployment(**LLAMA_70B_Q4)
    longest = next(s for s in fit_or_suggest(d).suggestions if s.kind == "context").changes["max_model_len"]
    with pytest.raises(InvalidScenarioError) as err:
        launch_plan(d)
    assert err.value.field == "max_model_len"
    assert f"a context of at most {longest:,} tokens" in err.value.allowed
    assert fit(d.model_copy(update={"max_model_len": longest})).fits


def test_every_llamacpp_rule_states_its_gpu_layer_order_and_the_order_changes_at_b7438():
    from inferplan.catalog.loader import load_catalog
    from inferplan.catalog.memory_rules import memory_rule

    catalog = load_catalog()
    rules = [r for r in catalog.memory_rules if r.engine == "llamacpp"]
    assert rules and all(r.gpu_layer_order is not None and r.gpu_layer_order.sources for r in rules)
    assert memory_rule(catalog, "llamacpp", "b7437").gpu_layer_order.output_layer == "last"
    assert memory_rule(catalog, "llamacpp", "b7438").gpu_layer_order.output_layer == "first"
    assert memory_rule(catalog, "llamacpp").gpu_layer_order.output_layer == "first"
