"""The replica-cell widths plan and search try come from one rule (``memory.layout.cell_widths``):
powers of two, plus the widths a system fills that doubling misses (a 72- or 144-GPU rack)."""

from __future__ import annotations

import pytest

from inferplan.economics.plan import plan
from inferplan.economics.scenario import Scenario
from inferplan.memory.layout import cell_widths
from inferplan.search.budget import Budget
from inferplan.search.request import SearchRequest
from inferplan.search.run import search
from inferplan.search.space import build_space


def test_widths_double_from_the_narrowest_and_add_the_widths_a_system_fills():
    assert cell_widths(2, 72, fills=(72, 72)) == [2, 4, 8, 16, 32, 64, 72]
    assert cell_widths(2, 8, fills=(8, 8)) == [2, 4, 8]  # a power of two adds nothing
    assert cell_widths(4, 144, fills=(144,), doubled_up_to=32) == [4, 8, 16, 32, 144]  # the cap bounds doubling only
    assert cell_widths(2, 64, fills=(1, 72)) == [2, 4, 8, 16, 32, 64]  # fills outside the range are not widths
    assert cell_widths(3, 12) == [3, 6, 12]
    assert cell_widths(8, 4, fills=(4,)) == []


def _expert_widths(catalog, model: str, system: str, engine: str, quantization: str) -> set[int]:
    req = SearchRequest(models=(model,), systems=(system,), engines=(engine,), quantizations=(quantization,),
                        request_rate_per_s=1.0, input_len=1000, output_len=100, speculative=False)
    return {c.gpus for c in build_space(catalog, req, input_len=1000, output_len=100).cells if c.expert_parallel}


def test_the_search_tries_the_whole_rack_as_one_expert_parallel_cell(catalog):
    # nemotron-3-ultra in NVFP4 needs 4 GB200s: doubling 8x that stopped at 32 GPUs; plan tries every
    # power of two and the rack's 72 (economics.capacity.expert_parallel_cells)
    assert _expert_widths(catalog, "nemotron-3-ultra", "gb200-nvl72", "sglang", "nvfp4") == {2, 4, 8, 16, 32, 64, 72}
    assert 144 in _expert_widths(catalog, "nemotron-3-ultra", "kyber-nvl144", "sglang", "nvfp4")


@pytest.mark.slow  # a search over a rack's 22 cells (CI runs it; the fast tier leaves it out)
def test_the_cheapest_purchase_needs_no_more_racks_than_plan_finds_enough(catalog):
    """1,000 agent workers on GB200 NVL72: plan carries them on 2 racks of one 72-GPU expert-parallel
    cell each; the search, asked for the cheapest purchase, buys no more."""
    owned = plan(Scenario.model_validate(dict(
        name="nem", model="nemotron-3-ultra", quantization="nvfp4", engine="sglang",
        platform={"system": "gb200-nvl72", "price_point": "mid"}, workload={"preset": "agent-worker"},
        target_users=1000)), catalog)
    assert (owned.loadouts, owned.capacity.cell.gpus) == (2, 72)
    found = search(SearchRequest(models=("nemotron-3-ultra",), users=1000, workload="agent-worker", pricing="buy",
                                 systems=("gb200-nvl72",), engines=("sglang",), quantizations=("nvfp4",),
                                 speculative=False, disaggregated=False, objective="monthly"), catalog,
                   budget=Budget(deadline_s=3600.0))  # a crowded machine may take past the default limit
    best = found.results[0]
    assert best.systems <= owned.loadouts
    assert best.capex_usd <= owned.capex_usd
