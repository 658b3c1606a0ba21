"""SGLang's state pool for a hybrid model with a speculative draft: each running request's intermediate state
per verified token (catalog/hybrid_split.py DraftStateSolve, memory/state_pool.py; the split entries'
draft_state in engine_memory_rules.yaml)."""

import dataclasses
import datetime as dt

import pytest

from inferplan.catalog.hybrid_split import DraftStateSolve, HybridStateSplit, hybrid_split_at
from inferplan.catalog.loader import load_catalog
from inferplan.catalog.memory_rules import memory_rule
from inferplan.catalog.registry import Registry
from inferplan.errors import InvalidScenarioError
from inferplan.inputs.deployment import Deployment
from inferplan.memory.fit import fit
from inferplan.memory.state_pool import DraftPlan, draft_plan, state_pool
from inferplan.units import GiB

MiB = 2**20
CATALOG = load_catalog()
DRAFT = DraftStateSolve(running_requests=48, verified_over_drafts=1, verified_over_drafts_by_method={"ngram": 0})


def _split(padding: bool) -> HybridStateSplit:
    return HybridStateSplit(first_release="0.5.13", state_to_kv_ratio=0.9, padding_slot=padding, state_slots_per_request=3,
                            extra_buffer_slots=2, extra_buffer_architectures=("Qwen3NextForCausalLM",), draft_state=DRAFT,
                            sources=("x",), checked=dt.date(2026, 12, 7), kind="spec")


def test_the_draft_solve_with_the_padding_slot():
    # 0.5.23 memory_budget_spec: budget = 10 GiB x 0.9 / 1.9 = 4,850.53 MiB; D = 4, ratio 5;
    # K = (budget - 10 x (1 + 4)) // (10 x (1 + 4/5)) = 4,800.53 // 18 = 266; capped = min(48, 266 // 5) = 48;
    # intermediate (48 + 1) x 4 x 10 = 1,960 MiB; state (266 + 1) x 10 = 2,670 MiB; KV room 10,240 - both
    pool = state_pool(_split(True), 10 * GiB, 10 * MiB, "Qwen3NextForCausalLM", draft=DraftPlan(4, 48))
    assert pool.slots == 266
    assert pool.draft_state_bytes_per_gpu == 1960 * MiB
    assert pool.state_bytes_per_gpu == 2670 * MiB
    assert pool.kv_pool_bytes_per_gpu == (10240 - 2670 - 1960) * MiB
    assert pool.running_cap == 53


def test_the_draft_solve_without_the_padding_slot():
    # 0.5.13: K = budget // (10 x (1 + 4/3)) = 4,850.53 // 23.33 = 207; capped = min(48, 69) = 48;
    # intermediate 48 x 4 x 10 = 1,920 MiB; state 207 x 10 = 2,070 MiB
    pool = state_pool(_split(False), 10 * GiB, 10 * MiB, "NemotronHForCausalLM", draft=DraftPlan(4, 48))
    assert pool.slots == 207
    assert pool.draft_state_bytes_per_gpu == 1920 * MiB
    assert pool.kv_pool_bytes_per_gpu == (10240 - 2070 - 1920) * MiB


def test_the_verified_tokens_are_the_drafts_plus_one_except_ngram():
    entry = hybrid_split_at(memory_rule(CATALOG, "sglang").hybrid_state_split, "0.5.23")
    assert entry.draft_state.verified_tokens(3, "mtp") == 4
    assert entry.draft_state.verified_tokens(3, "ngram") == 3


def _qwen3_next(version: str | None = None, **more) -> Deployment:
    return Deployment(model="qwen3-next-80b-a3b", accelerator="h100-sxm", engine="sglang", tensor_parallel_size=4,
                      max_model_len=32768, engine_version=version, speculative_tokens=3, speculative_method="ngram", **more)


def test_a_draft_on_a_hybrid_model_is_planned_from_the_releases_solve():
    r = fit(_qwen3_next())
    tp = 4
    s, per_tok = r.state_bytes_per_sequence / tp, r.kv_cache_bytes_per_token / tp
    budget = r.kv_cache_bytes_per_gpu * 0.9 / 1.9
    slots = int((budget - s * 4) // (s * (1 + 3 / 5)))
    intermediate = (min(48, slots // 5) + 1) * 3 * s
    assert r.state_slots == slots
    assert r.kv_cache_tokens == int((r.kv_cache_bytes_per_gpu - (slots + 1) * s - intermediate) // per_tok)
    assert any("intermediate state for 3 verified tokens" in a for a in r.assumptions)


def test_the_draft_solve_follows_the_data():
    """The running requests the release reserves intermediate state for are read from the entry."""
    rules = {r.id: r.model_copy(update={"hybrid_state_split": tuple(
        h.model_copy(update={"draft_state": h.draft_state and h.draft_state.model_copy(update={"running_requests": 8})})
        for h in r.hybrid_state_split)}) for r in CATALOG.memory_rules}
    unwired = fit(_qwen3_next(), dataclasses.replace(CATALOG, memory_rules=Registry("memory rules", rules)))
    assert unwired.kv_cache_tokens > fit(_qwen3_next()).kv_cache_tokens
    assert unwired.state_slots == fit(_qwen3_next()).state_slots


def test_a_draft_at_a_release_whose_solve_is_not_read_is_refused():
    with pytest.raises(InvalidScenarioError) as e:
        fit(_qwen3_next("0.5.6"))
    assert e.value.field == "speculative_tokens" and "0.5.13" in e.value.allowed


def test_a_draft_refusal_names_the_planned_release():
    with pytest.raises(InvalidScenarioError) as e:
        fit(_qwen3_next("0.5.10"))
    assert "SGLang 0.5.10" in str(e.value) and "0.5.4" not in str(e.value)
    assert e.value.allowed == "0 (no draft), or draft tokens under SGLang 0.5.13 or later"


def test_a_named_draft_without_draft_tokens_asks_for_them_where_the_release_solves_it():
    with pytest.raises(InvalidScenarioError) as e:
        fit(Deployment(model="qwen3.5-397b-a17b", accelerator="h100-sxm", engine="sglang", tensor_parallel_size=8,
                       engine_version="0.5.23", mtp_draft=True))
    assert "SGLang 0.5.23" in str(e.value)
    assert e.value.field == "speculative_tokens" and e.value.allowed == "state speculative_tokens N (the draft tokens)"


@pytest.mark.parametrize("release, per_rank", [("0.5.13", 0), ("0.5.18", 0), ("0.5.23", 1)])
def test_the_running_requests_per_rank_are_floored_at_one_from_0_5_23(release, per_rank):
    # the 48 set with a draft over 64 DP attention ranks: 48 // 64 = 0 as 0.5.13 and 0.5.18 divide, max(1, 0) at 0.5.23
    entry = hybrid_split_at(memory_rule(CATALOG, "sglang").hybrid_state_split, release)
    plan = draft_plan(entry, _qwen3_next(release), None, ranks=64)
    assert plan.running_requests_per_rank == per_rank


@pytest.mark.parametrize("release", ["0.5.13", "0.5.18", "0.5.23"])
def test_a_stated_running_cap_is_each_ranks(release):
    # max_num_seqs 2 on each of 4 ranks: deploy writes --max-running-requests 8, which SGLang divides back to 2
    entry = hybrid_split_at(memory_rule(CATALOG, "sglang").hybrid_state_split, release)
    assert draft_plan(entry, _qwen3_next(release, max_num_seqs=2), None, ranks=4).running_requests_per_rank == 2
