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


def test_a_decode_pool_shape_holds_every_prompt_token_handed_over():
    import pytest
    from pydantic import ValidationError

    from inferplan.inputs.workload import DecodePoolWorkload
    for stated in ({}, {"prefix_cache_hit_rate": 0.5}):
        with pytest.raises(ValidationError, match="handed over as KV cache"):
            DecodePoolWorkload(**stated)
    # a prefill pool's shape, copied without its drafts, keeps the stated acceptance rate beside none
    w = Workload(speculative_tokens=2, acceptance_rate=0.8).model_copy(update={"speculative_tokens": 0})
    assert decode_pool_shape(w).prefix_cache_hit_rate == 1.0 and decode_pool_shape(w).acceptance_rate == 0.8


POOLED = {"model": "qwen3-8b", "gpu": "b200", "engine": "vllm"}


def test_a_pooled_simulation_with_drafts_and_a_stated_acceptance_rate_answers(tmp_path):
    import json

    from fastapi.testclient import TestClient
    from typer.testing import CliRunner

    from inferplan.shells.api import create_app
    from inferplan.shells.cli import app
    r = CliRunner().invoke(app, ["simulate", "--model", "qwen3-8b", "--gpu", "b200", "--engine", "vllm",
                                 "--speculative-tokens", "2", "--acceptance-rate", "0.8", "--input-len", "1000",
                                 "--output-len", "200", "--request-rate", "5", "--prefill-instances", "1",
                                 "--requests", "500", "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["simulation"]["requests"] == 500
    body = {"deployment": POOLED,
            "workload": {"input_len": 1000, "output_len": 200, "speculative_tokens": 2, "acceptance_rate": 0.8},
            "request_rate_per_s": 5, "prefill_instances": 1, "requests": 500}
    r = TestClient(create_app(tmp_path / "db.sqlite")).post("/api/simulate", json=body)
    assert r.status_code == 200, r.text
