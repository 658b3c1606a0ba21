"""A search pick with separate prefill and decode pools plans in the Users + ROI simulator with the users and
$/Mtok the search gave it: the replica cells are the decode pool, whose steps carry no prompt (the prefill pool
runs it and hands the KV cache over), in the plan as in the search."""

from __future__ import annotations

import pytest

from inferplan.economics.plan import plan
from inferplan.economics.scenario import Scenario
from inferplan.report.cards import plan_cards
from inferplan.search.request import SearchRequest
from inferplan.search.run import search

# the plan counts a decode cell's running requests in whole requests at the pick's own speed, where the search's
# mean running batch is fractional (one request per cell fewer at most), and reads the speed model at each batch,
# where the search reads its serving curve (``search.evaluate.CURVE_POINTS`` batches, linear between them)
CURVE = 0.05


@pytest.fixture(scope="module")
def pools(catalog):
    res = search(SearchRequest(models=("qwen3-8b",), request_rate_per_s=20.0, input_len=2000, output_len=500,
                               accelerators=("h100-sxm",), pricing="rent", engines=("trtllm", "vllm", "sglang"),
                               speculative=False, disaggregated=True, top=40), catalog)
    picks = [r for r in res.results if r.disaggregated]
    assert picks, "no pick with separate pools"
    return picks


def test_a_pools_pick_plans_to_its_users_and_cost_per_token(catalog, pools):
    for r in pools:
        s = Scenario.model_validate(r.scenario)
        assert s.prefill_pool is not None
        p = plan(s, catalog)
        assert p.rent_usd_per_month == pytest.approx(r.monthly_usd, rel=1e-9)
        running = p.capacity.cell.concurrency_at_target
        off = 1 / (running + 1) + CURVE
        assert p.served_users >= s.target_users * (1 - off), (r.rank, r.engine, p.served_users)
        assert p.rent_usd_per_mtok == pytest.approx(r.usd_per_mtok, rel=off), (r.rank, r.engine)
        assert any("decode pool" in a and "decode only" in a for a in p.assumptions)


def _stated(catalog, pools, replicas: int, prefill_instances: int):
    r = next(p for p in pools if p.engine == "trtllm")
    s = Scenario.model_validate(r.scenario)
    pool = s.prefill_pool.model_copy(update={"instances": prefill_instances})
    return plan(s.model_copy(update={"replicas": replicas, "prefill_pool": pool, "target_users": 100_000}), catalog)


def test_a_lone_prefill_instance_bounds_the_users_of_many_decode_cells(catalog, pools):
    p = _stated(catalog, pools, 40, 1)
    note = next(a for a in p.assumptions if "lone prompt takes" in a)
    assert "prefill pool binds" in " ".join(p.assumptions)
    # one instance keeps up with 1 / (a lone prompt's time × one user's prompts per second) users
    assert p.supported_users < 1_000 < _stated(catalog, pools, 40, 40).supported_users, note
    assert "prefill instance(s)" in next(a for a in p.assumptions if "by speed alone" in a)
    assert p.rented_users == p.supported_users  # the rent route carries what the prefill pool keeps up with
    assert p.capacity_users < p.supported_users + 1  # and so do the at-capacity figures


def test_the_plans_binding_is_the_prefill_pool_where_it_bounds_the_users(catalog, pools):
    lone, ample = _stated(catalog, pools, 40, 1), _stated(catalog, pools, 40, 40)
    assert lone.binding == "prefill pool" and lone.capacity.binding != "prefill pool"
    users = next(c for c in plan_cards(lone) if c.key == "users")
    assert "binding: the prefill pool (1 instance keeps up with" in users.note
    assert f"binding: {lone.capacity.binding}" not in users.note
    assert ample.binding == ample.capacity.binding  # 40 prefill instances keep up with the decode pool's users
    assert "binding: the prefill pool" not in next(c for c in plan_cards(ample) if c.key == "users").note


def test_decode_cells_note_no_prefix_cache_the_workload_lacks(catalog, pools):
    p = _stated(catalog, pools, 2, 2)
    assert not any(a.startswith("prefix cache: ") for a in p.assumptions)


def test_a_pools_pick_that_drafts_plans_its_prefill_pool_with_the_drafts(catalog):
    res = search(SearchRequest(models=("qwen3-8b",), request_rate_per_s=20.0, input_len=2000, output_len=500,
                               accelerators=("h100-sxm",), pricing="rent", engines=("vllm",), disaggregated=True,
                               top=40), catalog)
    picks = [r for r in res.results if r.disaggregated and r.speculative_tokens]
    assert picks, "no drafting pick with separate pools"
    for r in picks:  # the prefill instance's lone prompt is read with the cells' drafts, as the search reads it
        p = plan(Scenario.model_validate(r.scenario), catalog)
        assert p.rent_usd_per_month == pytest.approx(r.monthly_usd, rel=1e-9)
        assert p.rent_usd_per_mtok == pytest.approx(r.usd_per_mtok, rel=1 / (p.capacity.cell.concurrency_at_target + 1) + CURVE)


def test_a_drafting_pools_pick_plans_its_prefill_pool_without_drafts(catalog):
    """A prefill instance drafts nothing: the search runs a drafting decode cell's prompts on a prefill layout
    without drafts (``evaluate.prefill_partners``), as it does a plain decode cell's, and the simulator runs them
    so. The plan of each drafting pick's scenario times a lone prompt as the plan of the plain pick on that prefill
    layout does, so its prefill pool keeps up with as many users; and it holds the search's prefill instances."""
    res = search(SearchRequest(models=("qwen3-8b",), systems=("hgx-h100",), engines=("vllm",), request_rate_per_s=4.0,
                               input_len=1500, output_len=300, speculative=True, top=50), catalog)
    pooled = [r for r in res.results if r.disaggregated]
    key = lambda r: (r.quantization, r.kv_cache_dtype, repr(r.scenario["prefill_pool"]))  # noqa: E731  the prefill pool
    plain = {key(r): r for r in pooled if not r.speculative_tokens}
    drafting = [r for r in pooled if r.speculative_tokens and r.speculative_method == "eagle3" and key(r) in plain]
    assert drafting, "no EAGLE-3 pick with separate pools beside a plain one on its prefill layout"
    for r in drafting:
        p = plan(Scenario.model_validate(r.scenario), catalog)
        twin = plan(Scenario.model_validate(plain[key(r)].scenario), catalog)
        assert p.prefill_instances == r.prefill_instances == r.simulate["prefill_instances"], r.rank
        assert r.simulate["deployment"]["eagle3_draft"] and r.pools[0].speculative_tokens == 0
        assert p.prefill_users == twin.prefill_users, (r.rank, p.prefill_users, twin.prefill_users)
