"""A prompt step's activations and the runtime's memory against what SGLang leaves outside mem_fraction_static
(memory/step_headroom.py): its rule counts neither inside the fraction, so a step that needs more than the rest
fails after the pool is allocated. Before 0.2.13 a prompt runs whole, so the step holds the longest prompt and the
room outside the fraction bounds the context, as much as the KV pool does."""

from inferplan.inputs.deployment import Deployment
from inferplan.memory.fit import plan_memory
from inferplan.memory.suggest import longest_context
from inferplan.units import GiB

D = Deployment(model="llama-3.1-8b", gpu="rtx-4090", engine="sglang", engine_version="0.2.0", quantization="fp8")


def test_a_whole_prompt_step_past_the_room_outside_the_fraction_does_not_fit(catalog):
    r = plan_memory(D.model_copy(update={"max_model_len": 96768}), catalog).result
    assert r.kv_cache_tokens >= 96768  # the pool holds the context
    outside = r.gpu_memory_bytes - r.usable_bytes_per_gpu  # what the fraction leaves, CUDA context included
    assert r.activation_bytes_per_gpu + r.overhead_bytes_per_gpu > outside
    assert not r.fits and r.startup_shortfall_bytes_per_gpu > 3 * GiB and "step" in r.startup_note


def test_the_longest_context_offered_is_one_whose_step_fits(catalog):
    tokens = longest_context(D, catalog, 131072)
    assert 16384 < tokens < 50000  # the pool alone would hold 96,768
    assert plan_memory(D.model_copy(update={"max_model_len": tokens}), catalog).result.fits
    assert not plan_memory(D.model_copy(update={"max_model_len": tokens + 1024}), catalog).result.fits


def test_a_chunked_step_fits_where_the_release_chunks(catalog):
    r = plan_memory(D.model_copy(update={"engine_version": "0.4.6", "max_model_len": 96768}), catalog).result
    assert r.fits and not r.startup_shortfall_bytes_per_gpu
