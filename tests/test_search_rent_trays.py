"""CoreWeave rents a GB200 NVL72 only as whole racks of 18 4-GPU trays, one NVLink domain each
(rent-coreweave-docs-gb200-instances, rent-coreweave-docs-imex-overview): renting pays for every tray of the rack,
an engine instance wider than a tray but within the rack is rented, not refused, and launches as the rack's command;
search, plan and its rent route agree on the figures."""

from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from inferplan.economics import money
from inferplan.economics.plan import plan
from inferplan.economics.rental import on_demand_listings, rent_quotes, rented_note
from inferplan.economics.scenario import Scenario
from inferplan.search.reasons import largest_listing
from inferplan.search.request import SearchRequest
from inferplan.search.run import search
from inferplan.shells.cli import app

ASK = dict(models=("deepseek-r1",), users=100, workload="chat-seat", systems=("gb200-nvl72",), engines=("sglang",))
LISTING = "rent-coreweave-gb200-nvl72-na"
RACK_USD_PER_MONTH = 18 * 42.0 * money.HOURS_PER_MONTH  # the $42/h tray, 18 to a rack


@pytest.fixture(scope="module")
def rented(catalog):
    return search(SearchRequest(**ASK, pricing="rent"), catalog)


def test_the_catalogue_rents_gb200_by_the_rack_of_trays(catalog):
    (listing,) = [r for r in catalog.rental_prices if r.accelerator in ("gb200", "gb300")]
    rack = catalog.system("gb200-nvl72")
    assert listing.gpus_per_instance == rack.os_host_gpus.value == 4 and listing.set_instances == 18
    assert listing.nvlink_spans_rental and listing.host_gpus == rack.scale_up_domain_gpus == 72
    assert listing.min_instances.source == "rent-coreweave-docs-gb200-instances"
    assert all(r.set_instances == 1 and not r.nvlink_spans_rental for r in catalog.rental_prices if r is not listing)


def test_renting_pays_for_whole_racks(catalog):
    """One cell of 1, 8 or 72 GPUs rents one rack of 18 trays; 19 such cells rent 1, 3 and 19 racks; none is
    wider than the rack's NVLink domain."""
    (q,) = rent_quotes(on_demand_listings(catalog, "gb200", 1.0), 8)
    assert (q.instance_gpus, q.min_instances, q.host_gpus) == (4, 18, 72)
    assert [(q.instances(1, w), q.instances(19, w)) for w in (1, 8, 72)] == [(18, 18), (18, 54), (18, 342)]
    assert q.instances(1, 1) * q.usd_per_instance_month == pytest.approx(RACK_USD_PER_MONTH)
    assert rent_quotes(on_demand_listings(catalog, "gb200", 1.0), 73) == ()


def test_an_instance_wider_than_a_tray_is_rented_on_the_rack(rented):
    assert rented.results and not [x for x in rented.infeasible if x.reason == "price"]
    d = rented.results[0]
    assert d.gpus_per_instance > 4 and (d.rented_instances, d.rented_instance_gpus, d.gpus_paid) == (18, 4, 72)
    assert d.monthly_usd == pytest.approx(RACK_USD_PER_MONTH)
    assert any("rented in whole sets of 18 instances (72 GPUs in one NVLink domain)" in n for n in d.notes)


def test_search_and_plan_agree_on_the_rented_rack(catalog, rented):
    """The plan of the same load rents the same rack at the same monthly cost and cost per million tokens."""
    d = rented.results[0]
    r = plan(Scenario.model_validate({"model": "deepseek-r1", "engine": "sglang", "platform": {"system": "gb200-nvl72"},
                                      "workload": {"preset": "chat-seat"}, "target_users": 100, "rented": True}), catalog)
    assert (r.rental, r.rented_instances, r.rented_instance_gpus) == (LISTING, 18, 4)
    assert r.rent_usd_per_month == pytest.approx(d.monthly_usd)
    assert r.rent_usd_per_mtok == pytest.approx(d.usd_per_mtok)


def test_a_rented_instance_wider_than_a_tray_launches_as_the_racks_command(rented):
    d = next(d for d in rented.results if d.gpus_per_instance > 4 and not d.disaggregated)
    hosts = d.gpus_per_instance // 4
    assert f"host 0 of {hosts}" in d.deploy and f"host {hosts - 1} of {hosts}" in d.deploy


def test_the_cli_rents_the_rack():
    out = CliRunner().invoke(app, ["search", "--model", "deepseek-r1", "--users", "100", "--systems", "gb200-nvl72",
                                   "--engines", "sglang", "--rent", "--json"], env={"COLUMNS": "400"})
    assert out.exit_code == 0, out.output
    assert '"rented_instances": 18' in out.output and LISTING in out.output


def test_a_listing_as_wide_as_the_system_is_said_as_an_instance(catalog):
    hgx = catalog.system("hgx-b200")
    said = largest_listing((("a", 8.6, 8), ("b", 5.0, 1)), "b200", hgx)
    assert said == "the largest b200 listing (a) rents 8-GPU instances"


def test_bare_gpus_whose_listings_are_too_narrow_are_not_said_to_have_none(catalog):
    """Every RTX 5090 listing rents one GPU: Qwen3 32B in FP8 on two is refused for the listing's width."""
    r = search(SearchRequest(models=("qwen3-32b",), request_rate_per_s=0.5, input_len=1000, output_len=200,
                             accelerators=("rtx-5090",), pricing="rent", engines=("vllm",), quantizations=("fp8",),
                             speculative=False, disaggregated=False), catalog)
    assert not r.results
    assert r.infeasible_summary.cause == ("renting bare rtx-5090 GPUs cannot be priced: their rental listings rent "
                                          "fewer GPUs in one host (or one NVLink domain) than an engine instance that meets the targets takes")


def test_the_buy_step_for_narrow_listings_offers_only_systems_that_hold_the_instance(catalog):
    """The RTX 5090 workstation holds one GPU, the refused instance takes two: buying it would find nothing, so
    it is not offered; every systems step offered finds a deployment when run."""
    ask = dict(models=("qwen3-32b",), request_rate_per_s=0.5, input_len=1000, output_len=200, engines=("vllm",),
               quantizations=("fp8",), speculative=False, disaggregated=False)
    r = search(SearchRequest(**ask, accelerators=("rtx-5090",), pricing="rent"), catalog)
    assert not r.results and min(x.unrented_gpus or 99 for x in r.infeasible) == 2
    offered = [n.changes for n in r.infeasible_summary.next_steps if n.changes.get("systems")]
    assert all("rtx-5090-workstation" not in c["systems"] for c in offered)
    for c in offered:
        assert search(SearchRequest(**ask, **{k: v for k, v in c.items() if v is not None}), catalog).results


@pytest.mark.parametrize(("extra", "said"), [
    ({"nvlink_spans_rental": True}, "nvlink_spans_rental needs min_instances of at least 2"),
    ({"min_instances": {"value": 1.5, "kind": "spec", "source": "s"}}, "not a whole number of instances"),
    ({"min_instances": {"value": 18, "kind": "spec", "source": "s"}, "nvlink_spans_rental": True}, "go together"),
    ({"min_instances": {"value": 18, "kind": "spec", "source": "s"},
      "unavailable_instances_per_set": {"value": 18, "kind": "spec", "source": "s"}}, "below min_instances"),
])
def test_a_listings_rental_set_is_validated(extra, said):
    from pydantic import ValidationError

    from inferplan.catalog.economics_schema import RentalPrice

    base = {"id": "x", "provider": "p", "region": "r", "instance": "i", "accelerator": "gb200", "gpus_per_instance": 4,
            "on_demand_usd_per_gpu_hour": {"value": 10.5, "unit": "USD", "kind": "spec", "source": "s"}}
    with pytest.raises(ValidationError, match=said):
        RentalPrice.model_validate({**base, **extra})


def test_the_api_shows_the_rented_racks_figures_as_plan_does(tmp_path, catalog):
    from fastapi.testclient import TestClient

    from inferplan.shells.api import create_app

    scenario = {"model": "deepseek-r1", "engine": "sglang", "platform": {"system": "gb200-nvl72"},
                "workload": {"preset": "chat-seat"}, "target_users": 100, "rented": True}
    r = plan(Scenario.model_validate(scenario), catalog)
    answer = TestClient(create_app(tmp_path / "a.db")).post("/api/plan", json={"scenario": scenario, "draws": 0})
    assert answer.status_code == 200, answer.text
    body = answer.text
    assert f"{r.rent_usd_per_month:,.0f}" in body and "rented as 18 4-GPU instances (72 GPUs paid for)" in body


def test_each_rented_pick_plans_as_its_own_scenario(catalog, rented):
    """A pick's scenario (the web page's "use this") is the rented rack, not one tray: plan takes it as it is."""
    assert rented.results
    for d in rented.results:
        assert d.scenario["platform"] == {"system": "gb200-nvl72"}
        r = plan(Scenario.model_validate(d.scenario), catalog)
        assert r.rented


def test_separate_pools_pack_whole_cells_into_the_rented_rack(catalog):
    """Cells of widths that do not divide the rack's 72 GPUs still share a rack, whole cells packed into it: a
    16-GPU prefill cell beside three 16-GPU decode cells (64 GPUs) rents one rack, also where the hand-over needs
    one rack; two 32-GPU cells beside a 16-GPU one (80 GPUs) rent two."""
    (q,) = rent_quotes(on_demand_listings(catalog, "gb200", 1.0), 16)
    assert q.pool_instances(1, 16, 3, 16) == 18
    assert q.pools_month(1, 16, 3, 16, True) == (18, pytest.approx(RACK_USD_PER_MONTH))
    assert (q.pool_instances(1, 64, 1, 8), q.pool_instances(1, 8, 1, 64), q.pool_instances(2, 32, 1, 16)) == (18, 18, 36)
    assert list(q.pool_instances(np.array([5, 0, 9]), 16, np.array([0, 2, 0]), 8)) == [36, 18, 54]


def test_a_rented_rack_is_said_to_be_a_whole_rack():
    """A pick and a trade-off point rented as whole racks are whole racks in the JSON, as bought ones are."""
    out = CliRunner().invoke(app, ["search", "--model", "deepseek-r1", "--users", "100", "--systems", "gb200-nvl72",
                                   "--engines", "sglang", "--rent", "--json"], env={"COLUMNS": "400"})
    answer = json.loads(out.output)
    assert answer["results"] and all(d["whole_rack"] and d["rented_instances"] for d in answer["results"])
    assert answer["pareto"] and all(p["whole_rack"] for p in answer["pareto"])


def test_a_cell_across_the_whole_rented_rack_is_said_to_stop_for_maintenance(catalog):
    """CoreWeave asks workloads to tolerate two of a rack's trays down for maintenance
    (rent-coreweave-docs-gb200-instances): the listing says so, and so does the rented note of a 72-GPU cell, which
    spans trays the rack may hold down; an 8-GPU cell's does not."""
    (listing,) = [r for r in catalog.rental_prices if r.accelerator == "gb200"]
    assert listing.nvlink_spans_rental_source == "rent-coreweave-docs-imex-overview"
    assert listing.unavailable_instances_per_set.value == 2
    assert listing.unavailable_instances_per_set.source == "rent-coreweave-docs-gb200-instances"
    assert any("two unavailable instances per rack for maintenance" in n for n in listing.notes)
    said = "tolerate 2 of a set's instances down for maintenance, and an engine instance of 72 GPUs spans more"
    notes = [rented_note(rent_quotes(on_demand_listings(catalog, "gb200", 1.0), w)[0], 18) for w in (8, 72)]
    assert said not in notes[0] and said in notes[1]
