"""SGLang sets --max-running-requests 48 itself when a speculative draft runs and none is stated
(mr-sglang-wheels-draft-running-requests; 32 and 48 from 0.4.4 for its EAGLE-family drafts; the SGLang rules'
``running_requests_with_draft``, applied by memory/release_running.py): perf runs 48 and queues the rest, fit
says so, deploy writes no flag for it, and the 48 neither lowers the graph batch nor raises the default fraction.
DeepSeek-V4 runs 256 from 0.5.12, draft or not (``running_requests_by_architecture``)."""

import pytest

from inferplan.catalog.hybrid_split import hybrid_split_at
from inferplan.catalog.loader import load_catalog
from inferplan.catalog.memory_rules import memory_rule
from inferplan.catalog.running_requests import DraftRunningCap, running_entry_at
from inferplan.deploy.command import launch_command
from inferplan.errors import InvalidScenarioError
from inferplan.inputs.deployment import METHOD_DRAFT_FIELDS, Deployment
from inferplan.inputs.workload import Workload
from inferplan.memory.fit import fit
from inferplan.memory.settings import engine_settings
from inferplan.performance.serving import estimate
from inferplan.units import GiB

CATALOG = load_catalog()


def _settings(release: str | None, rule=None, accel_id: str = "h100-sxm", arch=None, **kw):
    d = Deployment(model="llama-3.1-8b", gpu=accel_id, engine="sglang", engine_version=release, **kw)
    accel, engine = CATALOG.accelerators.records[accel_id], CATALOG.engine("sglang")
    return engine_settings(d, engine, accel, 80 * GiB, rule or memory_rule(CATALOG, "sglang", release), arch=arch)


def _drafted(release: str | None, method: str, **kw):
    """The settings with ``method`` drafting 3 tokens, its draft named as the method needs."""
    draft = {"mtp_draft": True} if method == "mtp" else {METHOD_DRAFT_FIELDS[method]: "org/some-draft"} \
        if method in METHOD_DRAFT_FIELDS else {}
    return _settings(release, speculative_tokens=3, speculative_method=method, **draft, **kw)


def _r1(**kw) -> Deployment:
    return Deployment(model="deepseek-r1", gpu="b200", gpus=8, engine="sglang", **{"speculative_tokens": 3, **kw})


def _v4(**kw) -> Deployment:
    return Deployment(model="deepseek-v4-flash", gpu="b200", gpus=8, engine="sglang", **kw)


@pytest.mark.parametrize("release", ["0.5.3", "0.5.6", "0.5.9", "0.5.13", "0.5.18", "0.5.23", None])
@pytest.mark.parametrize("method", ["ngram", "mtp", "eagle3", "draft_model"])
def test_every_read_release_runs_48_requests_with_any_draft(release, method):
    assert _drafted(release, method).max_num_seqs == 48


@pytest.mark.parametrize("release, method, running", [
    ("0.4.3", "mtp", None),  # no cap yet
    ("0.4.4", "mtp", 32), ("0.4.4", "eagle3", None),  # NEXTN runs as EAGLE, capped at 32; no EAGLE3 algorithm yet
    ("0.4.5", "mtp", 48), ("0.4.5", "eagle3", 48), ("0.4.6", "mtp", 48), ("0.4.6", "eagle3", 48),
    ("0.4.6", "ngram", None), ("0.4.6", "draft_model", None),  # no NGRAM or STANDALONE algorithm in 0.4
])
def test_sglang_0_4_caps_its_eagle_drafts(release, method, running):
    s = _drafted(release, method)
    assert (s.max_num_seqs == running) if running else s.max_num_seqs == _settings(release).max_num_seqs
    assert (s.running_note is not None) == bool(running)


def test_without_a_draft_the_default_holds():
    assert _settings("0.5.23").max_num_seqs not in (None, 48)


def test_the_running_requests_come_from_the_data():
    rule = memory_rule(CATALOG, "sglang", "0.5.23")
    changed = (DraftRunningCap(first_release="0.5.3", running_requests=32, sources=("mr-sglang-wheels-draft-running-requests",)),)
    s = _drafted("0.5.23", "ngram", rule=rule.model_copy(update={"running_requests_with_draft": changed}))
    assert s.max_num_seqs == 32
    s = _drafted("0.5.23", "ngram", rule=rule.model_copy(update={"running_requests_with_draft": ()}))
    assert s.max_num_seqs == _settings("0.5.23").max_num_seqs


def test_a_stated_max_num_seqs_wins():
    assert _settings("0.5.23", speculative_tokens=3, speculative_method="ngram", max_num_seqs=100).max_num_seqs == 100


def test_the_48_neither_lowers_the_graph_batch_nor_raises_the_fraction():
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
            cap = running_entry_at(rule.running_requests_with_draft, entry.first_release)
            assert (entry.draft_state.running_requests, entry.draft_state.running_requests_floor_per_rank) == \
                (cap.running_requests, cap.running_requests_floor_per_rank)
    assert hybrid_split_at(rule.hybrid_state_split, "0.5.23").draft_state.running_requests == 48


@pytest.mark.parametrize("release", ["0.5.3", "0.5.18", "0.5.22"])
def test_more_dp_attention_ranks_than_48_are_refused_before_the_floor(release):
    # 48 // 72 = 0 a rank: SGLang stops at start-up ("max_running_request is zero") before 0.5.23's max(1, ...)
    with pytest.raises(InvalidScenarioError) as e:
        _drafted(release, "ngram", data_parallel_size=72, enable_expert_parallel=True)
    assert e.value.field == "data_parallel_size" and "0.5.23 or later" in e.value.allowed
    assert _drafted(release, "ngram", data_parallel_size=48, enable_expert_parallel=True).max_num_seqs == 1
    assert _drafted(release, "ngram", data_parallel_size=72, enable_expert_parallel=True, max_num_seqs=2).max_num_seqs == 2


def test_from_0_5_23_each_of_72_ranks_runs_one_and_the_note_says_72():
    s = _drafted("0.5.23", "ngram", data_parallel_size=72, enable_expert_parallel=True)
    assert s.max_num_seqs == 1
    assert "at most 72 requests run at once (1 on each of 72 DP attention ranks)" in s.running_note


def test_deepseek_v4_runs_256_with_or_without_a_draft():
    # apply_deepseek_v4_defaults sets 256 before the speculative hook, which then leaves it (0.5.12 and later)
    w = dict(input_len=1024, output_len=256, concurrency=300)
    drafted = estimate(_v4(speculative_tokens=3), Workload(**w, speculative_tokens=3))
    assert drafted.running_per_instance == 256
    assert estimate(_v4(), Workload(**w)).running_per_instance == 256
    notes = fit(_v4()).assumptions
    assert any("--max-running-requests 256 itself for DeepseekV4ForCausalLM" in a for a in notes)
    older = estimate(_v4(speculative_tokens=3, engine_version="0.5.11"), Workload(**w, speculative_tokens=3))
    assert older.running_per_instance == 48


def test_deepseek_v4_divides_its_256_over_the_dp_attention_ranks():
    d = _v4(tensor_parallel_size=1, data_parallel_size=8, enable_expert_parallel=True, speculative_tokens=3)
    assert any("at most 256 requests run at once (32 on each of 8 DP attention ranks)" in a for a in fit(d).assumptions)


def test_a_search_or_plan_states_the_cap_the_release_runs_without_the_draft():
    from inferplan.memory.fit import verdict_plan
    from inferplan.memory.slots import with_draft_running_stated
    drafted = Deployment(model="deepseek-r1", gpu="b200", gpus=8, tensor_parallel_size=8, engine="sglang",
                         max_model_len=9216, mtp_draft=True, speculative_tokens=3)
    plain = drafted.model_copy(update={"mtp_draft": False, "speculative_tokens": 0})
    started = with_draft_running_stated(drafted, CATALOG)
    assert verdict_plan(drafted, CATALOG).settings.max_num_seqs == 48
    assert started.max_num_seqs == verdict_plan(plain, CATALOG).settings.max_num_seqs > 48
    # nothing to state: no draft, a stated cap, or an engine that sets none with a draft
    assert with_draft_running_stated(plain, CATALOG) is plain
    stated = drafted.model_copy(update={"max_num_seqs": 64})
    assert with_draft_running_stated(stated, CATALOG) is stated
    vllm = drafted.model_copy(update={"engine": "vllm"})
    assert with_draft_running_stated(vllm, CATALOG) is vllm


def test_a_plan_launches_a_drafted_sglang_cell_with_the_cap_it_states_and_says_so():
    from inferplan.economics.plan import plan
    from inferplan.economics.scenario import Scenario
    s = Scenario.model_validate(dict(
        name="ngram", model="llama-3.1-8b", engine="sglang", platform={"system": "hgx-h100"},
        workload={"preset": "chat-seat"}, speculative={"method": "ngram", "tokens": 3, "acceptance_rate": 0.5},
        target_users=100))
    cell = plan(s, CATALOG).capacity.cell
    assert cell.stated_max_num_seqs is not None and cell.stated_max_num_seqs > 48
    assert cell.engine_slots > 48 * cell.data_parallel_size
    assert any(a.startswith(f"launched with --max-running-requests {cell.stated_max_num_seqs:,}")
               for a in cell.assumptions)


def test_a_search_curve_of_a_drafted_sglang_deployment_runs_more_than_48():
    from inferplan.search.service import service_curve
    d = Deployment(model="deepseek-r1", gpu="b200", gpus=8, tensor_parallel_size=8, engine="sglang",
                   mtp_draft=True, speculative_tokens=3)
    w = Workload(input_len=1000, output_len=1000, speculative_tokens=3, acceptance_rate=0.7)
    assert service_curve(d, w, CATALOG).slots > 48


def test_a_hybrid_models_state_pool_keeps_the_releases_cap_with_a_draft():
    from inferplan.memory.slots import with_draft_running_stated
    d = Deployment(model="qwen3-next-80b-a3b", gpu="h100-sxm", gpus=4, tensor_parallel_size=4, engine="sglang",
                   max_model_len=32768, mtp_draft=True, speculative_tokens=3)
    assert with_draft_running_stated(d, CATALOG) is d


def test_sglangs_pool_default_is_at_most_a_hybrids_state_slots():
    r = fit(Deployment(model="qwen3-next-80b-a3b", gpu="h100-sxm", gpus=4, tensor_parallel_size=4, engine="sglang",
                       concurrency=3000), CATALOG)
    assert r.running_cap == r.state_running_cap == 142
    assert r.running_cap_flag == "--max-mamba-cache-size" and r.largest_context_tokens > 0
