"""The shape a decode pool's instance runs prices every prompt token as cached (the prefill pool hands the KV
cache over): the speed model prices it as the same hit rate stated, and words no prefix cache for it."""

from inferplan.economics.capacity import decode_pool_shape
from inferplan.inputs.deployment import Deployment
from inferplan.inputs.workload import Workload
from inferplan.performance.profiles import workload_differs
from inferplan.performance.serving import estimate

D = Deployment(model="qwen3-8b", gpu="h100-sxm", engine="vllm", quantization="bf16")


def test_a_decode_pool_shape_says_no_prefix_cache_and_prices_as_full_hits(catalog):
    w = Workload(input_len=2000, output_len=500, concurrency=8)
    pooled = decode_pool_shape(w)
    stated = w.model_copy(update={"prefix_cache_hit_rate": 1.0})
    assert pooled.prompt_from_prefill_pool and not stated.prompt_from_prefill_pool
    a, b = estimate(D, pooled, catalog, use_profiles=False), estimate(D, stated, catalog, use_profiles=False)
    assert (a.ttft_s, a.tpot_s, a.output_tokens_per_s_total) == (b.ttft_s, b.tpot_s, b.output_tokens_per_s_total)
    assert any(x.startswith("prefix cache: ") for x in b.assumptions)
    assert not any(x.startswith("prefix cache: ") for x in a.assumptions)
    assert pooled.model_copy(update={"concurrency": 4}).prompt_from_prefill_pool  # a sweep keeps the shape


def test_a_stored_run_skipped_for_a_decode_pool_says_the_prefill_pool_prefills_its_prompts(catalog):
    profile = next(iter(catalog.serving_profiles))
    w = Workload(input_len=profile.input_tokens, output_len=profile.output_tokens, concurrency=8,
                 speculative_tokens=0 if profile.speculative is None else 2)
    assert workload_differs(profile, w) == ""
    pooled = workload_differs(profile, decode_pool_shape(w))
    assert "decode pool's instance, whose prompts the prefill pool prefills" in pooled and "prefix cache" not in pooled
    stated = workload_differs(profile, w.model_copy(update={"prefix_cache_hit_rate": 1.0}))
    assert "planned with 100% of prompt tokens from the prefix cache" in stated and "prefill pool" not in stated
