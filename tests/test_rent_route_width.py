"""The rent route rents the owned loadout's width where a cell that wide meets the speed target, else the
wider cells a listing holds, saying so; an Ollama server rents the instance size that costs least, one
server per instance; stated replicas are cells of a layout that meets the speed target."""

from __future__ import annotations

import pytest

from inferplan.economics import money
from inferplan.economics.plan import plan
from inferplan.economics.scenario import Scenario
from inferplan.report.cards import plan_cards


def _scenario(model: str, gpus: int, target_tok_s: float, **extra) -> Scenario:
    return Scenario.model_validate({
        "model": model, "platform": {"gpu": "h100-sxm", "gpus": gpus, "quote_usd_per_system": 120000},
        "workload": {"preset": "chat-seat", "target_output_tokens_per_s": target_tok_s}, **extra})


def _rent_note(r) -> str:
    return next(a for a in r.assumptions if a.startswith("rent"))


@pytest.mark.parametrize("money", [{}, {"rental": "rent-aws-p5.48xlarge-us-east-1"}])
def test_a_target_no_cell_as_narrow_as_the_loadout_meets_rents_the_wider_cells_a_listing_holds(catalog, money):
    """bf16 llama-3.3-70b at 60 output tok/s per user: no TP4 cell meets it, a TP8 cell on an 8-GPU instance does."""
    s = _scenario("llama-3.3-70b", 4, 60, quantization="bf16", engine="vllm", money=money)
    r = plan(s, catalog)
    assert r.rented_cell_gpus == 8 and r.rented_instance_gpus == 8
    assert r.rented_users >= s.target_users and r.rent_usd_per_month > 0
    note = _rent_note(r)
    assert "wider than the owned loadout of 4 GPUs" in note and "8-GPU cells" in note
    assert "no on-demand listing hosts" not in note


def test_a_cell_as_narrow_as_the_loadout_is_rented_where_one_meets_the_target(catalog):
    r = plan(_scenario("llama-3.3-70b", 4, 50, quantization="bf16", engine="vllm"), catalog)
    assert r.rented_cell_gpus == 4 and "wider" not in _rent_note(r)


def test_an_ollama_server_on_one_gpu_rents_a_one_gpu_instance(catalog):
    r = plan(_scenario("qwen3:32b", 1, 5), catalog)
    assert (r.rented_cells, r.rented_cell_gpus, r.rented_instances, r.rented_instance_gpus) == (1, 1, 1, 1)
    assert r.rent_usd_per_month == pytest.approx(2810.5)


@pytest.mark.parametrize("money", [{}, {"rent_usd_per_gpu_hour": 2.0}])
def test_stated_replicas_are_cells_that_carry_users(catalog, money):
    r = plan(_scenario("llama-3.3-70b", 4, 50, quantization="fp8", engine="vllm", replicas=3, money=money), catalog)
    assert r.rented_cells == 3 and r.rented_users > 0


@pytest.mark.parametrize("rented", [False, True])
def test_the_same_gpus_carry_the_same_users_owned_or_rented(catalog, rented):
    """DeepSeek-V3 on one HGX H200: a TP8 cell and an expert-parallel DP8 cell both rent as one 8-GPU instance;
    at the same price the rent route takes the one carrying more users, as the owned loadout does."""
    s = Scenario.model_validate({"model": "deepseek-v3", "platform": {"system": "hgx-h200"},
                                 "workload": {"preset": "chat-seat"}, "target_users": 20000, "rented": rented})
    r = plan(s, catalog)
    assert (r.loadouts, r.rented_cells, r.rented_cell_gpus, r.rented_instances) == (1, 1, 8, 1)
    assert r.rented_users == r.supported_users


def test_pools_over_several_trays_of_a_rack_rent_as_the_whole_rack(catalog):
    """GB200 NVL72 on CoreWeave: one OS host, the instance the listing prices, is a 4-GPU tray, but the trays are
    rented only as whole racks of 18, one NVLink domain each; pools over three trays rent as the rack, every tray
    paid for."""
    s = Scenario.model_validate({
        "model": "deepseek-v3", "engine": "vllm", "platform": {"system": "gb200-nvl72"},
        "workload": {"preset": "chat-seat"}, "target_users": 20000, "rented": True,
        "cell": {"tensor_parallel_size": 4}, "replicas": 2,
        "prefill_pool": {"instances": 1, "cell": {"tensor_parallel_size": 4}}})
    r = plan(s, catalog)
    assert (r.rented_instances, r.rented_instance_gpus, r.rented_cells, r.rented_cell_gpus) == (18, 4, 2, 4)
    assert r.rent_usd_per_month == pytest.approx(18 * 42.0 * money.HOURS_PER_MONTH)


def test_a_rented_rack_runs_the_owned_racks_cell_and_launches_its_command(catalog):
    """GB200 NVL72 rented: an engine instance may span the rented rack's NVLink domain, so the target's cell is the
    72-GPU one a buyer runs, on the same machine: the same users, the rack's 18 trays paid for, the rack's command."""
    from inferplan.search.deploying import plan_launch

    s = Scenario.model_validate({"model": "deepseek-v3", "platform": {"system": "gb200-nvl72"},
                                 "workload": {"preset": "chat-seat"}, "target_users": 20000, "rented": True})
    r = plan(s, catalog)
    owned = plan(s.model_copy(update={"rented": False}), catalog)
    assert (r.rented_cell_gpus, r.rented_instances, r.rented_instance_gpus) == (72, 18, 4) == (
        owned.capacity.cell.gpus, 18, 4)
    assert r.supported_users == owned.supported_users and not r.users_on_rented_cells
    assert r.rent_usd_per_month == pytest.approx(18 * 42.0 * money.HOURS_PER_MONTH)
    assert r.rent_usd_per_mtok == pytest.approx(r.rent_usd_per_month / (r.served_users * r.workload.monthly_tokens / 1e6))
    assert not any("another machine than the owned loadout" in a for a in r.assumptions)
    text = plan_launch(catalog, s, r).text
    assert text == plan_launch(catalog, s, owned).text and "--data-parallel-size 72" in text and "host 0 of 18" in text


def test_rented_cells_of_the_owned_width_on_the_owned_system_carry_the_loadouts_users(catalog):
    """llama-3.3-70b fp8 on HGX H100 for 100,000 users: the target needs fewer TP4 cells than the two owned 8-GPU
    loadouts hold, yet the rented 8-GPU instances hold the same 4 TP4 cells, the same machine: the loadouts' users."""
    s = Scenario.model_validate({"model": "llama-3.3-70b", "quantization": "fp8", "engine": "vllm",
                                 "platform": {"system": "hgx-h100"}, "workload": {"preset": "chat-seat"},
                                 "target_users": 100000, "rented": True})
    r = plan(s, catalog)
    owned = plan(s.model_copy(update={"rented": False}), catalog)
    assert (r.rented_instance_gpus, r.rented_cell_gpus, r.capacity.cell.gpus) == (8, 4, 4)
    assert r.rented_cells < owned.loadouts * owned.capacity.cells
    assert (r.supported_users, r.capacity_users) == (owned.supported_users, owned.capacity_users)
    assert not any("another machine" in a for a in r.assumptions) and not r.users_on_rented_cells


@pytest.mark.parametrize("scenario", [
    {"model": "gpt-oss-120b", "platform": {"system": "hgx-h100"}, "target_users": 2000}])
def test_a_rented_plan_on_another_machine_says_which_figures_stay_the_owned_loadouts(catalog, scenario):
    """A 1-GPU instance rented for an 8-GPU loadout: the users are the rented cells', while the
    GPUs, users per loadout and replica cell (its memory and speed) stay the owned loadout's, and the note says so."""
    s = Scenario.model_validate({**scenario, "workload": {"preset": "chat-seat"}, "rented": True})
    r = plan(s, catalog)
    owned = plan(s.model_copy(update={"rented": False}), catalog)
    assert r.supported_users == r.rented_users != owned.supported_users
    assert (r.gpus, r.users_per_loadout, r.capacity) == (owned.gpus, owned.users_per_loadout, owned.capacity)
    note = next(a for a in r.assumptions if "another machine than the owned loadout" in a)
    assert "launch command is a rented cell's" in note and "users per loadout, replica cell (its memory and speed)" in note
    assert "stay the owned loadout's" in note
    assert r.users_on_rented_cells and not owned.users_on_rented_cells
    cards = {c.key: c for c in plan_cards(r)}
    assert cards["users"].note.startswith("the rented cells' (") and "owning: " in cards["users"].note
    assert "what owning would run" in cards["loadouts"].note and "rented cells full" in cards["cost_per_mtok_at_capacity"].note
