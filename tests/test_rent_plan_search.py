"""``plan`` and ``search`` rent by one rule (``economics.rental``): each engine instance inside one rented
instance, whole instances paid for, at the median of the on-demand listings of that instance size;
and each answer says what the price is the median of."""

from __future__ import annotations

import statistics
import pytest
from fastapi.testclient import TestClient

from inferplan.units import HOURS_PER_MONTH
from inferplan.errors import InvalidScenarioError, LinkReachError
from inferplan.economics.plan import plan
from inferplan.economics.rental import hourly_usd, on_demand_listings, rent_engine_instances, rent_quotes
from inferplan.scenario import load_scenario
from inferplan.search.pricing import UnitCosts
from inferplan.shells.api import create_app

DSV3 = """name: DeepSeek-V3 on HGX B200, agents
model: deepseek-v3
quantization: fp8-block
engine: sglang
platform: {system: hgx-b200, price_point: mid}
workload: {preset: agent-worker}
target_users: 50
"""


@pytest.fixture(scope="module")
def dsv3(tmp_path_factory):
    path = tmp_path_factory.mktemp("rent") / "dsv3.yaml"
    path.write_text(DSV3)
    s = load_scenario(path)
    return s, plan(s)


def test_a_plan_of_8_gpu_loadouts_rents_8_gpu_instances_at_their_median_as_search_does(catalog, dsv3):
    """DeepSeek-V3 at TP8 on HGX B200: four 8-GPU engine instances. The B200 listings of 8-GPU
    instances (Lambda, CoreWeave) set the price, not the median of every B200 listing (1-GPU pods
    cannot hold a TP8 engine instance); 32 × $7.645 × 730 h = $178,587."""
    _, r = dsv3
    eight = [hourly_usd(x, 1.0) for x in catalog.rental_prices if x.accelerator == "b200" and x.gpus_per_instance == 8]
    every = [hourly_usd(x, 1.0) for x in catalog.rental_prices if x.accelerator == "b200"]
    assert len(eight) >= 2 and statistics.median(eight) != pytest.approx(statistics.median(every))
    assert r.capacity.cell.gpus == 8 and r.rented_instance_gpus == 8
    assert r.rented_instances == r.rented_cells and r.rented_cell_gpus == 8 and r.rented_users >= 50
    assert r.rent_usd_per_month == pytest.approx(r.rented_instances * 8 * statistics.median(eight) * HOURS_PER_MONTH)
    assert r.rental_listings == len(eight) and len(r.rental_ids) == len(eight) and r.rental in r.rental_ids
    assert r.rental_basis == f"median of {len(eight)} on-demand listings of 8-GPU instances"
    search_quote = UnitCosts(8, None, None, None, on_demand_listings(catalog, "b200", r.fx_usd_per_eur), ()).rents(8)
    assert min(q.usd_per_instance_month for q in search_quote) * r.rented_instances == pytest.approx(r.rent_usd_per_month)


def test_the_plan_api_and_its_card_name_the_rent_basis(catalog, dsv3, tmp_path):
    s, r = dsv3
    from inferplan.report.cards import plan_cards

    card = next(c for c in plan_cards(r) if c.key == "rent")
    assert card.note.endswith(f"; the {r.rental_basis}") and card.label == "Renting for the target / month"
    assert card.note.startswith(f"{r.rented_cells} replica cells of 8 GPUs (32 GPUs) on {r.rented_instances} rented 8-GPU")
    body = TestClient(create_app(tmp_path / "t.db")).post("/api/plan", json={"scenario": s.model_dump(mode="json"),
                                                                              "draws": 0})
    assert body.status_code == 200, body.text
    got = body.json()["result"]
    assert (got["rental_basis"], got["rental"], tuple(got["rental_ids"])) == (r.rental_basis, r.rental, r.rental_ids)
    rent_card = next(c for c in body.json()["cards"] if c["key"] == "rent")  # each listing of the median is cited
    cited = {n["source"] for n in rent_card["sources"]}
    assert {catalog.rental_prices.records[i].on_demand_usd_per_gpu_hour.source for i in r.rental_ids} <= cited


def test_the_cheapest_instance_size_that_holds_the_engine_instance_is_rented():
    listings = (("one-a", 1.0, 1), ("one-b", 3.0, 1), ("eight", 2.5, 8))
    one = rent_engine_instances(listings, 1, 3)  # 3 × 1-GPU at $2 median vs one 8-GPU instance at $2.5 × 8
    assert (one.quote.instance_gpus, one.instances, one.quote.listings) == (1, 3, ("one-a", "one-b"))
    assert one.usd_per_month == pytest.approx(3 * 2.0 * HOURS_PER_MONTH)
    many = rent_engine_instances(listings, 1, 16)  # 16 × $2 > 2 × 8 × $2.5? no: 32 < 40, still 1-GPU
    assert many.quote.instance_gpus == 1
    wide = rent_engine_instances(listings, 2, 5)  # a TP2 engine instance needs the 8-GPU host: 4 per instance
    assert (wide.quote.rental, wide.instances, wide.gpus_paid) == ("eight", 2, 16)
    assert wide.quote.basis == "on-demand price of eight (8-GPU instances)"
    assert rent_engine_instances(listings, 16, 1) is None and rent_quotes(listings, 16) == ()


def test_a_named_listing_that_cannot_hold_the_engine_instance_is_refused(dsv3):
    from inferplan.errors import InvalidScenarioError

    s, _ = dsv3
    pod = s.model_copy(update={"money": s.money.model_copy(update={"rental": "rent-runpod-b200-secure-unspecified"})})
    with pytest.raises(InvalidScenarioError) as e:
        plan(pod)
    assert e.value.field == "money.rental" and "rent-lambda-8x-b200-unspecified" in e.value.allowed


def test_a_search_pick_names_what_its_rent_is_the_median_of(catalog):
    from inferplan.search.request import SearchRequest
    from inferplan.search.run import search

    res = search(SearchRequest(models=("qwen3-8b",), request_rate_per_s=2.0, input_len=1000, output_len=200,
                               accelerators=("b200",), pricing="rent", engines=("vllm",), speculative=False,
                               disaggregated=False, top=2), catalog)
    assert res.results
    for pick in res.results:
        quote = next(q for q in rent_quotes(on_demand_listings(catalog, "b200", 1.0), pick.gpus_per_instance)
                     if q.instance_gpus == pick.rented_instance_gpus)
        assert (pick.rental, pick.rental_basis) == (quote.rental, quote.basis)
        assert pick.rental_basis.endswith(f"{pick.rented_instance_gpus}-GPU instances") and pick.rental_basis[:6] in (
            "median", "on-dem")


def test_a_replica_spanning_two_systems_is_not_priced_on_one_host_listings(catalog):
    """Llama 3.1 405B in BF16 needs two HGX H100s per replica: no listing rents 16 GPUs in one host,
    so the plan quotes no rent rather than pricing the GPUs one by one."""
    from inferplan.economics.scenario import Scenario

    s = Scenario.model_validate({"model": "llama-3.1-405b", "quantization": "bf16", "platform": {"system": "hgx-h100"},
                                 "workload": {"preset": "chat-seat"}, "target_users": 10})
    r = plan(s, catalog)
    assert r.capacity.cell.gpus > 8 and r.rent_usd_per_month is None and r.rental is None
    assert any("no on-demand listing hosts a replica cell of llama-3.1-405b" in a for a in r.assumptions)


def test_the_rent_vs_buy_break_even_counts_staff_on_both_routes(catalog):
    """Staff is paid whether the GPUs are rented or owned, as the recommendation counts it: 8 H100s at
    $2/GPU-hour ($11,680) against owning at $8,719.79 a month with $5,000 of staff on a $300,000 node:
    300,000 ÷ (11,680 + 5,000 − 8,719.79) = 37.7 months (staff on the owned side only gives 101.3)."""
    from inferplan.economics.scenario import Scenario

    s = Scenario.model_validate({
        "model": "gpt-oss-120b", "platform": {"system": "hgx-h100", "price_point": "low"},
        "workload": {"preset": "chat-seat"}, "target_users": 2000,
        "cell": {"data_parallel_size": 8, "enable_expert_parallel": True},
        "money": {"quote_multiplier": 2.0, "rent_usd_per_gpu_hour": 2.0, "staff_usd_per_month": 5000}})
    r = plan(s, catalog)
    assert (r.capex_usd, r.rent_usd_per_month) == (300_000, pytest.approx(11_680))
    assert r.modeled_monthly_operating_cost_usd == pytest.approx(8_719.79, abs=0.01)
    assert r.rent_vs_buy_break_even_months == pytest.approx(37.69, abs=0.01)
    assert r.recommendation.monthly_usd["rent dedicated capacity"] == pytest.approx(11_680 + 5_000)


def test_the_rent_route_rents_the_cells_the_target_needs_as_search_does(catalog):
    """2,000 chat seats of gpt-oss-120b: the owned HGX H100 packs one 8-GPU expert-parallel cell that
    carries over a hundred times the target (docs/economics.md's figure, pinned by
    test_docs_economics_figures), but one 1-GPU cell carries the target, so renting takes one 1-GPU instance
    at the median of the 1-GPU listings, the rent ``search --rent`` finds ($2,810.50, not the
    $40,179 of eight GPUs); owning never breaks even against that."""
    from pathlib import Path

    from inferplan.search.request import SearchRequest
    from inferplan.search.run import search

    r = plan(load_scenario(Path(__file__).parents[1] / "examples" / "chat-seats-h100.yaml"), catalog)
    assert r.capacity.cell.gpus == 8 and r.supported_users > 100 * r.target_users
    assert (r.rented_cells, r.rented_cell_gpus, r.rented_instances, r.rented_instance_gpus) == (1, 1, 1, 1)
    assert r.rented_users >= r.target_users
    pick = search(SearchRequest(models=("gpt-oss-120b",), users=2000, workload="chat-seat", accelerators=("h100-sxm",),
                                pricing="rent", objective="monthly", top=1), catalog).results[0]
    assert (pick.gpus_paid, pick.rental, pick.rental_basis) == (1, r.rental, r.rental_basis)
    assert r.rent_usd_per_month == pytest.approx(pick.monthly_usd) == pytest.approx(2810.5)
    assert r.rent_vs_buy_break_even_months is None  # renting costs less than owning's operating cost alone
    assert r.recommendation.monthly_usd["rent dedicated capacity"] < r.recommendation.monthly_usd["own"]


@pytest.mark.parametrize("cell", [
    {"tensor_parallel_size": 16},  # tensor parallelism past the PCIe server
    {"tensor_parallel_size": 1, "data_parallel_size": 16, "enable_expert_parallel": True},  # expert parallelism past it
])
def test_a_rented_cell_wider_than_the_hosts_links_is_skipped_not_refused(catalog, cell):
    """A 16-GPU rented L40S host whose cards share one 8-GPU PCIe server: the stated cell is wider than
    its links carry (``LinkReachError``), so renting it has no layout rather than refusing the plan."""
    from inferplan.economics.rent_route import CellSpace, _layouts
    from inferplan.economics.workloads import WorkloadOverrides, resolve_workload
    from inferplan.inputs.deployment import Deployment

    base = Deployment(model="qwen3-30b-a3b", gpu="l40s", gpus=16, engine="vllm", quantization="fp8", **cell)
    space = CellSpace(base, resolve_workload(catalog, WorkloadOverrides(preset="chat-seat")), "l40s", 16, True, None, None)
    assert _layouts(catalog, space, 16) == ()


def test_a_cell_the_model_cannot_split_over_is_refused_on_the_rent_route_too(catalog):
    """Not every tensor-parallel refusal is the links': a width the model's heads do not divide stays refused."""
    from inferplan.economics.rent_route import CellSpace, _layouts
    from inferplan.economics.workloads import WorkloadOverrides, resolve_workload
    from inferplan.inputs.deployment import Deployment

    base = Deployment(model="qwen3-30b-a3b", gpu="l40s", gpus=3, tensor_parallel_size=3, engine="vllm", quantization="fp8")
    space = CellSpace(base, resolve_workload(catalog, WorkloadOverrides(preset="chat-seat")), "l40s", 3, True, None, None)
    with pytest.raises(InvalidScenarioError, match="cannot split over 3") as refused:
        _layouts(catalog, space, 4)
    assert not isinstance(refused.value, LinkReachError)
