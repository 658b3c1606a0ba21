"""Invariants of the memory model, checked over many generated deployments."""

import math

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from inferplan.catalog.engine_support import gpu_refusal
from inferplan.catalog.loader import load_catalog
from inferplan.inputs.deployment import Deployment
from inferplan.memory.fit import fit
from inferplan.memory.kv_cache import kv_layout
from inferplan.memory.resolve import resolve_model

CATALOG = load_catalog()
MODELS = sorted(m.id for m in CATALOG.models if m.config and resolve_model(CATALOG, m.id).architecture.num_layers < 100)
GPUS = ["h100-sxm", "h200-sxm", "b200", "rtx-4090", "rtx-pro-6000-blackwell", "mi300x", "l40s"]
QUANTS = ["bf16", "fp8", "nvfp4", "int4-awq"]
common = settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])

CONTEXT = {m: resolve_model(CATALOG, m).context_tokens or 131072 for m in MODELS}


def runs_there(model: str, gpu: str) -> bool:
    """Whether the default engine runs the model on the GPU at all (engine_support.yaml gpu_refusals): the
    invariants are about plans, not about a refusal."""
    arch = resolve_model(CATALOG, model).architecture.hf_architecture
    return gpu_refusal(CATALOG, "vllm", None, arch, CATALOG.accelerator(gpu)) is None


HEADS = {m: resolve_model(CATALOG, m).architecture.num_attention_heads for m in MODELS}
deployments = st.sampled_from(MODELS).flatmap(lambda model: st.builds(
    dict,
    model=st.just(model),
    gpu=st.sampled_from(GPUS),
    quantization=st.sampled_from(QUANTS),
    # up to half the model's context, so that doubling it (below) stays a length engines accept
    max_model_len=st.integers(min_value=256, max_value=max(256, min(131072, CONTEXT[model]) // 2)),
    # tensor-parallel sizes the model's attention heads split over (engines refuse the others)
    tensor_parallel_size=st.sampled_from([tp for tp in (1, 2, 4, 8) if HEADS[model] % tp == 0]),
    kv_cache_dtype=st.sampled_from(["auto", "fp8"]),
)).filter(lambda kw: runs_there(kw["model"], kw["gpu"]))


@common
@given(deployments, st.floats(min_value=0.3, max_value=0.95), st.floats(min_value=0.01, max_value=0.05))
def test_more_memory_never_fits_less(kw, util, more):
    low = fit(Deployment(**kw, gpu_memory_utilization=util), CATALOG)
    high = fit(Deployment(**kw, gpu_memory_utilization=util + more), CATALOG)
    assert high.kv_cache_bytes_per_gpu >= low.kv_cache_bytes_per_gpu
    assert high.kv_cache_tokens >= low.kv_cache_tokens
    assert high.max_concurrency >= low.max_concurrency
    assert high.fits or not low.fits


@common
@given(deployments)
def test_longer_context_never_raises_concurrency(kw):
    a = fit(Deployment(**kw), CATALOG)
    b = fit(Deployment(**{**kw, "max_model_len": kw["max_model_len"] * 2}), CATALOG)
    assert b.max_concurrency <= a.max_concurrency
    assert a.fits or not b.fits


@common
@given(deployments)
def test_results_are_finite_and_non_negative(kw):
    r = fit(Deployment(**kw), CATALOG)
    for name in ("weights_bytes_per_gpu", "kv_cache_bytes_per_gpu", "kv_cache_bytes_per_token",
                 "max_concurrency", "shortfall_bytes", "activation_bytes_per_gpu"):
        value = getattr(r, name)
        assert math.isfinite(value) and value >= 0, name
    assert r.fits == (r.shortfall_bytes == 0)


@common
@given(st.sampled_from(MODELS), st.sampled_from([1, 2, 4, 8]), st.integers(min_value=1, max_value=10**6))
def test_kv_per_token_times_tokens_is_kv_bytes(model, tp, tokens):
    arch = resolve_model(CATALOG, model).architecture
    layout = kv_layout(arch, kv_bits=16, tp=tp)
    if layout.window_tokens is None and not layout.state_bytes_per_seq:
        # every GPU of the TP group holds its share (or a replica); together: per-token × tokens
        assert layout.sequence_bytes_per_gpu(tokens) * tp == pytest.approx(layout.bytes_per_token * tokens, rel=1e-9)


@common
@given(st.sampled_from(MODELS), st.sampled_from(QUANTS))
def test_tp_never_raises_per_gpu_weights(model, quant):
    from inferplan.memory.resolve import resolve_model

    heads = resolve_model(CATALOG, model).architecture.num_attention_heads  # the engines split heads evenly
    per_gpu = [fit(Deployment(model=model, gpu="h200-sxm", quantization=quant, tensor_parallel_size=tp), CATALOG).weights_bytes_per_gpu
               for tp in (1, 2, 4, 8) if heads % tp == 0]
    assert all(b <= a for a, b in zip(per_gpu, per_gpu[1:]))


@common
@given(st.sampled_from(MODELS), st.sampled_from(["h100-sxm", "rtx-4090", "l4"]))
def test_smallest_fit_really_fits(model, gpu):
    assume(runs_there(model, gpu))
    r = fit(Deployment(model=model, gpu=gpu, max_model_len=4096), CATALOG)
    if not r.fits and r.smallest_fit is not None:
        s = r.smallest_fit
        again = fit(Deployment(model=model, gpu=gpu, max_model_len=4096, tensor_parallel_size=s.tensor_parallel_size,
                               pipeline_parallel_size=s.pipeline_parallel_size), CATALOG)
        assert again.fits
