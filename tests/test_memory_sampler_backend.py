"""vLLM V1's top-k/top-p sampler backend in the start-up profile: where the install ran FlashInfer's
sampler (the default where flashinfer imported, until vLLM PR #26859) the dummy sampler pass does not
sort the vocabulary. Checked on the development records whose logs name the sampler."""

import pytest

from inferplan.catalog.memory_rules import memory_rule
from inferplan.inputs.deployment import Deployment
from inferplan.memory.fit import fit
from inferplan.validation.memory import check_point

SORT = "vllm-sampler-bytes-per-seq-vocab"
SORT_FREE = "vllm-v017-sampler-bytes-per-seq-vocab"


def _check(catalog, point_id):
    return check_point(catalog.memory_points.records[point_id], catalog)


@pytest.mark.parametrize("point_id", ["d09-qwen2-7b-a100-80gb-util025", "d13-qwen2-7b-tp2-a100-80gb-util05"])
def test_runs_that_log_the_flashinfer_sampler_are_planned_without_the_sort(catalog, point_id):
    """0.10.1.1 on an A100 with 'Using FlashInfer for top-p & top-k sampling.': within 2 % (the sort's
    bytes per cell leave d09 18.6 % short)."""
    point = catalog.memory_points.records[point_id]
    assert point.split == "development" and point.settings.topk_topp_sampler == "flashinfer"
    assert abs(_check(catalog, point_id).kv_error) < 0.02


def test_the_run_that_fell_back_to_the_pytorch_sampler_keeps_the_sort(catalog):
    """The two-node Ray run of the same release and model logs the PyTorch-native fallback: planned with
    the sort's bytes per cell, within 3 %."""
    point = catalog.memory_points.records["d11-qwen2-7b-tp2-a100-40gb-util05"]
    rule = memory_rule(catalog, "vllm", point.engine_release)
    assert rule.activation.sampler_constant_for(point.settings.topk_topp_sampler) == SORT
    assert abs(_check(catalog, point.id).kv_error) < 0.03


@pytest.mark.parametrize("release", ["0.8.0", "0.10.1.1", "0.11.0", "0.16.0"])
def test_naming_flashinfer_frees_the_sorts_bytes_for_the_kv_cache(catalog, release):
    d = Deployment(model="qwen2.5-7b", gpu="a100-80gb", max_model_len=16384, gpu_memory_utilization=0.5,
                   engine_version=release)
    native, flashinfer = fit(d, catalog), fit(d.model_copy(update={"topk_topp_sampler": "flashinfer"}), catalog)
    assert fit(d.model_copy(update={"topk_topp_sampler": "pytorch"}), catalog).kv_cache_bytes_per_gpu == \
        native.kv_cache_bytes_per_gpu
    rows_x_vocab = 256 * 152064  # the A100 default max_num_seqs x Qwen2.5's vocabulary
    freed = (catalog.constant(SORT) - catalog.constant(SORT_FREE)) * rows_x_vocab
    assert flashinfer.kv_cache_bytes_per_gpu - native.kv_cache_bytes_per_gpu == pytest.approx(freed, rel=1e-3)


@pytest.mark.parametrize("release", ["0.17.0", "0.21.0"])
def test_releases_that_never_sort_plan_both_samplers_alike(catalog, release):
    d = Deployment(model="qwen2.5-7b", gpu="h100-sxm", max_model_len=16384, engine_version=release)
    assert fit(d, catalog).kv_cache_bytes_per_gpu == \
        fit(d.model_copy(update={"topk_topp_sampler": "flashinfer"}), catalog).kv_cache_bytes_per_gpu
