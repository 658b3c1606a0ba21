"""The catalogue prices a rented GB200 NVL72 instance within one listed host (CoreWeave's listing: a 4-GPU compute
tray, 144 vCPU, 960 GB RAM): renting refuses a wider engine instance, says only what the catalogue models (the
listing, named, and the host it prices) and what to do (buy the rack, as a ready command, or another engine or a
format that fits in 4 GPUs)."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from inferplan.search.reasons import largest_listing
from inferplan.search.request import SearchRequest
from inferplan.search.run import search
from inferplan.shells.cli import app

ASK = dict(models=("deepseek-r1",), users=100, workload="chat-seat", systems=("gb200-nvl72",), engines=("sglang",))
LISTING = "rent-coreweave-gb200-nvl72-na"


@pytest.fixture(scope="module")
def rented(catalog):
    return search(SearchRequest(**ASK, pricing="rent"), catalog)


def test_the_catalogue_rents_gb200_by_the_tray(catalog):
    listings = [r for r in catalog.rental_prices if r.accelerator in ("gb200", "gb300")]
    rack = catalog.system("gb200-nvl72")
    assert listings and all(r.gpus_per_instance == rack.os_host_gpus.value < rack.scale_up_domain_gpus for r in listings)


def test_a_wider_instance_is_refused_naming_the_tray_listing_and_the_rack_to_buy(rented):
    assert not rented.results
    (x,) = [x for x in rented.infeasible if x.reason == "price"]
    assert "engine instance of 8 GPUs" in x.message
    assert ("inferplan prices rented instances within one listed host (4-GPU trays for this listing, "
            f"{LISTING}); wider instances on a rented rack are not priced") in x.message
    assert "NVLink domain" not in x.message and "rents 4-GPU trays" not in x.message  # the rack is rented whole
    assert "buy the gb200-nvl72" in x.message
    assert "another engine or a weight format whose instance fits in 4 GPUs" in x.message
    s = rented.infeasible_summary
    assert "no rental listing hosts an engine instance" in s.cause
    assert [n.changes for n in s.next_steps] == [{"pricing": "buy"}, {"engines": None, "quantizations": None}]
    assert "gb200-nvl72" in s.next_steps[0].text and "fits in 4 GPUs" in s.next_steps[1].text


def test_the_other_engine_step_finds_an_instance_of_one_tray(catalog, rented):
    changes = {k: v for k, v in rented.infeasible_summary.next_steps[1].changes.items() if v is not None}
    asked = {k: v for k, v in ASK.items() if k not in rented.infeasible_summary.next_steps[1].changes}
    r = search(SearchRequest(**asked, **changes, pricing="rent"), catalog)
    assert r.results and all(d.gpus_per_instance <= 4 for d in r.results)


def test_the_buy_step_finds_instances_across_the_nvlink_domain(catalog, rented):
    bought = search(SearchRequest(**ASK, **rented.infeasible_summary.next_steps[0].changes), catalog)
    assert bought.results and max(d.gpus_per_instance for d in bought.results) > 4


def test_the_cli_prints_the_ready_command_to_buy():
    out = CliRunner().invoke(app, ["search", "--model", "deepseek-r1", "--users", "100", "--systems", "gb200-nvl72",
                                   "--engines", "sglang", "--rent"], env={"COLUMNS": "400"})
    assert out.exit_code == 0, out.output
    assert "inferplan search --model deepseek-r1 --users 100 --systems gb200-nvl72 --engines sglang --buy" in out.output


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
                                          "fewer GPUs in one host than an engine instance that meets the targets takes")


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
