"""SGLang's AITER attention workspace on ROCm (memory/attention_workspace.py, the SGLang rule's
`attention_workspace` data): allocated after the KV pool out of the memory mem_fraction_static leaves,
it reproduces the workspace a start-up printed and makes a long-context start-up fail as it did."""

import pytest

from inferplan.inputs.deployment import Deployment
from inferplan.memory.attention_workspace import workspace_bytes
from inferplan.memory.fit import fit
from inferplan.memory.resolve import resolve_model
from inferplan.memory.suggest import fit_or_suggest
from inferplan.validation.memory import check_point

GiB = 2**30
D04 = dict(model="qwen3-30b-a3b-2507", gpu="mi355x", engine="sglang", quantization="fp8-block", max_model_len=262144)


def _workspace(catalog):
    return catalog.memory_rules.records["sglang-static-fraction"].attention_workspace


def test_the_workspace_sglang_printed_for_a_pool_of_1669816_tokens_is_reproduced(catalog):
    # sglang PR #18263 (record d05): 'KV Cache is allocated ... #tokens: 1669816', then a 51.75 GB
    # (SGLang's GB: 2^30 bytes) AITER workspace for Qwen3-30B-A3B at 262,144 positions on one GPU
    ws, arch = _workspace(catalog), resolve_model(catalog, "qwen3-30b-a3b-2507").architecture
    requests = ws.request_table.requests(1_669_816, 262_144)
    assert requests == 3261
    got = workspace_bytes(ws, requests, arch.num_attention_heads, arch.head_dim, 262_144)
    assert got / GiB == pytest.approx(51.75, abs=0.005)


def test_the_request_count_is_clamped_to_sglangs_bounds(catalog):
    ws = _workspace(catalog)
    assert ws.request_table.requests(10_000, 262_144) == 2048
    assert ws.request_table.requests(100_000_000, 262_144) == 4096


def test_the_workspace_and_the_running_requests_share_one_request_table(catalog):
    # the table is stated once in the rule: the workspace's rows are the ones that cap the running requests
    rule = catalog.memory_rules.records["sglang-static-fraction"]
    assert rule.attention_workspace.request_table == rule.running_default("0.5.6").request_table


def test_a_long_context_on_mi355x_fails_at_start_up_after_the_pool_and_says_what_starts(catalog):
    # record d04: the pool was allocated, then out of memory allocating the AITER buffers
    r = fit(Deployment(**D04), catalog)
    assert r.kv_cache_bytes_per_gpu > r.sequence_bytes_per_gpu  # the pool alone holds the context
    assert not r.fits and r.startup_shortfall_bytes_per_gpu > 2 * GiB
    assert "aiter attention workspace" in r.startup_note
    changes = [s.changes for s in fit_or_suggest(Deployment(**D04), catalog).suggestions]
    fraction = next(c["gpu_memory_utilization"] for c in changes if set(c) == {"gpu_memory_utilization"})
    # the flag to pass: SGLang lowers it x 0.85 as it lowered its own 0.911 to 0.7735
    assert fraction * 0.85 < 0.7735 < fraction and fit(Deployment(**D04, gpu_memory_utilization=fraction), catalog).fits
    assert not fit(Deployment(**D04, gpu_memory_utilization=fraction + 0.02), catalog).fits
    shorter = next(c["max_model_len"] for c in changes if set(c) == {"max_model_len"})
    assert fit(Deployment(**{**D04, "max_model_len": shorter}), catalog).fits


@pytest.mark.parametrize("gpu", ["h200", "b200"])
def test_sglang_on_nvidia_keeps_no_aiter_workspace(catalog, gpu):
    r = fit(Deployment(**{**D04, "gpu": gpu, "quantization": "fp8-block"}), catalog)
    assert r.startup_shortfall_bytes_per_gpu == 0 and r.startup_note is None


def test_an_mla_model_on_mi355x_keeps_no_aiter_workspace(catalog):
    # counted as for a model without MLA, its 16 query heads per GPU would not fit in 0.03 of the GPU
    r = fit(Deployment(model="deepseek-v3", gpu="mi355x", gpus=8, tensor_parallel_size=8, engine="sglang",
                       max_model_len=163840, gpu_memory_utilization=0.97), catalog)
    assert r.startup_shortfall_bytes_per_gpu == 0 and r.startup_note is None


def test_the_mi355x_start_up_that_ran_out_of_memory_after_its_pool_is_predicted_to_fail(catalog):
    check = check_point(catalog.memory_points.records["d04-qwen3-30b-a3b-fp8-mi355x-sglang-fails"], catalog)
    assert check.measured_fits is False and check.predicted_fits is False


def test_a_passing_start_up_check_does_not_hide_a_failing_workspace(catalog, monkeypatch):
    # a rule with both checks: the failing one decides, whichever comes first
    import inferplan.memory.fit as fit_module
    from inferplan.memory.startup import StartupCheck

    passing = StartupCheck(headroom_bytes_per_gpu=8 * GiB, context_bytes_per_gpu=1 * GiB, graph_bytes_per_gpu=0.0,
                           sampler_bytes_per_gpu=0.0, sampler_bytes_per_seq=0.0)
    monkeypatch.setattr(fit_module, "startup_check", lambda *a, **k: passing)
    r = fit(Deployment(**D04), catalog)
    assert not r.fits and "aiter attention workspace" in r.startup_note


def test_a_start_up_shortfall_is_measured_against_start_ups_headroom(catalog):
    # the pool fits, start-up does not: search's memory shortfall is what start-up needs over the headroom outside
    # the fraction, not over the memory the engine uses inside it
    from inferplan.search.reasons import memory_shortfall

    r = fit(Deployment(**D04), catalog)
    assert r.shortfall_bytes == 0 and 0 < r.startup_headroom_bytes_per_gpu < r.usable_bytes_per_gpu
    needed = r.startup_headroom_bytes_per_gpu + r.startup_shortfall_bytes_per_gpu
    assert memory_shortfall(catalog, Deployment(**D04)) == pytest.approx(needed / r.startup_headroom_bytes_per_gpu)
