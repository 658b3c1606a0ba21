"""The cells a rented deployment's paid instances hold: whole cells per instance (no cell spans two), beside a
prefill pool on instances of its own where a width does not divide the instance; the notes name them where they
are more than the target's cells, and say "at your rate" where nothing is rented by the instance."""

from __future__ import annotations

from inferplan.economics.plan import plan
from inferplan.economics.pools import InstanceShape, PrefillSizing
from inferplan.economics.rent_route import _Cells
from inferplan.economics.rental import RentedEngines, RentQuote
from inferplan.economics.scenario import Scenario
from inferplan.report.cards import plan_cards


def _qwen(system: str, **extra) -> Scenario:
    return Scenario.model_validate({"model": "qwen3-8b", "engine": "vllm", "platform": {"system": system},
                                    "workload": {"preset": "chat-seat"}, "rented": True, **extra})


def _note(r) -> str:
    return next(a for a in r.assumptions if "another machine than the owned loadout" in a)


def test_a_rented_instances_notes_name_the_cells_it_holds(catalog):
    """Two 8-GPU MI355X servers owned, one rented 8-GPU instance (every MI355X listing rents eight): one TP1 cell
    carries the 3,000 users and the instance paid for holds eight, whose users are the at-capacity users: the
    notes say so, not whole-user rounding nor the one cell's users."""
    r = plan(Scenario.model_validate({"model": "qwen3-8b", "engine": "vllm", "platform": {"gpu": "mi355x", "gpus": 16},
                                      "workload": {"preset": "chat-seat"}, "rented": True, "target_users": 3_000}),
             catalog)
    assert (r.rented_cells, r.rented_held_cells, r.rented_instances, r.rented_instance_gpus) == (1, 8, 1, 8)
    assert r.capacity_users > 3 * r.supported_users
    card = next(c for c in plan_cards(r) if c.key == "cost_per_mtok_at_capacity").note
    assert "those of the 8 cells the paid instances hold" in card and "count whole users" not in card
    note = _note(r)
    assert "its at-capacity users those of the 8 cells the paid instances hold" in note
    assert "supported, served and at-capacity users" not in note


def test_a_rented_rack_is_the_owned_rack(catalog):
    """A GB200 NVL72 rented as CoreWeave rents it, a whole rack of 18 trays in one NVLink domain, is the machine a
    buyer owns: its users are the loadout's, and no note calls it another machine."""
    r = plan(_qwen("gb200-nvl72", target_users=3_000), catalog)
    owned = plan(_qwen("gb200-nvl72", target_users=3_000, rented=False), catalog)
    assert (r.rented_instances, r.rented_held_cells) == (18, 72) and not r.users_on_rented_cells
    assert (r.supported_users, r.capacity_users) == (owned.supported_users, owned.capacity_users)
    assert not any("another machine than the owned loadout" in a for a in r.assumptions)


def test_at_your_rate_the_note_rents_no_instance(catalog):
    r = plan(_qwen("hgx-h100", target_users=20_000, money={"rent_usd_per_gpu_hour": 4.0}), catalog)
    note = _note(r)
    assert r.rented_instances is None and "GPU(s) at your rate per GPU-hour" in note
    assert "rented instance" not in note


def _rented(instances: int, instance_gpus: int = 8) -> RentedEngines:
    return RentedEngines(RentQuote("made-up", 1.0, instance_gpus, 3, "made-up listing"), instances, 1.0)


def test_cells_a_width_that_does_not_divide_the_instance_holds():
    """3-GPU cells on made-up 8-GPU instances: two per instance, not 16 // 3 = 5 on two instances; beside an
    8-GPU prefill instance, which takes an instance of its own, two instances hold four."""
    cells = _Cells(gpus=3, cells=1, users=10, per_cell_users=10.0)
    assert cells.held(_rented(2)) == 4
    pool = PrefillSizing(instances=1, shape=InstanceShape(gpus=8), systems=1, one_host=False, prompt_s=1.0,
                         user_request_rate_per_s=0.001)
    beside = _Cells(gpus=3, cells=1, users=10, prefill=pool, per_cell_users=10.0)
    assert beside.held(_rented(3)) == 4


def test_cells_a_rented_rack_holds_beside_a_prefill_pool():
    """Racks of 18 made-up 4-GPU trays one NVLink domain spans: beside one 8-GPU prefill cell a rack holds eight
    8-GPU cells (72 GPUs), not two trays' worth; 16-GPU cells pack four to the rack, three beside a 16-GPU prefill
    cell, seven on two racks."""
    def rack(racks: int, width: int) -> RentedEngines:
        q = RentQuote("made-up", 1.0, 4, width, "made-up listing", min_instances=18, nvlink_spans=True)
        return RentedEngines(q, 18 * racks, 1.0)

    def pool(width: int) -> PrefillSizing:
        return PrefillSizing(instances=1, shape=InstanceShape(gpus=width), systems=1, one_host=False, prompt_s=1.0,
                             user_request_rate_per_s=0.001)

    assert _Cells(gpus=8, cells=2, users=10, prefill=pool(8), per_cell_users=10.0).held(rack(1, 8)) == 8
    sixteen = _Cells(gpus=16, cells=1, users=10, prefill=pool(16), per_cell_users=10.0)
    assert (sixteen.held(rack(1, 16)), sixteen.held(rack(2, 16))) == (3, 7)
