"""SGLang sets --max-running-requests 48 itself when a speculative draft runs and none is stated
(mr-sglang-wheels-draft-running-requests; ``running_requests_with_draft`` on the SGLang rule's
gpu_memory_defaults, applied by memory/settings.py): perf runs 48 and queues the rest, fit says so, deploy
writes no flag for it, and the tier's graph batch and default fraction stay as without a draft."""

import pytest

from inferplan.catalog.engine_tiers import DraftRunningCap
from inferplan.catalog.hybrid_split import hybrid_split_at
from inferplan.catalog.loader import load_catalog
from inferplan.catalog.memory_rules import memory_rule
from inferplan.deploy.command import launch_command
from inferplan.inputs.deployment import Deployment
from inferplan.inputs.workload import Workload
from inferplan.memory.fit import fit
from inferplan.memory.settings import engine_settings
from inferplan.performance.serving import estimate
from inferplan.units import GiB

CATALOG = load_catalog()


def _settings(release: str | None, rule=None, accel_id: str = "h100-sxm", **kw):
    d = Deployment(model="llama-3.1-8b", gpu=accel_id, engine="sglang", engine_version=release, **kw)
    accel, engine = CATALOG.accelerators.records[accel_id], CATALOG.engine("sglang")
    return engine_settings(d, engine, accel, 80 * GiB, rule or memory_rule(CATALOG, "sglang", release))


def _r1(**kw) -> Deployment:
    return Deployment(model="deepseek-r1", gpu="b200", gpus=8, engine="sglang", **{"speculative_tokens": 3, **kw})


@pytest.mark.parametrize("release", ["0.5.3", "0.5.6", "0.5.9", "0.5.13", "0.5.18", "0.5.23", None])
@pytest.mark.parametrize("method", ["ngram", "mtp", "eagle3", "draft_model"])
def test_every_read_release_runs_48_requests_with_any_draft(release, method):
    rule = memory_rule(CATALOG, "sglang", release)
    assert rule.gpu_memory_defaults.draft_running_requests(rule.planned_release(release)) == 48
    if method == "ngram":  # the other methods name their drafts: the memory plan checks them
        assert _settings(release, speculative_tokens=3, speculative_method=method).max_num_seqs == 48


def test_without_a_draft_the_default_holds():
    assert _settings("0.5.23").max_num_seqs not in (None, 48)


def test_before_0_5_3_no_running_cap_with_a_draft_is_planned():
    # SGLang 0.2-0.4.6's rule carries no such default (those releases are not read for it)
    assert _settings("0.4.6", speculative_tokens=3, speculative_method="ngram").max_num_seqs != 48


def test_the_running_requests_come_from_the_data():
    rule = memory_rule(CATALOG, "sglang", "0.5.23")
    changed = rule.gpu_memory_defaults.model_copy(update={"running_requests_with_draft": DraftRunningCap(
        first_release="0.5.3", running_requests=32, sources=("mr-sglang-wheels-draft-running-requests",))})
    s = _settings("0.5.23", rule.model_copy(update={"gpu_memory_defaults": changed}), speculative_tokens=3,
                  speculative_method="ngram")
    assert s.max_num_seqs == 32
    unwired = rule.gpu_memory_defaults.model_copy(update={"running_requests_with_draft": None})
    s = _settings("0.5.23", rule.model_copy(update={"gpu_memory_defaults": unwired}), speculative_tokens=3,
                  speculative_method="ngram")
    assert s.max_num_seqs == _settings("0.5.23").max_num_seqs


def test_a_stated_max_num_seqs_wins():
    assert _settings("0.5.23", speculative_tokens=3, speculative_method="ngram", max_num_seqs=100).max_num_seqs == 100


def test_the_graph_batch_and_default_fraction_stay_as_without_a_draft():
    # the 48 is set after the GPU-memory defaults (0.5.23 arg_groups/pipeline.py lines 218 then 306), so 0.5.22's
    # graph-batch cap, which reads a stated --max-running-requests, does not see it
    drafted = _settings("0.5.23", speculative_tokens=3, speculative_method="ngram")
    assert drafted.memory_fraction == _settings("0.5.23").memory_fraction
    assert _settings("0.5.23", max_num_seqs=48).memory_fraction > drafted.memory_fraction


def test_deepseek_r1_on_8_b200_with_mtp_runs_48_of_100():
    e = estimate(_r1(), Workload(input_len=1024, output_len=256, concurrency=100, speculative_tokens=3))
    assert e.running_per_instance == 48
    stated = estimate(_r1(max_num_seqs=100), Workload(input_len=1024, output_len=256, concurrency=100,
                                                      speculative_tokens=3))
    assert stated.running_per_instance == 100 and stated.ttft_s < e.ttft_s  # the 52 queued wait


def test_dp_attention_ranks_share_the_48():
    # with --enable-dp-attention the flag is the server's total, each rank running 48 // 8 = 6 (PR #20063), as a
    # stated total is (deploy writes --max-running-requests 48 for --max-num-seqs 6 here)
    d = _r1(tensor_parallel_size=1, data_parallel_size=8, enable_expert_parallel=True)
    e = estimate(d, Workload(input_len=1024, output_len=256, concurrency=100, speculative_tokens=3))
    assert e.running_per_instance == 6
    assert any("6 on each of 8 DP attention ranks" in a for a in fit(d).assumptions)
    assert "--max-running-requests 48" in launch_command(d.model_copy(update={"max_num_seqs": 6}), CATALOG).text


def test_fit_says_the_release_runs_48_with_a_draft():
    notes = fit(_r1()).assumptions
    assert any("--max-running-requests 48" in a for a in notes)
    assert not any("--max-running-requests" in a for a in fit(_r1(max_num_seqs=100)).assumptions)
    assert not any("with a speculative draft" in a for a in fit(_r1(speculative_tokens=0)).assumptions)


def test_deploy_writes_no_running_cap_for_the_default():
    assert "--max-running-requests" not in launch_command(_r1(), CATALOG).text
    assert "--max-running-requests 100" in launch_command(_r1(max_num_seqs=100), CATALOG).text


def test_the_hybrid_draft_solve_runs_the_same_default():
    rule = memory_rule(CATALOG, "sglang", "0.5.23")
    for entry in rule.hybrid_state_split:
        if entry.draft_state is not None:
            assert entry.draft_state.running_requests == rule.gpu_memory_defaults.draft_running_requests(
                entry.first_release)
    assert hybrid_split_at(rule.hybrid_state_split, "0.5.23").draft_state.running_requests == 48
