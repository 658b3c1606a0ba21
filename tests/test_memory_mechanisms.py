"""Release and device mechanisms of the engine memory rules, each checked on the development
field records that show it: a mechanism unwired from the data makes its test fail."""

import pytest

from inferplan.catalog.memory_rules import memory_rule
from inferplan.validation.calibrate import fit_vllm_v017_sampler
from inferplan.validation.memory import check_point


def _check(catalog, point_id):
    return check_point(catalog.memory_points.records[point_id], catalog)


def test_vllm_017_sampler_constant_equals_its_fit_on_development_records(catalog):
    fit_ = fit_vllm_v017_sampler(catalog)
    constant = catalog.calibration.records["vllm-v017-sampler-bytes-per-seq-vocab"]
    assert constant.value == pytest.approx(fit_.sampler_bytes_per_seq_vocab, abs=0.01)
    assert set(constant.fitted_on) == set(fit_.points) and len(fit_.points) >= 3
    assert all(catalog.memory_points.records[p].split == "development" for p in fit_.points)
    # the sort-free sampler needs well under half the bytes per (row x vocab entry) of the sort
    assert constant.value < 0.5 * catalog.constant("vllm-sampler-bytes-per-seq-vocab")


@pytest.mark.parametrize("release", ["0.17.0", "0.20.2", "0.21.0"])
def test_releases_from_017_profile_the_sort_free_sampler(catalog, release):
    assert memory_rule(catalog, "vllm", release).activation.sampler_constant == "vllm-v017-sampler-bytes-per-seq-vocab"


def test_the_017_activation_drop_is_planned_across_the_version_sweep(catalog):
    """Qwen3-14B on one H100: KV 41.94 GiB at 0.16.0 and 45.23 GiB at 0.18.0 (development records)."""
    before, after = _check(catalog, "m17-qwen3-14b-h100-v0160"), _check(catalog, "m19-qwen3-14b-h100-v0180")
    assert abs(before.kv_error) < 0.01 and abs(after.kv_error) < 0.01


def test_cards_carry_the_totals_their_development_records_printed(catalog):
    """A start-up log's printed total is the card's measured memory_reported_bytes: every accelerator a
    development record printed a total for carries one, within 0.5 % of each printed figure."""
    from inferplan.memory.engine_budget import device_total_bytes

    printed = {}
    for point in catalog.memory_points:
        total = point.measured.total_bytes_per_gpu
        if point.split == "development" and total is not None:
            printed.setdefault(point.accelerator, []).append(total.value)
    assert {"rtx-3090", "a10"} <= set(printed)
    for accel_id, totals in printed.items():
        accel = catalog.accelerators.records[accel_id]
        assert accel.memory_reported_bytes is not None, accel_id
        reported, note = device_total_bytes(catalog, accel)
        assert note is None and all(abs(reported / t - 1) < 0.005 for t in totals), (accel_id, reported, totals)


@pytest.mark.parametrize("accel_id, gib", [("l4", 22.03), ("l40s", 44.53), ("t4", 14.56)])
def test_a_datacenter_gddr6_card_plans_the_total_its_ecc_leaves(catalog, accel_id, gib):
    """L4, L40S and T4 keep ECC on by default, as the A10 does: CUDA reports 22.03, 44.53 and 14.56 GiB, 7-9 % under
    their 24, 48 and 16 GiB, and the plan's total is that, not the marketed size less the generic reserve."""
    from inferplan.memory.engine_budget import device_total_bytes

    reported, note = device_total_bytes(catalog, catalog.accelerators.records[accel_id])
    assert note is None and reported == pytest.approx(gib * 2**30)


def test_the_rtx_4090_plans_the_total_cuda_reports_not_the_generic_reserve(catalog):
    """PyTorch's out-of-memory text on an RTX 4090 reads a 23.65 GiB total (other captures 23.61-23.68): the plan
    takes that measured total, with no note that the driver's share is assumed."""
    from inferplan.memory.engine_budget import device_total_bytes

    reported, note = device_total_bytes(catalog, catalog.accelerators.records["rtx-4090"])
    assert note is None and reported == pytest.approx(23.65 * 2**30)


@pytest.mark.parametrize("accel_id", ["rtx-pro-6000-blackwell", "rtx-pro-6000-blackwell-maxq"])
def test_both_rtx_pro_6000_cards_plan_the_total_cuda_reports(catalog, accel_id):
    """The 600 W card and the Max-Q hold the same 96 GB of GDDR7; CUDA reports 94.97 GiB on both, so neither
    plans the marketed size less the generic reserve (95.02 GiB) with a note that the total is assumed."""
    from inferplan.memory.engine_budget import device_total_bytes

    reported, note = device_total_bytes(catalog, catalog.accelerators.records[accel_id])
    assert note is None and reported == pytest.approx(94.97 * 2**30)


def test_a_desktop_cards_measured_total_sets_its_kv_budget(catalog):
    """RTX 3090 under vLLM 0.6.4: 23.58 x 0.90 - 17.06 - 0.35 = 3.81 GiB printed; planned within 2 %."""
    assert abs(_check(catalog, "f01-llama31-8b-rtx3090-20k").kv_error) < 0.02


@pytest.mark.parametrize("engine", ["sglang", "ktransformers"])
def test_sglangs_fraction_is_of_the_memory_free_at_start_up(catalog, engine):
    """SGLang reads the free memory after the CUDA context and the distributed init and takes
    mem_fraction_static of that, not of the device total."""
    rule = memory_rule(catalog, engine)
    assert rule.fraction_of == "free_at_start" and rule.start_constant == "cuda-context-bytes-per-gpu"


def test_sglang_plans_its_fraction_of_the_free_memory(catalog):
    from inferplan.inputs.deployment import Deployment
    from inferplan.memory.fit import fit

    d = Deployment(model="llama-3.1-8b", gpu="h100", engine="sglang", gpu_memory_utilization=0.9, max_model_len=8192)
    result = fit(d, catalog)
    context = catalog.constant("cuda-context-bytes-per-gpu")
    assert result.usable_bytes_per_gpu == pytest.approx((result.gpu_memory_bytes - context) * 0.9)


def test_a_fraction_of_the_free_memory_names_what_is_in_use_at_start_up(catalog):
    from inferplan.catalog.memory_rules import MemoryRule

    data = memory_rule(catalog, "sglang").model_dump()
    with pytest.raises(ValueError, match="start_constant"):
        MemoryRule.model_validate({**data, "start_constant": None})
