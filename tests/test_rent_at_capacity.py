"""A rented plan's at-capacity figures price the GPUs paid for: at your rate per GPU-hour the rented cells' GPUs,
on a rented rack of trays the cells its paid instances hold, whatever the target (stated cells: those)."""

from __future__ import annotations

import pytest

from inferplan.economics import money
from inferplan.economics.plan import plan
from inferplan.economics.scenario import Scenario
from inferplan.report.cards import plan_cards


def _qwen(system: str, **extra) -> Scenario:
    return Scenario.model_validate({"model": "qwen3-8b", "engine": "vllm", "platform": {"system": system},
                                    "workload": {"preset": "chat-seat"}, "rented": True, **extra})


def test_at_your_rate_the_at_capacity_cost_counts_the_gpus_rented(catalog):
    """One TP1 cell carries the 20,000 users: its one GPU is rented at $4 an hour, so at capacity the plan prices
    that GPU's users, not the 8-GPU system's."""
    r = plan(_qwen("hgx-h100", target_users=20_000, money={"rent_usd_per_gpu_hour": 4.0}), catalog)
    assert (r.rented_cells, r.rented_cell_gpus) == (1, 1)
    assert r.rent_usd_per_month == pytest.approx(4.0 * money.HOURS_PER_MONTH)
    assert r.users_on_rented_cells and r.rented_users <= r.capacity_users < r.rented_users + 1
    assert r.owner_cost_usd_per_mtok_at_capacity == pytest.approx(
        r.rent_usd_per_month / (r.capacity_users * r.workload.monthly_tokens / 1e6), rel=1e-6)


def test_a_rented_racks_users_at_capacity_are_the_cells_it_holds_whatever_the_target(catalog):
    """GB200 NVL72 rented as one rack of 18 4-GPU trays (CoreWeave rents no fewer): the rack holds 72 TP1 cells at
    capacity, for a target one cell carries, two cells carry, or with the TP1 cell stated."""
    plans = [plan(_qwen("gb200-nvl72", target_users=t, **x), catalog)
             for t, x in ((3_000, {}), (100_000, {}), (3_000, {"cell": {"tensor_parallel_size": 1}}))]
    for r in plans:
        assert (r.rented_instances, r.rented_instance_gpus, r.rent_usd_per_month) == (18, 4, plans[0].rent_usd_per_month)
        assert r.capacity_users == pytest.approx(plans[0].capacity_users, rel=1e-9)
    assert plans[0].rent_usd_per_month == pytest.approx(18 * 42.0 * money.HOURS_PER_MONTH)  # every paid tray
    per_cell = plans[1].capacity_users / 72
    assert plans[1].rented_cells == 2 and plans[1].rented_users == 2 * int(per_cell)
    stated = plan(_qwen("gb200-nvl72", target_users=3_000, cell={"tensor_parallel_size": 1}, replicas=1), catalog)
    assert stated.capacity_users == pytest.approx(per_cell, rel=1e-9)  # the stated cell, not the rack's 72


def test_rented_cells_carrying_the_loadouts_users_say_so_once_and_keep_them_unfloored(catalog):
    """Three stated TP1 cells at your rate take 3 of the system's 8 GPUs: their users are the loadout's, so the
    note names them once, and at capacity they are not floored."""
    r = plan(_qwen("hgx-h100", target_users=500_000, cell={"tensor_parallel_size": 1}, replicas=3,
                   money={"rent_usd_per_gpu_hour": 4.0}), catalog)
    owned = plan(_qwen("hgx-h100", target_users=500_000, cell={"tensor_parallel_size": 1}, replicas=3,
                       rented=False), catalog)
    assert r.users_on_rented_cells and r.supported_users == owned.supported_users
    note = next(a for a in r.assumptions if "another machine than the owned loadout" in a)
    assert "not the loadouts'" not in note
    assert r.capacity_users == pytest.approx(owned.capacity_users, rel=1e-9) and r.capacity_users != r.supported_users


def test_the_loadouts_card_says_how_many_target_users_stated_cells_serve(catalog):
    r = plan(_qwen("hgx-h100", target_users=500_000, cell={"tensor_parallel_size": 1}, replicas=1, rented=False), catalog)
    note = next(c for c in plan_cards(r) if c.key == "loadouts").note
    assert r.served_users < 500_000 and f"serving {r.served_users:,} of the 500,000 target users" in note
    assert "for 500,000 users" not in note
