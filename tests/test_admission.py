"""vLLM's per-request admission charge for DeepSeek-V4's compressed attention
(engine_admission_rules.yaml, memory/admission.py): the page counts its pull request states, the
concurrency the 0.26.0 record printed, and its use by the memory fit, the start-up check and the
speed model's slots. Unwiring the rule from any of them makes a test here fail."""

import dataclasses

import pytest

from inferplan.catalog.admission_rules import AdmissionRule, admission_rule, check_admission_rules
from inferplan.errors import CatalogError
from inferplan.inputs.deployment import Deployment
from inferplan.inputs.workload import Workload
from inferplan.memory.admission import admission_reserve, layer_tuples
from inferplan.memory.fit import fit, plan_memory
from inferplan.memory.resolve import resolve_model
from inferplan.validation.memory import check_point

GIB = 2**30


def _reserve(catalog, release, mnbt=8192, kv_bits=8):
    arch = resolve_model(catalog, "deepseek-v4-flash").architecture
    return admission_reserve(arch, admission_rule(catalog, "vllm", "compressed_attention", release), kv_bits, mnbt)


def _deployment(**kw):
    base = dict(model="deepseek-v4-flash", gpu="h20", tensor_parallel_size=2, engine="vllm", kv_cache_dtype="fp8",
                gpu_memory_utilization=0.95, max_model_len=121344, max_num_batched_tokens=8192)
    return Deployment(**(base | kw))


def test_the_compressor_state_groups_charge_the_pages_pr_52495_states(catalog):
    """PR #52495: at max_num_batched_tokens 8192, doubled under async scheduling, the block-4 and block-8
    compressor-state groups charge 4099 and 2065 pages per request; the window group (block 64) 259."""
    groups = {g.name: g for g in _reserve(catalog, "0.26.0").recycled}
    assert _reserve(catalog, "0.26.0").in_flight_tokens == 16384
    assert groups["csa compressor state"].blocks(8 - 1 + 16384) == 4099
    assert groups["hca compressor state"].blocks(128 - 1 + 16384) == 2065
    assert groups["window"].blocks(128 - 1 + 16384) == 259


def test_the_layer_tuples_are_the_split_issue_54703_shows():
    """Issue #54703: the 43 window layers split into groups of 22 and 21 next to a pooled-entry group of
    21 CSA tuples, 21 CSA compressor states and 20 HCA ones: 22 layers per tuple pads least."""
    assert layer_tuples(21, [43, 21, 20]) == 22


def test_the_charge_per_request_is_the_one_the_0731_run_printed(catalog):
    """vllm issue #51041, 0.26.0, 2x H20: 7.71 GiB of KV pool, 1.24x concurrency at 121,344 tokens, so
    7.71 / 1.24 = 6.22 GiB per request (of which ~0.44 GiB grows with the context)."""
    charge = _reserve(catalog, "0.26.0").startup_bytes(121344, 121344)
    assert charge / GIB == pytest.approx(7.71 / 1.24, rel=0.01)
    assert 7.71 * GIB / charge == pytest.approx(1.24, abs=0.01)


def test_one_batch_in_flight_before_the_026_line(catalog):
    assert _reserve(catalog, "0.22.0").in_flight_tokens == 8192
    assert _reserve(catalog, "0.26.0").startup_bytes(30000, 30000) > 1.8 * _reserve(catalog, "0.22.0").startup_bytes(30000, 30000)
    assert admission_rule(catalog, "vllm", "compressed_attention", "0.21.0") is None


def test_the_fit_divides_the_pool_by_the_charge(catalog):
    """Unwired, a 121k-token request would take its own ~0.45 GiB and the pool hold ~15 of them."""
    r = fit(_deployment(engine_version="0.26.0"), catalog)
    assert r.max_concurrency == pytest.approx(r.kv_cache_bytes_per_gpu / _reserve(catalog, "0.26.0").startup_bytes(121344, 121344))
    assert r.max_concurrency < 2
    assert r.kv_cache_needed_bytes_per_gpu == pytest.approx(_reserve(catalog, "0.26.0").needed_bytes(121344, 121344))


def test_the_start_up_check_needs_the_charge(catalog):
    """A pool that holds the context's own bytes many times over but not the charge does not start."""
    r = fit(_deployment(engine_version="0.26.0", max_model_len=262144, gpu_memory_utilization=0.94), catalog)
    own = plan_memory(_deployment(engine_version="0.26.0", max_model_len=262144, gpu_memory_utilization=0.94),
                      catalog).layout.sequence_bytes_per_gpu(262144, 256)
    assert r.kv_cache_bytes_per_gpu > 3 * own
    assert r.kv_cache_bytes_per_gpu < r.kv_cache_needed_bytes_per_gpu and not r.fits


def test_the_speed_model_reserves_the_in_flight_tokens_once(catalog):
    """Decoding requests hold their windows; the tokens in flight across the batch are reserved once."""
    from inferplan.performance.context import ServingContext

    d = _deployment(engine_version="0.26.0", max_model_len=16384)
    mp = plan_memory(d, catalog)
    reserve = mp.layout.admission
    ctx = ServingContext(catalog, d, Workload(input_len=1024, output_len=1024))
    pool = mp.result.kv_cache_bytes_per_gpu
    assert ctx.kv_limit == int((pool - reserve.transient_bytes()) // reserve.steady_bytes(2048))
    assert ctx.kv_limit * 2048 > reserve.in_flight_tokens  # enough requests to fill the batch's in-flight tokens
    # without the reserve the pool would hold hundreds of 2k-token requests
    assert ctx.kv_limit < pool / mp.layout.sequence_bytes_per_gpu(2048, 16) / 4


def test_a_short_context_runs_with_fewer_tokens_in_flight(catalog):
    """A pool below the full in-flight reserve still runs what its requests can have in flight."""
    from inferplan.performance.context import ServingContext

    d = _deployment(engine_version="0.26.0", max_model_len=1536, gpu_memory_utilization=0.9)
    r = fit(d, catalog)
    reserve = plan_memory(d, catalog).layout.admission
    assert r.fits and r.kv_cache_bytes_per_gpu < reserve.transient_bytes()
    assert ServingContext(catalog, d, Workload(input_len=1024, output_len=512)).kv_limit >= 1


def test_a_plan_without_a_release_runs_at_the_current_release_which_has_the_layout(catalog):
    r = fit(_deployment(), catalog)
    assert r.memory_rule_id == memory_rule_id(catalog, "0.31.0")
    assert any("planned at vllm 0.31.0" in a for a in r.assumptions)
    assert any(note.startswith("vllm-compressed") or "reserves its window" in note for note in r.assumptions)


def memory_rule_id(catalog, release):
    from inferplan.catalog.memory_rules import memory_rule
    return memory_rule(catalog, "vllm", release).id


def test_other_layouts_and_engines_are_not_charged(catalog):
    assert plan_memory(Deployment(model="qwen2.5-7b", gpu="h100-sxm", engine="vllm"), catalog).layout.admission is None
    sg = plan_memory(_deployment(engine="sglang", engine_version=None), catalog)
    assert sg.layout.admission is None


def test_the_validation_scores_the_printed_concurrency(catalog):
    check = check_point(catalog.memory_points.records["d19-deepseek-v4-flash-0731-tp2-h20-121k"], catalog)
    assert check.measured_concurrency == 1.24
    assert abs(check.request_error) < 0.01


def test_overlapping_admission_rules_are_refused(catalog):
    rule = catalog.admission_rules.records["vllm-dsv4-admission-in-flight-batches"]
    clash = AdmissionRule(**(rule.model_dump() | {"id": "clash", "first_release": "0.25.0"}))
    broken = dataclasses.replace(catalog, admission_rules=type(catalog.admission_rules)(
        "admission rules", {**catalog.admission_rules.records, "clash": clash}))
    with pytest.raises(CatalogError, match="overlap"):
        check_admission_rules(broken)


def test_the_preview_run_printed_the_charge_of_one_batch_in_flight(catalog):
    """vllm issue #51041, preview checkpoint, 0.26.0: 7.01 GiB, 1.11x at 912,128 tokens (6.32 GiB per request).
    One batch of 8,192 tokens in flight gives that charge; the release's default two give 9.20 GiB, with which
    the engine would not have started (the record states neither max_num_batched_tokens nor async scheduling)."""
    one_batch = _reserve(catalog, "0.22.0", mnbt=8192).startup_bytes(912128, 912128)
    assert one_batch / GIB == pytest.approx(7.01 / 1.11, rel=0.01)
    assert _reserve(catalog, "0.26.0").needed_bytes(912128, 912128) > 7.01 * GIB
