"""vLLM's per-request admission charge for DeepSeek-V4's compressed attention
(engine_admission_rules.yaml, memory/admission.py): the groups, page sizes and block strides each
release line's code builds, the page counts its pull request states, the concurrency the 0.26.0
development record printed, and its use by the memory fit, the start-up check and the speed model's
slots. Unwiring the rule from any of them makes a test here fail."""

import dataclasses

import pytest

from inferplan.catalog.admission_rules import AdmissionRule, admission_rule, check_admission_rules
from inferplan.catalog.memory_rules import current_release
from inferplan.catalog.architecture import LayerKind
from inferplan.errors import CatalogError
from inferplan.inputs.deployment import Deployment
from inferplan.inputs.workload import Workload
from inferplan.memory.admission import admission_reserve, approximate_gcd
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
    compressor-state groups charge 4099 and 2065 pages per request; each window group (block 64) 259."""
    reserve = _reserve(catalog, "0.26.0")
    assert reserve.in_flight_tokens == 16384
    pages = {g.name: g.admitted(912128, 912128, reserve.in_flight_tokens) for g in reserve.groups}
    assert pages == {"pooled entries": 3563, "window 1/2": 259, "window 2/2": 259,
                     "csa compressor state": 4099, "hca compressor state": 2065}


PAGE = {"csa": 37440, "indexer": 8640, "hca": 1728, "window": 37440, "state": 32832, "indexer state": 8640}


def test_the_groups_are_the_ones_issue_54703_prints(catalog):
    """Issue #54703 (a 0.28.1 build): the pooled entries and indexer keys in one group, the 43 window layers
    in groups of 22 and 21, the compressor state of 42 layers (21 CSA and their indexers') and of 20. Every
    page is rounded up to 576 bytes (V4-Flash at FP8: 64 x 584 = 37,376 -> 37,440; 64 x 132 -> 8,640;
    2 x 584 -> 1,728; a 32,768-byte float32 state page -> 32,832)."""
    groups = {g.name: g.page_bytes for g in _reserve(catalog, "0.28.1").groups}
    assert groups == {"pooled entries": 21 * (PAGE["csa"] + PAGE["indexer"]) + 20 * PAGE["hca"],
                      "window 1/2": 22 * PAGE["window"], "window 2/2": 21 * PAGE["window"],
                      "csa compressor state": 21 * (PAGE["state"] + PAGE["indexer state"]),
                      "hca compressor state": 20 * PAGE["state"]}


def test_the_tuple_count_pads_least_and_takes_the_larger_on_a_tie():
    """vLLM's _approximate_gcd: 22 tuples pad V4-Flash's 21, 43, 21 and 20 layers least; a tie goes to the larger."""
    assert approximate_gcd([21, 43, 21, 20], 21) == 22
    assert approximate_gcd([6, 4], 4) == 6  # 4 and 6 both pad by 2
    assert approximate_gcd([3], 5) == 5  # a floor above every count is kept


def test_each_release_line_cuts_the_pool_in_its_own_blocks(catalog):
    """0.22: tuples x the pooled-entry page sizes; 0.23-0.26: a page per slot of each size, state pages padded
    to the pooled-entry sizes; 0.27 on: the widest group (the pooled entries), state pages at their own size."""
    tuple_stride = 22 * (PAGE["csa"] + PAGE["indexer"] + PAGE["hca"])
    assert _reserve(catalog, "0.22.0").block_bytes == tuple_stride == 1051776
    # the 0.20.0 wheel already registers DeepseekV4ForCausalLM with the same allocator (ar-vllm-0200-wheel)
    assert _reserve(catalog, "0.20.0").block_bytes == _reserve(catalog, "0.21.0").block_bytes == tuple_stride
    for release in ("0.23.0", "0.25.1", "0.26.0"):
        assert _reserve(catalog, release).block_bytes == 22 * PAGE["csa"] + 21 * PAGE["indexer"] + 20 * PAGE["hca"]
        groups = {g.name: g.page_bytes for g in _reserve(catalog, release).groups}
        assert groups["hca compressor state"] == 20 * PAGE["csa"]  # padded up to the entry page
    for release in ("0.27.0", "0.28.0", "0.29.0", "0.31.0"):
        assert _reserve(catalog, release).block_bytes == 21 * (PAGE["csa"] + PAGE["indexer"]) + 20 * PAGE["hca"]


def test_the_start_up_check_charges_the_tuple_stride_until_the_029_line(catalog):
    """Before 0.29 _max_memory_usage_bytes_from_groups prices each page at tuples x the pooled-entry page sizes,
    whatever the pool's block; from 0.29 at the pool's block."""
    for release in ("0.22.0", "0.26.0", "0.28.0"):
        reserve = _reserve(catalog, release)
        blocks = sum(g.admitted(30000, 30000, reserve.in_flight_tokens) for g in reserve.groups)
        assert reserve.needed_bytes(30000, 30000) == blocks * 1051776
    reserve = _reserve(catalog, "0.31.0")
    assert reserve.needed_bytes(30000, 30000) == reserve.startup_bytes(30000, 30000)
    assert reserve.needed_bytes(30000, 30000) < _reserve(catalog, "0.28.0").needed_bytes(30000, 30000)


def test_the_printed_concurrency_counts_blocks_as_each_line_does(catalog):
    """0.22-0.26: the groups' page bytes in whole pooled-entry group pages, times the pool's block; from 0.27:
    each group's pages, one block each."""
    old, new = _reserve(catalog, "0.26.0"), _reserve(catalog, "0.27.0")
    held = sum(g.admitted(121344, 121344, 16384) * g.page_bytes for g in old.groups)
    assert old.startup_bytes(121344, 121344) == -(-held // old.groups[0].page_bytes) * old.block_bytes
    assert new.startup_bytes(121344, 121344) == sum(g.admitted(121344, 121344, 16384) for g in new.groups) * new.block_bytes


def test_the_charge_per_request_is_the_one_the_0731_run_printed(catalog):
    """vllm issue #51041 (development record d19), 0.26.0, 2x H20, MTP: 7.71 GiB of KV pool, 1.24x concurrency
    at 121,344 tokens; the MTP layer is one more window layer (22 + 22)."""
    reserve = plan_memory(_deployment(engine_version="0.26.0", mtp_draft=True), catalog).layout.admission
    assert [g.page_bytes for g in reserve.groups if g.name.startswith("window")] == [22 * PAGE["window"]] * 2
    assert round(7.71 * GIB / reserve.startup_bytes(121344, 121344), 2) == 1.24


def test_one_batch_in_flight_before_the_026_line(catalog):
    assert _reserve(catalog, "0.22.0").in_flight_tokens == 8192
    assert _reserve(catalog, "0.25.1").in_flight_tokens == 8192
    assert _reserve(catalog, "0.26.0").in_flight_tokens == 16384
    assert _reserve(catalog, "0.26.0").startup_bytes(30000, 30000) > 1.8 * _reserve(catalog, "0.25.1").startup_bytes(30000, 30000)
    assert admission_rule(catalog, "vllm", "compressed_attention", "0.19.1") is None  # before the model was served


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

    d = _deployment(engine_version="0.26.0", max_model_len=16384, gpu_memory_utilization=0.96)
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
    current = current_release(catalog, "vllm").release
    assert r.memory_rule_id == memory_rule_id(catalog, current)
    assert any(f"planned at vllm {current}" in a for a in r.assumptions)
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
    rule = catalog.admission_rules.records["vllm-dsv4-page-slots-in-flight-batches"]
    clash = AdmissionRule(**(rule.model_dump() | {"id": "clash", "first_release": "0.25.0", "last_release": "0.25.0"}))
    broken = dataclasses.replace(catalog, admission_rules=type(catalog.admission_rules)(
        "admission rules", {**catalog.admission_rules.records, "clash": clash}))
    with pytest.raises(CatalogError, match="overlap"):
        check_admission_rules(broken)


def test_the_029_line_takes_its_tuple_floor_from_the_compressor_state_pattern(catalog):
    """With more HCA than CSA layers the lines part: until 0.28 the floor is the pooled-entry group's most
    common page size (20 HCA layers), from 0.29 the CSA compressor-state bucket's 10 (the pooled-entry
    bucket, its counts unequal, takes no part), so 10 tuples split 30 window layers in three groups."""
    arch = resolve_model(catalog, "deepseek-v4-flash").architecture
    arch = dataclasses.replace(arch, layer_kinds=(LayerKind.CSA,) * 10 + (LayerKind.HCA,) * 20)

    def names(release):
        rule = admission_rule(catalog, "vllm", "compressed_attention", release)
        return [g.name for g in admission_reserve(arch, rule, 8, 8192).groups]
    assert names("0.28.0") == ["pooled entries", "window 1/2", "window 2/2", "csa compressor state", "hca compressor state"]
    assert names("0.29.0") == ["pooled entries", "window 1/3", "window 2/3", "window 3/3", "csa compressor state",
                               "hca compressor state 1/2", "hca compressor state 2/2"]
