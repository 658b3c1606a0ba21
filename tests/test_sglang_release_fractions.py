"""SGLang's default mem_fraction_static by release before 0.4.7: the sglang-tp-fraction-table rule's
memory_fraction_by_tp entries, read from the wheels (mr-sglang-wheels-tp-fraction-v020-v026 ... -v040-v046). TP 8:
0.84 in 0.2.0-0.2.6, 0.83 in 0.2.7-0.3.5, 0.82 in 0.3.6, 0.81 from 0.4.0; above 80 GiB from 0.4.5.post3 the GPU's
memory less 13 GiB; from 0.4.6.post2 0.88 above 80 GiB, above 96 GiB raised by 48 GiB x 0.12 / total, at most the
total less 18 GiB."""

import pytest

from inferplan.catalog.provenance import release_key, release_order
from inferplan.inputs.deployment import Deployment
from inferplan.memory.fit import fit, plan_memory
from inferplan.units import GiB


def _fraction(catalog, release: str, gpu: str = "h100-sxm", tp: int = 8) -> float:
    d = Deployment(model="llama-3.1-70b", gpu=gpu, tensor_parallel_size=tp, engine="sglang", engine_version=release)
    return plan_memory(d, catalog).settings.memory_fraction


@pytest.mark.parametrize(("release", "fraction"), [
    ("0.2.0", 0.84), ("0.2.5", 0.84), ("0.2.6", 0.84),
    ("0.2.7", 0.83), ("0.3.0", 0.83), ("0.3.5.post2", 0.83),
    ("0.3.6", 0.82), ("0.3.6.post3", 0.82),
    ("0.4.0", 0.81), ("0.4.3", 0.81), ("0.4.6", 0.81), ("0.4.6.post5", 0.81),  # an H100 is below 80 GiB
])
def test_each_sglang_release_takes_its_own_tp8_fraction(catalog, release, fraction):
    assert _fraction(catalog, release) == pytest.approx(fraction)


@pytest.mark.parametrize(("tp", "fraction"), [(1, 0.89), (2, 0.88), (4, 0.86), (16, 0.80)])
def test_sglang_020_table_by_tp(catalog, tp, fraction):
    d = Deployment(model="qwen3-8b", gpu="h100-sxm", tensor_parallel_size=tp, engine="sglang", engine_version="0.2.0")
    assert plan_memory(d, catalog).settings.memory_fraction == pytest.approx(fraction)


def test_the_kv_cache_grows_with_the_releases_fraction(catalog):
    kv = {r: fit(Deployment(model="llama-3.1-70b", gpu="h100-sxm", tensor_parallel_size=8, engine="sglang",
                            engine_version=r), catalog).kv_cache_bytes_per_gpu
          for r in ("0.2.5", "0.3.0", "0.3.6", "0.4.3")}
    assert kv["0.2.5"] > kv["0.3.0"] > kv["0.3.6"] > kv["0.4.3"]


def test_large_gpus_take_the_fraction_from_memory_from_0453(catalog):
    total = fit(Deployment(model="llama-3.1-70b", gpu="h200-sxm", tensor_parallel_size=8), catalog).gpu_memory_bytes
    assert total > 96 * GiB
    assert _fraction(catalog, "0.4.5.post2", "h200-sxm") == pytest.approx(0.81)
    assert _fraction(catalog, "0.4.5.post3", "h200-sxm") == pytest.approx((total - 13 * GiB) / total)
    assert _fraction(catalog, "0.4.6.post1", "h200-sxm") == pytest.approx((total - 13 * GiB) / total)
    assert _fraction(catalog, "0.4.6.post2", "h200-sxm") == pytest.approx(
        min(0.88 + 48 * GiB * 0.12 / total, (total - 18 * GiB) / total))


@pytest.mark.parametrize("gpu", ["h100-nvl", "rtx-pro-6000-blackwell"])
def test_between_80_and_96_gib_the_fraction_ignores_tp(catalog, gpu):
    total = fit(Deployment(model="llama-3.1-70b", gpu=gpu, tensor_parallel_size=8), catalog).gpu_memory_bytes
    assert 80 * GiB < total <= 96 * GiB
    assert _fraction(catalog, "0.4.6.post2", gpu) == pytest.approx(0.88)  # TP 8 on 80 GiB or less: 0.81
    assert _fraction(catalog, "0.4.5.post3", gpu) == pytest.approx((total - 13 * GiB) / total)


def test_from_0462_the_table_is_keyed_on_tp_times_pp(catalog):
    def frac(release, tp, pp):
        d = Deployment(model="llama-3.1-70b", gpu="h100-sxm", tensor_parallel_size=tp, pipeline_parallel_size=pp,
                       engine="sglang", engine_version=release)
        return plan_memory(d, catalog).settings.memory_fraction
    assert frac("0.4.6.post2", 4, 2) == pytest.approx(0.81)  # server_args.py: parallel_size = tp_size * pp_size
    assert frac("0.4.6.post2", 2, 2) == pytest.approx(0.85)
    assert frac("0.4.6.post2", 4, 1) == pytest.approx(0.85)


def test_an_underscore_post_release_keeps_its_number():
    assert release_order("0.4.6_post2") == release_order("0.4.6.post2") == release_order("0.4.6-post2")
    assert release_order("0.4.6_post2") > release_order("0.4.6.post1")


def test_post_releases_follow_their_base_in_a_release_table():
    assert release_order("0.4.6") < release_order("0.4.6.post1") < release_order("0.4.6.post5") < release_order("0.4.7")
    assert release_order("0.4.6.post5") < release_order("0.4.6.1")
    assert release_order("0.11.0") == release_order("0.11") and release_order("v0.4.6post2")[1] == 2
    assert release_key("0.4.6.post5") == release_key("0.4.6")  # a range ending at 0.4.6 holds its post releases


def test_sglang_035_post2_takes_the_small_gpu_chunk(catalog):
    chunks = {r: plan_memory(Deployment(model="qwen3-8b", gpu="l4", engine="sglang", engine_version=r),
                             catalog).settings.max_num_batched_tokens for r in ("0.3.5.post1", "0.3.5.post2")}
    assert chunks == {"0.3.5.post1": 8192, "0.3.5.post2": 2048}
