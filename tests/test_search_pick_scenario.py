"""A search pick's ``scenario`` plans in the Users + ROI simulator as the search priced it: the same
systems (or rented instances), capex and monthly cost, at the search's users, load and speed target."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from inferplan.economics.plan import plan
from inferplan.economics.scenario import Scenario
from inferplan.search.request import SearchRequest, Targets
from inferplan.search.run import search
from inferplan.shells.api import create_app

ASPECTS = dict(models=("qwen3-8b",), engines=("vllm",), disaggregated=False, speculative=False, top=3)


def _owned_month(p) -> float:
    return p.modeled_monthly_operating_cost_usd + p.capex_usd / (p.amortization_years * 12)


def _same_as_the_pick(r, p) -> None:
    if r.rent_or_buy == "buy":
        assert (p.systems, p.capex_usd) == (r.systems, pytest.approx(r.capex_usd, rel=1e-9))
        assert _owned_month(p) == pytest.approx(r.monthly_usd, rel=1e-9)
        if p.served_users == p.target_users:  # the plan's speed model carries the whole load: the same $/Mtok
            assert p.owner_cost_usd_per_mtok == pytest.approx(r.usd_per_mtok, rel=1e-9)
    else:  # a renter's month is the rent: no power or colocation on top, and the pick's $/Mtok
        assert p.rented_instances == r.rented_instances and p.rented
        assert p.rent_usd_per_month == pytest.approx(r.monthly_usd, rel=1e-9)
        assert p.modeled_monthly_operating_cost_usd == pytest.approx(r.monthly_usd, rel=1e-9)
        assert (p.monthly_costs.power_usd, p.monthly_costs.colocation_usd, p.monthly_costs.support_usd) == (0, 0, 0)
        assert p.operating_break_even_usd_per_user_month == pytest.approx(r.monthly_usd / p.served_users, rel=1e-9)
        assert p.monthly_operating_cash_usd == pytest.approx(p.monthly_billing_usd - r.monthly_usd, rel=1e-9)
        assert p.simple_payback_months is None and p.target_payback_usd_per_user_month is None
        if p.served_users == p.target_users:
            assert p.rent_usd_per_mtok == pytest.approx(r.usd_per_mtok, rel=1e-9)
            assert p.owner_cost_usd_per_mtok == pytest.approx(r.usd_per_mtok, rel=1e-9)
    assert p.capacity.cell.gpus == r.gpus_per_instance


@pytest.fixture(scope="module")
def bought(catalog):
    """500 chat-seat users at 20 tok/s each, where the preset asks for more: the stated speed must reach the plan."""
    req = SearchRequest(**ASPECTS, users=500, workload="chat-seat", systems=("hgx-h100", "tinybox-green-v2"),
                        pricing="buy", targets=Targets(ttft_p95_s=2.0, min_output_tokens_per_s_per_user=20))
    return search(req, catalog)


def test_a_bought_pick_plans_to_its_systems_capex_and_cost(catalog, bought):
    assert bought.results
    for r in bought.results:
        s = Scenario.model_validate(r.scenario)
        assert s.workload.target_output_tokens_per_s == 20 and s.target_users == 500
        assert s.replicas == r.replicas and not s.rented
        _same_as_the_pick(r, plan(s, catalog))


def test_a_pick_plans_with_its_running_cap(catalog, bought):
    """The pick's cell runs at most its ``max_num_seqs`` per rank, as its launch states: the plan's cell has that
    many engine slots, runs no more requests than that, and its launch command states the cap."""
    from inferplan.report.views import PlanRequest, plan_view

    for r in bought.results:
        s = Scenario.model_validate(r.scenario)
        assert s.cell.max_num_seqs == r.max_num_seqs_per_rank
        cell = plan(s, catalog).capacity.cell
        assert cell.engine_slots == r.max_num_seqs_per_rank * r.data_parallel_size
        assert cell.concurrency_at_target <= cell.engine_slots
    first = bought.results[0]
    launch = plan_view(PlanRequest(scenario=first.scenario, draws=0), catalog).deploy
    assert f"--max-num-seqs {first.max_num_seqs_per_rank} " in launch


def test_a_capped_cells_memory_is_its_fit_at_that_cap(catalog):
    """The memory card, its summary and /api/views/memory of a cell started with ``max_num_seqs`` are ``fit`` at
    that cap, as the cell's sizing and launch are: a cap of 16 leaves vLLM more KV cache than its own 1,024."""
    from inferplan.inputs.deployment import Deployment
    from inferplan.memory.fit import fit
    from inferplan.report.views import PlanRequest, memory_view, plan_view

    s = Scenario.model_validate({"model": "llama-3.1-70b-instruct", "quantization": "fp8",
                                 "platform": {"system": "hgx-h100"}, "cell": {"tensor_parallel_size": 1, "max_num_seqs": 16}})
    view = plan_view(PlanRequest(scenario=s, draws=0), catalog)
    d = dict(model=s.model, gpu="h100-sxm", quantization="fp8", tensor_parallel_size=1, gpus=1,
             max_model_len=view.memory.max_model_len)
    capped, own = fit(Deployment(**d, max_num_seqs=16), catalog), fit(Deployment(**d), catalog)
    assert capped.kv_cache_bytes_per_gpu > own.kv_cache_bytes_per_gpu
    for memory in (view.memory, memory_view(s, catalog).memory):
        assert memory.kv_cache_bytes_per_gpu == capped.kv_cache_bytes_per_gpu
        assert memory.total_max_concurrency == capped.total_max_concurrency
    assert int(capped.total_max_concurrency) == view.result.capacity.cell.kv_max_concurrency
    assert f"{capped.total_max_concurrency:,.1f} requests of" in view.memory_summary


def test_a_prefill_pool_states_no_running_cap(tmp_path):
    """A prefill instance is launched with the engine's own cap (deploy/pools_plan.py): a stated one, 0 included, is
    refused at its key, with what is allowed there (left out), not the cell's keys."""
    from pydantic import ValidationError

    client = TestClient(create_app(tmp_path / "t.db"))
    for cap in (8, 0):
        pick = {"model": "qwen3-8b", "platform": {"system": "hgx-h100"}, "cell": {"tensor_parallel_size": 4}, "replicas": 2,
                "prefill_pool": {"instances": 1, "cell": {"tensor_parallel_size": 2, "max_num_seqs": cap}}}
        with pytest.raises(ValidationError, match="leave out max_num_seqs"):
            Scenario.model_validate(pick)
        error = client.post("/api/plan", json={"scenario": pick, "draws": 0}).json()["error"]
        assert error["field"] == "scenario.prefill_pool.cell.max_num_seqs", error
        assert error["allowed"] == "left out: the engine's own cap", error


def test_a_prefill_instance_is_checked_at_the_engines_own_cap_not_the_decode_cells(catalog):
    """The decode cell's cap (4,096 here: its per-sequence sampler memory leaves TP 1 no room beside 70B fp8 weights)
    is no prefill instance's: one is launched with the engine's own cap and is checked to fit as launched."""
    s = Scenario.model_validate({
        "model": "llama-3.1-70b-instruct", "quantization": "fp8", "platform": {"system": "hgx-h100"},
        "cell": {"tensor_parallel_size": 4, "max_num_seqs": 4096}, "replicas": 1,
        "prefill_pool": {"instances": 1, "cell": {"tensor_parallel_size": 1}}})
    p = plan(s, catalog)
    assert p.capacity.cell.stated_max_num_seqs == 4096 and p.systems == 1


def test_a_rented_pick_without_a_purchase_price_plans_on_its_rent_route(catalog):
    res = search(SearchRequest(**ASPECTS, users=100, workload="chat-seat", accelerators=("h100-sxm",), pricing="rent",
                               targets=Targets(ttft_p95_s=2.0)), catalog)
    bare = [r for r in res.results if r.system is None]
    assert bare, "no rented bare-GPU pick"
    for r in bare:
        s = Scenario.model_validate(r.scenario)
        assert s.rented
        p = plan(s, catalog)
        _same_as_the_pick(r, p)
        assert p.capex_usd is None and "not priced to own" in p.capex_basis
        assert "own" not in p.recommendation.monthly_usd


def test_a_systems_gpu_rented_alone_plans_as_that_gpu_not_the_whole_system(catalog):
    """Qwen3-235B-A22B for 3,000 chat seats on an HPE XD685 (8 × B200) rented: one TP1 cell on one 1-GPU
    instance, labelled 1x-b200. Its scenario is one B200, so the simulator shows that GPU, not the 8-GPU system
    and its capex, and plans the same instance and rent."""
    res = search(SearchRequest(models=("qwen3-235b-a22b",), users=3000, workload="chat-seat", systems=("hpe-xd685",),
                               engines=("llamacpp",), quantizations=("gguf-q4_k_m",), pricing="rent", top=1,
                               disaggregated=False, speculative=False), catalog)
    r = res.results[0]
    assert (r.platform, r.rented_instance_gpus, r.system) == ("1x-b200", 1, "hpe-xd685")
    assert r.scenario["platform"] == {"gpu": "b200", "gpus": 1}
    p = plan(Scenario.model_validate(r.scenario), catalog)
    assert p.system == "1x-b200" and p.gpus_per_system == 1
    assert (p.rental, p.rented_instance_gpus) == (r.rental, r.rented_instance_gpus)
    _same_as_the_pick(r, p)


def test_a_request_rate_search_plans_as_its_load(catalog):
    res = search(SearchRequest(**ASPECTS, request_rate_per_s=4.0, input_len=1500, output_len=300,
                               systems=("hgx-h100", "tinybox-green-v2"), targets=Targets(ttft_p95_s=1.5)), catalog)
    assert res.results
    for r in res.results:
        s = Scenario.model_validate(r.scenario)
        p = plan(s, catalog)
        _same_as_the_pick(r, p)
        # the load's month of tokens and its lengths, not a preset's users
        assert p.workload.monthly_tokens * s.target_users == pytest.approx(res.load.monthly_tokens, rel=1e-9)
        assert (p.workload.input_tokens_per_request, p.workload.output_tokens_per_request) == (1500, 300)


def test_api_plan_of_a_pick_scenario_matches_the_pick(catalog, bought, tmp_path):
    r = bought.results[0]
    body = TestClient(create_app(tmp_path / "t.db")).post("/api/plan", json={"scenario": r.scenario, "draws": 0})
    assert body.status_code == 200, body.text
    out = body.json()["result"]
    assert (out["systems_per_loadout"] * out["loadouts"], out["capex_usd"]) == (r.systems, pytest.approx(r.capex_usd))
    assert (out["stated_replicas"], out["workload"]["target_output_tokens_per_s"]) == (r.replicas, 20)
    card = next(c for c in body.json()["cards"] if c["key"] == "loadouts")
    assert card["label"].startswith("Loadouts holding the") and card["value"] == str(out["loadouts"])


def test_the_monte_carlo_of_a_pick_keeps_its_loadouts(catalog, bought):
    from inferplan.economics.uncertainty import simulate

    """Stated replica cells are the loadouts every draw prices, even where far fewer would carry the users."""
    s = Scenario.model_validate({**bought.results[0].scenario, "replicas": 3 * bought.results[0].replicas})
    p = plan(s, catalog)
    assert p.loadouts > 1 and p.capacity.supported_users > 10 * p.target_users  # one loadout would carry them
    u = simulate(p, s, draws=500, catalog=catalog)
    assert u.loadouts.p10 == u.loadouts.p90 == p.loadouts


POOLS = dict(models=("qwen3-8b",), engines=("vllm",), speculative=False, top=200, request_rate_per_s=4.0, input_len=1500,
             output_len=300, targets=Targets(ttft_p95_s=1.5, ttft_p99_s=3.0, tpot_p95_s=0.04, e2e_p95_s=20))


@pytest.fixture(scope="module")
def pools_bought(catalog):
    return search(SearchRequest(**POOLS, systems=("hgx-h100",), pricing="buy"), catalog)


@pytest.fixture(scope="module")
def pools_rented(catalog):
    return search(SearchRequest(**POOLS, accelerators=("h100-sxm",), pricing="rent"), catalog)


@pytest.mark.parametrize("found", ["pools_bought", "pools_rented"])
def test_a_disaggregated_pick_plans_to_both_pools_systems_capex_cost_and_usd_per_mtok(catalog, found, request):
    """The scenario states the prefill pool beside the decode pool's replicas, so ``plan`` prices both: the same
    systems, capex, monthly cost and $/Mtok bought, the same rented instances and rent rented."""
    res = request.getfixturevalue(found)
    pools = [r for r in res.results if r.disaggregated]
    assert pools, "no disaggregated pick"
    monthly = lambda p: p.rent_usd_per_month if p.capex_usd is None else _owned_month(p)  # noqa: E731
    dearer = 0
    for r in pools:
        s = Scenario.model_validate(r.scenario)
        assert (s.prefill_pool.instances, s.replicas) == (r.prefill_instances, r.decode_instances)
        assert s.prefill_pool.cell.tensor_parallel_size == r.pools[0].tensor_parallel_size
        p = plan(s, catalog)
        _same_as_the_pick(r, p)
        assert p.served_users == p.target_users  # the decode pool carries the load
        if r.rent_or_buy == "rent":
            assert p.rent_usd_per_month / (res.load.monthly_tokens / 1e6) == pytest.approx(r.usd_per_mtok, rel=1e-9)
        assert any("prefill pool" in n and "decode pool" in n for n in p.assumptions)
        dearer += monthly(p) > monthly(plan(s.model_copy(update={"prefill_pool": None}), catalog)) * (1 + 1e-9)
    assert dearer, "no pick whose prefill pool takes systems or instances of its own"


def test_api_plan_of_a_rented_pick_shows_the_renters_month_and_the_picks_usd_per_mtok(catalog, pools_rented, tmp_path):
    """``/api/plan`` and its cards (the page renders them) price a rented pick as its renter pays."""
    r = next(r for r in pools_rented.results if r.rent_or_buy == "rent")
    body = TestClient(create_app(tmp_path / "t.db")).post("/api/plan", json={"scenario": r.scenario, "draws": 500})
    assert body.status_code == 200, body.text
    out = body.json()["result"]
    assert out["rented"] and out["served_users"] == out["target_users"]
    assert out["modeled_monthly_operating_cost_usd"] == pytest.approx(r.monthly_usd, rel=1e-9)
    assert out["rent_usd_per_mtok"] == pytest.approx(r.usd_per_mtok, rel=1e-9)
    assert out["operating_break_even_usd_per_user_month"] == pytest.approx(r.monthly_usd / out["served_users"], rel=1e-9)
    cards = {c["key"]: c for c in body.json()["cards"]}
    assert cards["operating_cost"]["value"] == f"${r.monthly_usd:,.0f}" and "includes power" in cards["operating_cost"]["note"]
    assert cards["operating_cost"]["sources"] == cards["rent"]["sources"] != []  # the rental listings it rests on
    assert cards["break_even"]["value"] == f"${r.monthly_usd / out['served_users']:,.2f}"
    assert cards["cost_per_mtok"]["label"].startswith("Rented cost") and cards["cost_per_mtok"]["value"] == f"${r.usd_per_mtok:,.3f}"
    assert f"${r.usd_per_mtok:,.3f} per million tokens" in cards["rent"]["note"]
    assert body.json()["uncertainty"] is None  # nothing owned to draw


def test_api_plan_of_a_disaggregated_pick_prices_both_pools(pools_bought, tmp_path):
    r = next(r for r in pools_bought.results if r.disaggregated and r.systems > 1)
    body = TestClient(create_app(tmp_path / "t.db")).post("/api/plan", json={"scenario": r.scenario, "draws": 0})
    assert body.status_code == 200, body.text
    out = body.json()["result"]
    assert (out["prefill_instances"], out["stated_replicas"]) == (r.prefill_instances, r.decode_instances)
    assert (out["loadouts"] + out["prefill_systems"], out["capex_usd"]) == (r.systems, pytest.approx(r.capex_usd, rel=1e-9))
    card = next(c for c in body.json()["cards"] if c["key"] == "loadouts")
    assert f"prefill pool of {r.prefill_instances} instance" in card["note"]


@pytest.mark.parametrize("pool, field", [
    ({"instances": 0, "cell": {"tensor_parallel_size": 1}}, "prefill_pool.instances"),
    ({"instances": 2}, "prefill_pool.cell"),
    ({"instances": 2, "cell": {"tensor_parallel_size": 1}, "gpus": 3}, "prefill_pool.gpus"),
    ({"instances": 2, "cell": {"data_parallel_size": 2}}, "prefill_pool.cell"),
])
def test_a_bad_prefill_pool_is_refused_naming_its_key(pool, field):
    from inferplan.errors import InvalidScenarioError
    from inferplan.scenario import parse_scenario
    import yaml

    text = yaml.safe_dump({"model": "qwen3-8b", "platform": {"system": "hgx-h100"}, "cell": {"tensor_parallel_size": 2},
                           "replicas": 2, "prefill_pool": pool})
    with pytest.raises(InvalidScenarioError) as err:
        parse_scenario(text)
    assert err.value.field == field


def test_a_prefill_pool_needs_the_decode_pool_stated_and_a_layout_that_fits(catalog):
    from pydantic import ValidationError

    from inferplan.errors import InvalidScenarioError

    with pytest.raises(ValidationError) as err:
        Scenario.model_validate({"model": "qwen3-8b", "platform": {"system": "hgx-h100"}, "cell": {},
                                 "prefill_pool": {"instances": 1, "cell": {}}})
    assert err.value.errors()[0]["loc"] == ("prefill_pool",) and "`replicas`" in err.value.errors()[0]["msg"]
    wide = Scenario.model_validate({"model": "qwen3-8b", "platform": {"gpu": "h100-sxm", "gpus": 2}, "cell": {"tensor_parallel_size": 2},
                                    "replicas": 1, "prefill_pool": {"instances": 1, "cell": {"tensor_parallel_size": 4}}})
    with pytest.raises(InvalidScenarioError) as refused:
        plan(wide, catalog)
    assert refused.value.field == "prefill_pool.cell"


def test_the_monte_carlo_of_separate_pools_draws_the_prefill_pools_systems_too(catalog):
    """Each draw prices both pools' systems: its median owner cost sits by the plan's, not at the decode pool's alone."""
    from inferplan.economics.uncertainty import simulate

    s = Scenario.model_validate({"model": "qwen3-8b", "platform": {"system": "hgx-h100"}, "cell": {"tensor_parallel_size": 4},
                                 "replicas": 2, "prefill_pool": {"instances": 3, "cell": {"tensor_parallel_size": 2}},
                                 "workload": {"preset": "chat-seat"}, "target_users": 500})
    p = plan(s, catalog)
    assert (p.loadouts, p.prefill_systems, p.systems) == (1, 1, 2)
    u = simulate(p, s, draws=2000, catalog=catalog)
    assert u.owner_cost_usd_per_mtok.p50 == pytest.approx(p.owner_cost_usd_per_mtok, rel=0.1)
