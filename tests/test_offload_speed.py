"""Decode with weights in host RAM: routed experts stream at their own share of the DRAM peak."""

from pathlib import Path

import pytest
import yaml

from inferplan.catalog.loader import DATA_DIR, load_catalog
from inferplan.performance.offload import HostOffload
from inferplan.validation.calibrate_speed import prepare
from inferplan.validation.offload_fit import CONSTANT, derived_expert_read_share, with_constant
from inferplan.validation.speed import check_point

MORE = Path(DATA_DIR) / "measurements" / "speed_offload_more.yaml"


@pytest.fixture(scope="module")
def catalog():
    return load_catalog()


def test_a_cpu_step_reads_whole_layers_and_picked_experts_at_their_own_rates():
    host = HostOffload(mode="cpu", dense_bytes=1e9, expert_bytes=8e9, kv_fraction=0.0, read_bytes_per_s=60e9,
                       expert_read_bytes_per_s=32e9, copy_bytes_per_s=25e9, min_copy_tokens=32)
    # 1 GB of layers at 60 GB/s plus a quarter of 8 GB of experts at 32 GB/s
    assert host.step_s(1, 0.25, 0.0) == pytest.approx(1 / 60 + 2 / 32)
    # from 32 tokens llama.cpp copies all of it over PCIe instead
    assert host.step_s(32, 1.0, 0.0) == pytest.approx(9 / 25)


def test_the_expert_read_share_sets_the_decode_rate_of_an_expert_offload_point(catalog):
    point = catalog.speed_points.records["s-off-llmfit-2080-qwen3-30b-a3b-ncmoe36-tg"]
    shipped = check_point(point, catalog).predicted
    doubled = check_point(point, with_constant(catalog, CONSTANT, 2 * catalog.constant(CONSTANT))).predicted
    assert doubled > 1.3 * shipped  # most of the step is the CPU reading experts


def test_the_expert_read_share_rederives_from_its_fit_points(catalog):
    record = catalog.calibration.records[CONSTANT]
    points = [catalog.speed_points.records[i] for i in record.fitted_on]
    assert points and all(p.split == "fit" and p.n_cpu_moe for p in points)
    assert derived_expert_read_share(catalog) == pytest.approx(record.value, abs=0.01)


def test_offload_points_never_enter_the_gpu_refit(catalog):
    ready, _ = prepare(catalog, "fit")
    ids = {r.id for r in ready}
    offloaded = {p.id for p in catalog.speed_points if p.offloaded}
    assert offloaded and not ids & offloaded


def test_every_second_added_offload_point_is_held_out_as_declared():
    points = yaml.safe_load(MORE.read_text())["speed_points"]
    assert len(points) >= 6
    assert [p["split"] for p in points] == ["fit" if i % 2 == 0 else "holdout" for i in range(len(points))]


def test_the_points_inconsistent_with_their_hardware_are_kept_and_scored(catalog):
    ids = [p.id for p in catalog.speed_points if p.id.startswith("s-off-hwc-") and p.id.find("-tg") > 0]
    checks = [check_point(catalog.speed_points.records[i], catalog) for i in ids]
    assert len(checks) == 5 and all(c.scored and c.error > 3 for c in checks)


def test_every_offload_point_states_its_host_memory_and_sources_its_bandwidth(catalog):
    points = [p for p in catalog.speed_points if p.offloaded]
    assert all(p.host_memory_gb for p in points)
    stated = [p.host_memory_bandwidth_bytes_per_s for p in points if p.host_memory_bandwidth_bytes_per_s]
    assert stated and all(b.source in catalog.sources and b.kind for b in stated)


def test_a_rate_timed_over_the_request_spends_the_prompts_ttft_too(catalog):
    """llmfit's bench divides completion tokens by the request's wall-clock time: the planner's figure
    for such a point is output tokens over TTFT plus their decode, below the decode rate alone."""
    from inferplan.performance.serving import estimate
    from inferplan.validation.speed import point_scenario

    point = catalog.speed_points.records["s-off-llmfit-2080-dsv2lite-ncmoe16-tg"]
    assert point.timed_over == "request"
    d, w = point_scenario(point, catalog)
    est = estimate(d, w, catalog, use_profiles=False)
    request = point.output_tokens / (est.ttft_s + point.output_tokens / est.output_tokens_per_s_per_user)
    assert check_point(point, catalog).predicted == pytest.approx(request)
    decode_only = check_point(point.model_copy(update={"timed_over": "decode"}), catalog).predicted
    assert decode_only == pytest.approx(est.output_tokens_per_s_per_user)
    assert request < 0.95 * decode_only  # the ~50-token prompt copies 5 GB of experts over PCIe 3.0


def test_every_llmfit_bench_point_is_timed_over_the_request(catalog):
    """The bench's rate includes the prompt (spoff-llmfit-bench); the server's own rate (PR #755) does not."""
    bench = [p for p in catalog.speed_points if any("llmfit bench:" in c for c in p.caveats)]
    assert len(bench) == 5 and all(p.timed_over == "request" for p in bench)
    assert catalog.speed_points.records["s-off-llmfit-2080-qwen3-30b-a3b-ncmoe36-tg"].timed_over == "decode"
