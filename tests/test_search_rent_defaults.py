"""What a search pays and assumes: rent in whole listing instances, each engine instance inside one;
the default utilisation ceiling with no TTFT target; the prefix-cache share echoed; every pick's notes
and launch command under the human table."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from pydantic import ValidationError
from typer.testing import CliRunner

from inferplan.units import HOURS_PER_MONTH
from inferplan.inputs.deployment import Deployment
from inferplan.inputs.workload import Workload
from inferplan.search.defaults import search_defaults
from inferplan.search.pricing import UnitCosts
from inferplan.search.request import SearchRequest, Targets
from inferplan.search.run import search
from inferplan.search.simulation import SimulationQuery, simulate_deployment
from inferplan.shells.api import create_app
from inferplan.shells.cli import app

runner = CliRunner()
RATE = dict(models=("qwen3-8b",), request_rate_per_s=2.0, input_len=1000, output_len=200)


def _costs(*listings) -> UnitCosts:
    return UnitCosts(gpus=1, power_w=None, capex_usd=None, owner_usd_per_month=None, listings=tuple(listings), notes=())


def test_a_multi_gpu_listing_is_rented_whole_and_hosts_engines_up_to_its_size():
    """CoreWeave's GB200 listing is a 4-GPU instance at $42/h: one engine instance of 1 GPU still pays
    for 4 GPUs, four of them share one instance, and an 8-GPU engine instance fits in none."""
    (quote,) = _costs(("rent-4gpu", 10.5, 4)).rents(1)
    assert quote.instance_gpus == 4 and quote.usd_per_instance_month == pytest.approx(42.0 * HOURS_PER_MONTH)
    assert [int(quote.instances(n)) for n in (1, 4, 5)] == [1, 1, 2]
    assert _costs(("rent-4gpu", 10.5, 4)).rents(8) == ()


def test_the_rent_median_is_over_the_listings_of_an_instance_size_that_hosts_the_engine_instance():
    costs = _costs(("one-a", 1.0, 1), ("one-b", 2.0, 1), ("one-c", 9.0, 1), ("eight", 5.0, 8))
    one, eight = costs.rents(1)
    assert (one.instance_gpus, one.usd_per_gpu_hour, one.rental) == (1, 2.0, "one-b")  # the middle of three
    assert (eight.instance_gpus, eight.usd_per_gpu_hour) == (8, 5.0)
    (wide,) = costs.rents(2)  # a TP2 engine instance: the 1-GPU listings cannot host it
    assert wide.rental == "eight" and wide.instance_gpus == 8


def test_a_search_on_a_4_gpu_listing_rented_by_the_rack_pays_for_whole_racks(catalog):
    """CoreWeave's 4-GPU GB200 tray is rented only in racks of 18: every pick pays for whole racks, and an engine
    instance may span the rack's 72 GPUs."""
    res = search(SearchRequest(**RATE, accelerators=("gb200",), pricing="rent", engines=("vllm",), speculative=False,
                               disaggregated=False, top=5), catalog)
    assert res.results
    for r in res.results:
        assert r.rented_instance_gpus == 4 and r.rented_instances % 18 == 0 and r.gpus_paid == 4 * r.rented_instances >= r.gpus
        assert r.monthly_usd == pytest.approx(r.rented_instances * 42.0 * HOURS_PER_MONTH)
        assert r.platform == f"{r.gpus_paid}x-gb200" and r.gpus_per_instance <= 72


def test_a_tp2_layout_is_never_priced_from_one_gpu_listings(catalog):
    """Every RTX 5090 listing rents one GPU; Qwen3 32B in FP8 needs two, which one host must hold."""
    res = search(SearchRequest(models=("qwen3-32b",), request_rate_per_s=0.5, input_len=1000, output_len=200,
                               accelerators=("rtx-5090",), pricing="rent", engines=("vllm",), quantizations=("fp8",),
                               speculative=False, disaggregated=False, top=5), catalog)
    assert all(r.gpus_per_instance == 1 for r in res.results)
    priced = [x for x in res.infeasible if x.reason == "price"]
    assert priced and all("1-GPU instance" in x.message and "share a host" in x.message for x in priced)


def test_with_no_ttft_target_the_default_utilisation_ceiling_holds_and_is_said(catalog):
    ceiling = search_defaults().max_utilisation
    assert ceiling.kind == "assumed" and 0 < ceiling.value < 1 and ceiling.reason
    req = SearchRequest(**RATE, systems=("hgx-h100",), engines=("vllm",), targets=Targets(tpot_p95_s=0.05), top=5)
    res = search(req, catalog)
    assert res.targets.max_utilisation == ceiling.value
    assert res.results and all(r.utilisation <= ceiling.value for r in res.results)
    assert any(f"utilisation ≤ {ceiling.value:g} (assumed" in n for n in res.notes)
    stated = search(req.model_copy(update={"targets": Targets(tpot_p95_s=0.05, max_utilisation=0.3)}), catalog)
    assert stated.targets.max_utilisation == 0.3 and all(r.utilisation <= 0.3 for r in stated.results)
    assert not any("assumed" in n and "utilisation" in n for n in stated.notes)
    timed = search(req.model_copy(update={"targets": Targets(ttft_p95_s=5, tpot_p95_s=0.05)}), catalog)
    assert timed.targets.max_utilisation is None


@pytest.mark.parametrize("value", [0, -0.1, 1.01])
def test_a_bad_utilisation_ceiling_is_refused_naming_the_field(value):
    with pytest.raises(ValidationError, match="max_utilisation"):
        Targets(max_utilisation=value)
    r = runner.invoke(app, ["search", "--model", "qwen3-8b", "--request-rate", "1", "--input-len", "100",
                            "--output-len", "10", "--max-utilisation", str(value)])
    assert r.exit_code == 2 and "--max-utilisation" in r.output


def test_the_api_refuses_a_bad_utilisation_ceiling_by_its_json_path(tmp_path):
    client = TestClient(create_app(tmp_path / "t.db"))
    body = {"models": ["qwen3-8b"], "request_rate_per_s": 1, "input_len": 100, "output_len": 10,
            "targets": {"max_utilisation": 1.5}}
    r = client.post("/api/search", json=body)
    assert r.status_code == 422 and r.json()["detail"][0]["loc"] == ["body", "targets", "max_utilisation"]
    ok = client.post("/api/search", json={**body, "systems": ["hgx-h100"], "engines": ["vllm"], "top": 2,
                                          "targets": {"max_utilisation": 0.5}, "prefix_cache_hit_rate": 0.25})
    assert ok.status_code == 200, ok.text
    data = ok.json()
    assert data["targets"]["max_utilisation"] == 0.5 and data["load"]["prefix_cache_hit_rate"] == 0.25
    assert all(r["utilisation"] <= 0.5 for r in data["results"]) and any("25%" in n for n in data["notes"])


def test_the_presets_prefix_cache_share_is_said_and_can_be_changed(catalog):
    base = dict(models=("qwen3-8b",), users=20, workload="coding-developer-median", systems=("hgx-h100",),
                engines=("vllm",), top=1)
    res = search(SearchRequest(**base), catalog)
    assert res.load.prefix_cache_hit_rate == 0.9
    assert any(n.startswith("prefix cache: 90% of prompt tokens assumed") and "coding-developer-median" in n
               for n in res.notes)
    none = search(SearchRequest(**base, prefix_cache_hit_rate=0.0), catalog)
    assert none.load.prefix_cache_hit_rate == 0.0 and any("0% of prompt tokens served from cache (stated)" in n
                                                          for n in none.notes)
    assert none.results[0].ttft_p50_s > res.results[0].ttft_p50_s


def test_simulate_says_the_presets_prefix_cache_share_and_a_stated_one_wins():
    d = Deployment(model="qwen3-8b", gpu="h100-sxm", gpus=1, max_model_len=20_000)
    q = SimulationQuery(deployment=d, users=5, workload_preset="coding-developer-median", requests=300)
    preset = simulate_deployment(q)
    assert preset.prefix_cache_hit_rate == 0.9 and "assumed" in preset.notes[0]
    stated = simulate_deployment(q.model_copy(update={"workload": Workload(prefix_cache_hit_rate=0.0)}))
    assert stated.prefix_cache_hit_rate == 0.0 and "(stated)" in stated.notes[0]
    assert stated.simulation.ttft_p50_s > preset.simulation.ttft_p50_s


def test_the_human_search_prints_each_picks_notes_and_launch_commands_within_the_width():
    args = ["search", "--model", "qwen3-8b", "--systems", "hgx-h100", "--engines", "vllm", "--request-rate", "2",
            "--input-len", "1000", "--output-len", "200", "--top", "2", "--deploy"]
    data = runner.invoke(app, [*args, "--json"], env={"COLUMNS": "80"})
    picks = __import__("json").loads(data.stdout)["results"]
    r = runner.invoke(app, args, env={"COLUMNS": "80"})
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    for pick in picks:
        assert f"#{pick['rank']} notes" in lines and f"#{pick['rank']} launch" in lines
        # each command line as the shell reads it: its parts joined by their continuations give it back whole
        joined = "\n".join(lines).replace(" \\\n    ", " ")
        assert all(line in joined.splitlines() for line in pick["deploy"].splitlines())
        said = " ".join(" ".join(lines).split())
        assert all(" ".join(n.split()) in said for n in pick["notes"])
    # past the width only a line that is one flag and its value (a --speculative-config JSON), never broken
    assert all(len(line) <= 80 or line.strip(" \\").count(" --") == 0 for line in lines)


@pytest.mark.parametrize(("monthly_usd", "shown"), [
    (0.068, "$0.0680"), (0.0004, "$0.000400"), (2.5, "$2.50"), (9.999, "$10.00"), (2313.4, "$2,313")])
def test_an_api_bill_of_cents_is_printed_to_its_digits_not_as_nothing(monthly_usd, shown):
    from inferplan.report.search_view import api_text
    from inferplan.search.result import ApiAlternative

    assert api_text(ApiAlternative(id="a", provider="p", usd_per_mtok=0.1, monthly_usd=monthly_usd)).endswith(f"{shown}/month")


def test_a_system_sold_only_names_its_price_against_the_capex_cap_when_buy_or_rent_is_searched(catalog):
    """tinybox-red-v2 has no rental listing: under the default buy-or-rent search its family is a
    purchase, so a capex cap it passes is the budget reason with both figures."""
    res = search(SearchRequest(models=("qwen3-8b",), users=5, systems=("tinybox-red-v2",), max_capex_usd=5000,
                               engines=("llamacpp",), quantizations=("gguf-q4_k_m",)), catalog)
    reasons = [f for f in res.infeasible if f.reason == "budget"]
    assert reasons and all("to buy; the cap is $5,000" in f.message for f in reasons)
