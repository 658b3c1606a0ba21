"""Purchase prices of home machines (a card priced alone plus the one host-PC cost default, or a whole
machine) and the order search gives the families it cannot offer under a budget."""

from __future__ import annotations

import pytest
import yaml

from inferplan.catalog.loader import DATA_DIR, load_files
from inferplan.economics.plan_inputs import capex
from inferplan.economics.scenario import Scenario
from inferplan.errors import CatalogError
from inferplan.search.request import SearchRequest, Targets
from inferplan.search.run import search


def _capex(catalog, system: str) -> tuple[float, str]:
    s = Scenario.model_validate(dict(name="t", model="qwen3-30b-a3b", platform={"system": system},
                                     workload={"preset": "chat-seat"}, target_users=1))
    return capex(catalog, s, catalog.system(system, "platform.system"), 2)


def test_a_card_only_band_adds_the_host_pc_default_once_per_system(catalog):
    host = catalog.cost_defaults.records["host-pc-one-gpu"].usd
    assert host.kind.value == "assumed"
    for system in ("rtx-5090-workstation", "rtx-4090-workstation", "rtx-3090-workstation", "rtx-pro-6000-workstation"):
        band = catalog.system(system, "platform.system").price
        assert band.host == "host-pc-one-gpu" and "card alone" in band.basis
        value, basis = _capex(catalog, system)
        assert value == pytest.approx(2 * ((band.usd_low.value + band.usd_high.value) / 2 + host.value))
        assert "host-pc-one-gpu, assumed" in basis
        # the host is added once, by capex: the band's own basis prices the card and names no host cost
        assert "host-pc" not in band.basis and basis.count("host-pc-one-gpu") == 1
        assert basis.count("rest of the") == 1 and "without the PC around it" in basis
    assert _capex(catalog, "rtx-5090-workstation")[0] == pytest.approx(2 * (1999 + host.value))


def test_a_whole_machine_band_adds_nothing(catalog):
    value, basis = _capex(catalog, "framework-desktop")
    assert value == pytest.approx(2 * 1999) and "host-pc" not in basis


def test_a_band_naming_an_unknown_host_cost_fails_to_load(tmp_path):
    shipped = [p for p in DATA_DIR.glob("**/*.yaml") if p.name != "systems.yaml"]
    systems = yaml.safe_load((DATA_DIR / "systems.yaml").read_text())
    for record in systems["systems"]:
        if record["id"] == "rtx-5090-workstation":
            record["price"]["host"] = "nowhere"
    bad = tmp_path / "systems.yaml"
    bad.write_text(yaml.safe_dump(systems))
    with pytest.raises(CatalogError, match="price.host 'nowhere'"):
        load_files([*shipped, bad])


def test_budget_reasons_list_the_cheapest_family_first(catalog):
    req = SearchRequest(models=("qwen3-8b",), systems=("hgx-h100", "rtx-5090-workstation", "tinybox-green-v2"),
                        engines=("vllm",), quantizations=("bf16",), users=1, workload="chat-seat",
                        targets=Targets(tpot_p95_s=0.1), max_capex_usd=1000.0, pricing="buy")
    res = search(req, catalog)
    budget = [x for x in res.infeasible if x.reason == "budget"]
    assert [x.platform for x in budget] == ["rtx-5090-workstation", "tinybox-green-v2", "hgx-h100"]
    assert [x.shortfall for x in budget] == sorted(x.shortfall for x in budget)
    assert budget[0].shortfall == pytest.approx((1999 + 1600) / 1000)
