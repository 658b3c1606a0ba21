import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from inferplan.catalog.loader import load_catalog
from inferplan.economics import money
from inferplan.economics.plan import plan
from inferplan.economics.racks import cost_ratio, tokens_per_mw_ratio
from inferplan.economics.scenario import Scenario
from inferplan.errors import InvalidScenarioError
from inferplan.scenario import load_scenario, parse_scenario

CATALOG = load_catalog()
FX = CATALOG.cost_defaults.records["fx-eur-usd"].usd_per_eur.value


class NoSpread:
    """A random generator without spread: every draw is the band's middle (Monte Carlo = plan)."""

    def __init__(self, seed):
        pass

    def uniform(self, low, high, n):
        return np.full(n, (low + high) / 2)

    def normal(self, mean, sigma, n):
        return np.full(n, mean)

    def triangular(self, low, mode, high, n):
        return np.full(n, mode)


def nvaie(option):
    return CATALOG.cost_defaults.records[option].usd.value


# --- golden figures from the seed -------------------------------------------------------------

def test_seed_nvaie_arithmetic_for_eight_gpus():
    # seed 001: "for eight GPUs, that is list-price arithmetic of $36,000/year, $144,000/5 years, or $180,000 perpetual"
    amounts = {k: nvaie(k) for k in ("nvaie-1-year", "nvaie-5-year", "nvaie-perpetual")}
    assert money.software_cost_usd(8, "nvaie-1-year", amounts, 4) * 12 == 36_000
    assert money.software_cost_usd(8, "nvaie-5-year", amounts, 4) * 60 == 144_000
    assert money.software_cost_usd(8, "nvaie-perpetual", amounts, 5) * 60 == pytest.approx(180_000)


def test_seed_fx_rate_and_price_bands_convert_consistently():
    assert FX == 1.1426  # "€1 = $1.1426" (ECB reference rate, 20 July 2026)
    checked = 0
    for system in CATALOG.systems:
        band = system.price
        if band and band.usd_low and band.eur_low:
            for usd, eur in ((band.usd_low, band.eur_low), (band.usd_high, band.eur_high)):
                if usd and eur:
                    # the seed rounds EUR to the nearest €1k for node bands and to 0.1M (≈€0.9–1.3M) for roadmap bands
                    assert eur.value == pytest.approx(usd.value / FX, rel=0.03), system.id
                    checked += 1
    assert checked >= 20


def test_seed_price_band_examples():
    b200 = CATALOG.systems.records["hgx-b200"].price
    assert (b200.usd_low.value, b200.usd_high.value) == (500_000, 650_000)
    gb300 = CATALOG.systems.records["gb300-nvl72"].price
    assert (gb300.usd_low.value, gb300.usd_high.value) == (6_000_000, 6_500_000)


RUBIN, GB200, GB300, GB200_2025 = ("coreweave-vera-rubin-jul-2026-dsr1", "gb200-nvl72-jul-2026-dsr1",
                                    "gb300-nvl72-jul-2026-dsr1", "coreweave-gb200-2025-dsr1")


@pytest.mark.parametrize(("a", "b", "at", "stated"), [
    (RUBIN, GB200, 100, 2.00), (RUBIN, GB300, 100, 2.15), (RUBIN, GB200_2025, 150, 10.18),
    (RUBIN, GB200, 150, 2.74), (RUBIN, GB300, 150, 2.58), (RUBIN, GB300, 300, 5.39),
])
def test_seed_rubin_tokens_per_mw_ratios(a, b, at, stated):
    assert tokens_per_mw_ratio(CATALOG, a, b, at) == pytest.approx(stated, abs=0.006)


def test_seed_rubin_is_five_times_cheaper_at_300():
    assert cost_ratio(CATALOG, RUBIN, GB300, 300) == pytest.approx(5.03, abs=0.01)
    assert tokens_per_mw_ratio(CATALOG, RUBIN, GB200, 300) is None  # GB200 cannot reach 300 tok/s/user


def test_seed_trainium_migration_arithmetic():
    # seed 003: three weeks, two engineers, $150/hr ≈ $36,000; $0.28 vs $0.84 per million tokens
    cost = 3 * 40 * 2 * 150
    assert cost == 36_000
    tokens = money.migration_break_even_tokens(cost, 0.84, 0.28)
    assert tokens == pytest.approx(64.29e9, rel=0.001)
    # the seed's ~109B break-even against H200 *spot* implies a spot cost of about $0.61 per Mtok
    assert money.migration_break_even_tokens(cost, 0.28 + cost / 109e9 * 1e6, 0.28) == pytest.approx(109e9)
    assert money.migration_break_even_tokens(cost, 0.20, 0.28) is None


def test_quote_multiplier_rounds_up_to_the_next_quarter():
    assert money.required_multiplier(10.1, 4.0) == 2.75
    assert money.required_multiplier(10.0, 4.0) == 2.5
    assert money.required_multiplier(0.1, 4.0) == 0.25
    assert money.required_multiplier(10.0, 0.0) is None


def test_payback_is_never_when_operating_cash_is_not_positive():
    assert money.payback_months(1e6, 0.0) is None
    assert money.payback_months(1e6, -5.0) is None
    assert money.payback_months(1e6, 1e5) == 10


# --- plans -------------------------------------------------------------------------------------

def scenario(**overrides) -> Scenario:
    base = dict(name="t", model="llama-3.1-8b", platform={"system": "hgx-h100"},
                workload={"preset": "coding-developer-median"}, target_users=100, money={"quote_multiplier": 2.0})
    base.update(overrides)
    return Scenario.model_validate(base)


def test_plan_outputs_are_consistent():
    r = plan(scenario(), CATALOG)
    assert r.served_users == min(r.target_users, r.supported_users)
    assert r.loadouts == math.ceil(r.target_users / r.capacity.supported_users)
    assert r.monthly_operating_cash_usd == pytest.approx(r.monthly_billing_usd - r.modeled_monthly_operating_cost_usd)
    assert r.private_quote_usd_per_user_month == pytest.approx(2.0 * r.same_model_api_usd_per_user_month)
    assert r.gap_to_capital_recovery_usd_per_month == pytest.approx(
        r.monthly_billing_usd - r.modeled_monthly_operating_cost_usd - r.capex_usd / (3 * 12))
    assert r.capex_usd == pytest.approx(r.loadouts * (300_000 + 460_000) / 2)
    assert r.recommendation.route in ("stay on an API", "rent dedicated capacity", "own")
    assert r.recommendation.monthly_usd[r.recommendation.route] == min(r.recommendation.monthly_usd.values())


def test_software_and_eur_rendering():
    r = plan(scenario(money={"software": "nvaie-1-year"}), CATALOG)
    assert r.monthly_costs.software_usd == pytest.approx(r.gpus * 4500 / 12)
    assert r.eur(1142.6) == pytest.approx(1000)


def test_a_vendor_quote_overrides_the_band():
    r = plan(scenario(platform={"system": "hgx-h100", "quote_usd_per_system": 123_456}), CATALOG)
    assert r.capex_usd == 123_456 * r.loadouts and r.capex_basis == "vendor quote"


common = settings(max_examples=25, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])


@common
@given(st.integers(1, 5000), st.integers(1, 5000))
def test_more_users_never_need_fewer_loadouts(a, b):
    low, high = sorted((a, b))
    assert plan(scenario(target_users=high), CATALOG).loadouts >= plan(scenario(target_users=low), CATALOG).loadouts


@common
@given(st.floats(0.001, 200), st.floats(0.001, 200))
def test_a_looser_speed_target_never_carries_fewer_users(a, b):
    # each user's requests run at the speed the cell gives them, not at the target (a target of
    # 1 tok/s once counted 70x the requests in flight and carried a sixteenth of the users)
    tight, loose = sorted((a, b), reverse=True)

    def users(target):
        return plan(scenario(model="llama-3.1-8b", workload={"preset": "chat-seat", "target_output_tokens_per_s": target}),
                    CATALOG).capacity.supported_users

    assert users(loose) >= users(tight)


def test_an_input_heavy_month_is_bound_by_prompt_throughput():
    shape = {"preset": "chat-seat", "input_tokens_per_request": 1000, "output_tokens_per_request": 1000}
    even = plan(scenario(workload={**shape, "output_share": 0.5}), CATALOG).capacity
    heavy = plan(scenario(workload={**shape, "output_share": 1e-6}), CATALOG).capacity
    assert heavy.users_by_throughput < even.users_by_throughput  # not ~500,000x more users
    assert any("input tokens bind the throughput" in a for a in heavy.assumptions)
    # users are counted at the busiest hour's mean load; the note points to where the queue is priced
    assert any("every slot busy" in a and "inferplan simulate" in a for a in even.assumptions)


def test_a_cell_run_at_every_slot_is_bound_by_its_slots():
    # at every slot a cell carries as many users by throughput as by slots (Little's law: a request
    # holds its slot for its prompt and its decode); the slots are the binding constraint
    r = plan(scenario(platform={"gpu": "h100", "gpus": 1, "quote_usd_per_system": 30_000},
                      workload={"preset": "chat-seat", "target_output_tokens_per_s": 5}), CATALOG).capacity
    assert r.cell.concurrency_at_target == min(r.cell.engine_slots, r.cell.kv_max_concurrency)
    assert r.binding in ("concurrency", "per-request memory")
    assert r.users_by_throughput == pytest.approx(min(r.users_by_concurrency, r.users_by_memory), rel=1e-9)


def test_owner_cost_at_capacity_counts_the_limit_that_binds():
    shape = {"preset": "chat-seat", "input_tokens_per_request": 1000, "output_tokens_per_request": 1000}
    for share in (0.5, 0.01):
        r = plan(scenario(workload={**shape, "output_share": share}), CATALOG)
        # at capacity is at most as costly per token as at the served load, and of the same order
        assert r.owner_cost_usd_per_mtok_at_capacity <= r.owner_cost_usd_per_mtok * (1 + 1e-9)
        assert r.owner_cost_usd_per_mtok_at_capacity > r.owner_cost_usd_per_mtok * r.served_users / r.loadouts / \
            r.capacity.supported_users * 0.999


def test_cost_per_user_falls_as_utilization_rises_at_fixed_capex():
    per_loadout = plan(scenario(target_users=1), CATALOG).capacity.supported_users
    prices = [plan(scenario(target_users=n), CATALOG).target_payback_usd_per_user_month
              for n in sorted({1, per_loadout // 4, per_loadout // 2, per_loadout})]
    assert all(b < a for a, b in zip(prices, prices[1:]))


@common
@given(st.sampled_from(["chat-seat", "coding-developer-median", "agent-worker", "background-agent"]),
       st.sampled_from(["hgx-h100", "hgx-b200", "hgx-h200"]), st.floats(0.1, 10), st.integers(1, 3000))
def test_outputs_are_finite_and_non_negative_where_they_must_be(preset, system, multiplier, users):
    r = plan(scenario(workload={"preset": preset}, platform={"system": system}, target_users=users,
                      money={"quote_multiplier": multiplier}), CATALOG)
    for name in ("capex_usd", "modeled_monthly_operating_cost_usd", "monthly_billing_usd", "capital_recovery_usd_per_month",
                 "served_users", "supported_users", "loadouts"):
        value = getattr(r, name)
        assert math.isfinite(value) and value >= 0, name
    assert math.isfinite(r.monthly_operating_cash_usd)
    if r.monthly_operating_cash_usd <= 0:
        assert r.simple_payback_months is None
    else:
        assert r.simple_payback_months > 0


# --- bad scenario files -------------------------------------------------------------------------

@pytest.mark.parametrize(("text", "needle"), [
    ("model: llama-3.1-8b\nplatform: {system: hgx-h100}\nmoney:\n  quote_multipler: 2\n", ":4: money.quote_multipler: unknown key"),
    ("model: llama-3.1-8b\nplatform: {system: hgx-h100}\nmoney: {electricity_usd_per_kwh: -0.1}\n", ":3: money.electricity_usd_per_kwh"),
    ("platform: {system: hgx-h100}\n", "model: Field required"),
    ("model: llama-3.1-8b\nplatform: {system: hgx-h100}\ntarget_users: lots\n", ":3: target_users"),
    ("model: llama-3.1-8b\nplatform: {}\n", "platform"),
    ("- not a mapping\n", "a scenario is a mapping"),
    # YAML reads yes/on as true, which pydantic would take for 1 GPU / 1.0
    ("model: llama-3.1-8b\nplatform: {gpu: h100-sxm, gpus: yes}\n", ":2: platform.gpus: true is a yes/no value"),
    ("model: llama-3.1-8b\nplatform: {system: hgx-h100}\nmoney: {pue: on}\n", ":3: money.pue"),
])
def test_bad_scenarios_name_the_line_and_key(text, needle):
    with pytest.raises(InvalidScenarioError) as exc:
        parse_scenario(text, where="s.yaml")
    assert needle in str(exc.value)
    assert str(exc.value).startswith("s.yaml")


def test_unknown_key_lists_what_is_allowed():
    with pytest.raises(InvalidScenarioError) as exc:
        parse_scenario("model: x\nplatform: {system: hgx-h100}\nworkload: {preset: chat-seat, tokens: 5}\n", "s.yaml")
    assert "monthly_tokens" in exc.value.allowed


def test_unknown_preset_lists_presets():
    with pytest.raises(InvalidScenarioError) as exc:
        plan(scenario(workload={"preset": "gamer"}), CATALOG)
    assert exc.value.field == "workload.preset" and "chat-seat" in exc.value.allowed


def test_shipped_examples_plan(tmp_path):
    from pathlib import Path

    examples = sorted((Path(__file__).resolve().parents[1] / "examples").glob("*.yaml"))
    assert len(examples) >= 4
    for path in examples:
        assert plan(load_scenario(path), CATALOG).loadouts >= 1


# --- uncertainty and reports --------------------------------------------------------------------

def test_monte_carlo_is_seeded_and_brackets_the_plan():
    from inferplan.economics.uncertainty import simulate

    s = scenario(target_users=300)
    r = plan(s, CATALOG)
    a, b = simulate(r, s, draws=2000, seed=7, catalog=CATALOG), simulate(r, s, draws=2000, seed=7, catalog=CATALOG)
    assert a == b
    band = a.target_payback_usd_per_user_month
    assert band.p10 <= band.p50 <= band.p90
    assert band.p10 <= r.target_payback_usd_per_user_month * 1.05 and band.p90 >= r.target_payback_usd_per_user_month * 0.95
    assert 0 <= a.never_pays_back_share <= 1


def test_monte_carlo_without_spread_reproduces_the_plan(monkeypatch):
    from inferplan.economics import uncertainty

    s = scenario(target_users=300, platform={"system": "hgx-h100", "quote_usd_per_system": 400_000})
    r = plan(s, CATALOG)

    monkeypatch.setattr(uncertainty.np.random, "default_rng", NoSpread)
    u = uncertainty.simulate(r, s, draws=10, catalog=CATALOG)
    assert u.target_payback_usd_per_user_month.p50 == pytest.approx(r.target_payback_usd_per_user_month, rel=1e-9)
    assert u.operating_break_even_usd_per_user_month.p50 == pytest.approx(r.operating_break_even_usd_per_user_month, rel=1e-9)
    assert u.owner_cost_usd_per_mtok.p50 == pytest.approx(r.owner_cost_usd_per_mtok, rel=1e-9)


@pytest.mark.parametrize("suffix", [".html", ".md"])
def test_reports_are_self_contained(tmp_path, suffix):
    from inferplan.economics.uncertainty import simulate
    from inferplan.report.files import write_report

    s = scenario()
    r = plan(s, CATALOG)
    out = write_report(tmp_path / f"report{suffix}", r, simulate(r, s, draws=500, catalog=CATALOG))
    text = out.read_text()
    assert "Estimated supported users" in text and r.recommendation.route in text
    assert ("<svg" in text) if suffix == ".html" else ("data:image/svg+xml;base64," in text)
    assert "http://" not in text.replace("http://www.w3.org", "")  # nothing fetched when opened


def test_report_type_is_checked(tmp_path):
    from inferplan.report.files import write_report

    with pytest.raises(InvalidScenarioError) as exc:
        write_report(tmp_path / "report.pdf", plan(scenario(), CATALOG), None)
    assert exc.value.field == "report"


def test_seed_lines_with_a_kv_proxy_plan_and_read_only_active_experts(sketch_catalog):
    r = plan(scenario(model="sketch-proxy-moe", platform={"system": "hgx-b300"}, target_users=50), sketch_catalog)
    assert r.capacity.cell.meets_target and r.supported_users > 0
    assert any("kv_proxy" in a for a in r.assumptions)  # the proxy layout is stated, not hidden
    assert any("experts per token" in a for a in r.assumptions)


def test_unpublished_architectures_need_a_stated_kv_size(sketch_catalog):
    with pytest.raises(InvalidScenarioError) as exc:
        plan(scenario(model="sketch-unpublished", platform={"system": "hgx-b300"}), sketch_catalog)
    assert exc.value.field == "kv_bytes_per_token"  # the scenario's key, not the CLI flag
    r = plan(scenario(model="sketch-unpublished", platform={"system": "hgx-b300"}, kv_bytes_per_token=70_000),
             sketch_catalog)
    assert r.supported_users > 0


def test_pcie_servers_and_bridged_cards_plan():
    # GPUs past a PCIe card's bridge share the server's PCIe: the cell sweep up to 8 GPUs runs
    # (it raised "--tensor-parallel-size" for the wider cells once the scale-out network came in)
    pcie = plan(scenario(model="llama-3.3-70b", quantization="fp8", target_users=20,
                         platform={"system": "rtx-pro-6000-server-8x", "quote_usd_per_system": 90_000}), CATALOG)
    bridged = plan(scenario(model="llama-3.1-405b", quantization="fp8", target_users=5,
                            platform={"gpu": "h200-nvl", "gpus": 8, "quote_usd_per_system": 300_000}), CATALOG)
    for r in (pcie, bridged):
        assert r.capacity.gpus == 8 and r.capacity.binding
        assert r.capacity.cell.tensor_parallel_size * r.capacity.cells <= 8


def test_the_cell_sweep_stops_where_the_links_end_and_says_so():
    # 16 MI300X: 8 per Infinity Fabric domain, no network between servers in the catalogue
    r = plan(scenario(model="llama-3.1-70b", quantization="fp8", target_users=20,
                      platform={"gpu": "mi300x", "gpus": 16, "quote_usd_per_system": 500_000}), CATALOG)
    assert r.capacity.cell.tensor_parallel_size <= 8
    assert any("replica cells wider than 8 GPUs not tried" in a for a in r.capacity.assumptions)


def test_a_model_no_single_system_holds_is_planned_on_several_and_priced_as_such():
    # DeepSeek-R1 in FP8 needs more than one 8x H100 node: a loadout is the fewest HGX H100 systems
    # one replica needs, its cell runs over their network, and capex and power count every system
    r = plan(scenario(model="deepseek-r1", quantization="fp8-block", target_users=50), CATALOG)
    system = CATALOG.system("hgx-h100")
    assert r.systems_per_loadout == 2 and r.capacity.gpus == 16 and r.gpus == 16 * r.loadouts
    assert r.capacity.cell.gpus == 16
    band = system.price
    mid = (band.usd_low.value + band.usd_high.value) / 2
    assert r.capex_usd == pytest.approx(mid * 2 * r.loadouts)
    per_loadout_power_usd = r.monthly_costs.power_usd / r.loadouts
    one = plan(scenario(model="llama-3.1-8b", target_users=50), CATALOG)  # fits one system
    assert one.systems_per_loadout == 1
    assert per_loadout_power_usd == pytest.approx(2 * one.monthly_costs.power_usd / one.loadouts)
    assert any("scale-out" in a or "infiniband" in a for a in r.capacity.assumptions)
    assert any("2 × hgx-h100 each" in a for a in r.assumptions)


def test_a_model_beyond_eight_systems_is_refused_naming_the_platform():
    with pytest.raises(InvalidScenarioError) as exc:
        plan(scenario(model="deepseek-r1", quantization="bf16", target_users=5, platform={"system": "dgx-spark"}), CATALOG)
    assert exc.value.field == "platform.system" and "8 dgx-spark systems" in str(exc.value)
    with pytest.raises(InvalidScenarioError) as exc:  # a fixed cell is held to the same limit
        plan(scenario(model="deepseek-r1", quantization="fp8-block", cell={"tensor_parallel_size": 128}), CATALOG)
    assert exc.value.field == "cell" and "16 hgx-h100 systems" in str(exc.value)


def test_a_cell_across_systems_keeps_tensor_parallelism_inside_one_and_needs_a_known_network():
    # a 4-GPU box without a catalogued network: refused, and the cell it would need is TP4 x PP4
    # (tensor parallelism inside a box, not TP8 across two), said in the error
    with pytest.raises(InvalidScenarioError) as exc:
        plan(scenario(model="llama-3.3-70b", quantization="bf16", platform={"system": "tinybox-red-v2"}), CATALOG)
    assert exc.value.field == "platform.system" and "4 tinybox-red-v2 systems" in str(exc.value)
    assert "knows no network" in str(exc.value)
    # an 8-GPU PCIe server pair has no catalogued network either
    with pytest.raises(InvalidScenarioError, match="knows no network"):
        plan(scenario(model="deepseek-r1", quantization="bf16", target_users=5,
                      platform={"system": "rtx-pro-6000-server-8x", "quote_usd_per_system": 90_000}), CATALOG)


def test_a_vendor_quote_and_power_count_per_system_and_the_monte_carlo_reproduces_them(monkeypatch):
    from inferplan.economics import uncertainty

    quoted = plan(scenario(model="deepseek-r1", quantization="fp8-block", target_users=50,
                           platform={"system": "hgx-h100", "quote_usd_per_system": 400_000,
                                     "power_w_per_system": 10_000}), CATALOG)
    assert quoted.systems_per_loadout == 2 and quoted.gpus_per_system == 8
    assert quoted.capex_usd == pytest.approx(400_000 * 2 * quoted.loadouts)
    one_system_power = plan(scenario(target_users=50, platform={"system": "hgx-h100", "power_w_per_system": 10_000}), CATALOG)
    assert quoted.monthly_costs.power_usd / quoted.loadouts == pytest.approx(
        2 * one_system_power.monthly_costs.power_usd / one_system_power.loadouts)

    monkeypatch.setattr(uncertainty.np.random, "default_rng", NoSpread)
    s = scenario(model="deepseek-r1", quantization="fp8-block", target_users=50)  # the price band, per system
    r = plan(s, CATALOG)
    u = uncertainty.simulate(r, s, draws=10, catalog=CATALOG)
    assert u.loadouts.p50 == r.loadouts
    assert u.target_payback_usd_per_user_month.p50 == pytest.approx(r.target_payback_usd_per_user_month, rel=1e-9)
    assert u.owner_cost_usd_per_mtok.p50 == pytest.approx(r.owner_cost_usd_per_mtok, rel=1e-9)


def test_the_web_view_plans_a_cell_across_systems_on_those_systems():
    from inferplan.report.views import PlanRequest, plan_view

    v = plan_view(PlanRequest(scenario=scenario(model="deepseek-r1", quantization="fp8-block", target_users=50), draws=0),
                  CATALOG)
    assert "over 2 hgx-h100 systems" in v.memory_summary
    assert v.memory.fits and v.frontier.points


def test_monte_carlo_has_nothing_to_draw_when_no_user_is_carried():
    from inferplan.economics.uncertainty import simulate

    # at vLLM 0.33's 0.92 two GB10s do not hold it (0.34's measured sizing does)
    s = scenario(model="qwen3-235b-a22b", quantization="fp8", target_users=5, platform={"system": "dgx-spark"},
                 engine_version="0.33.0")
    r = plan(s, CATALOG)
    assert r.supported_users == 0 and r.systems_per_loadout > 1
    assert simulate(r, s, draws=100, catalog=CATALOG) is None  # not 5e9 loadouts


def test_a_fixed_cell_too_small_for_the_model_names_the_cell():
    with pytest.raises(InvalidScenarioError) as exc:
        plan(scenario(model="deepseek-r1", quantization="fp8-block", cell={"tensor_parallel_size": 8}), CATALOG)
    assert exc.value.field == "cell" and "does not fit on 8× h100-sxm" in str(exc.value)


def test_the_per_system_quote_and_power_also_read_under_their_old_per_loadout_names():
    old = scenario(platform={"system": "hgx-h100", "quote_usd_per_loadout": 400_000, "power_w_per_loadout": 9_000})
    new = scenario(platform={"system": "hgx-h100", "quote_usd_per_system": 400_000, "power_w_per_system": 9_000})
    assert old == new and new.platform.quote_usd_per_system == 400_000
    assert plan(old, CATALOG).capex_usd == plan(new, CATALOG).capex_usd


def test_users_counted_on_the_calibrated_model_carry_its_track_record(catalog):
    """The Users + ROI simulator's per-user speed comes from the speed model: its capacity
    assumptions quote that engine family's record, as `perf` does."""
    from inferplan.economics.capacity import cell_capacity
    from inferplan.economics.workloads import WorkloadOverrides, resolve_workload
    from inferplan.inputs.deployment import Deployment

    workload = resolve_workload(catalog, WorkloadOverrides(preset="chat-seat"))
    cap = cell_capacity(catalog, Deployment(model="llama-3.1-8b", gpu="h100-sxm", engine="vllm", max_model_len=8192),
                        workload)
    assert cap.source == "calibrated-model"
    assert any(a.startswith("track record, vllm") for a in cap.assumptions)


def test_a_user_heavier_than_a_loadout_is_carried_by_several():
    # 1e13 tokens a month is ~94 loadouts of 8 H100s per user: 10 users used to get 1 loadout and 0 users
    r = plan(scenario(workload={"preset": "chat-seat", "monthly_tokens": 1e13}, platform={"system": "hgx-h100"},
                      target_users=10), CATALOG)
    assert r.served_users == 10 and r.supported_users >= 10 and r.loadouts > 100
    assert any("one user's traffic needs" in a for a in r.assumptions)
    one = plan(scenario(workload={"preset": "chat-seat", "monthly_tokens": 1e13}, platform={"system": "hgx-h100"},
                        target_users=1), CATALOG)
    assert one.loadouts < r.loadouts


def test_a_scenario_reads_1e13_as_a_number_and_refuses_quoted_numbers():
    text = "model: llama-3.1-8b\nplatform: {system: hgx-h100}\nworkload: {preset: chat-seat, monthly_tokens: %s}\n"
    assert parse_scenario(text % "1e13", "s.yaml").workload.monthly_tokens == 1e13  # YAML 1.1 alone reads text
    with pytest.raises(InvalidScenarioError, match="is text"):
        parse_scenario(text % "'1e13'", "s.yaml")
    import yaml
    assert yaml.safe_load("a: 1e13") == {"a": "1e13"}  # the resolver stays the scenario loader's own


def test_an_api_break_even_beyond_capacity_says_owning_never_gets_there():
    from pathlib import Path

    from inferplan.report.cards import plan_cards

    r = plan(load_scenario(Path(__file__).parents[1] / "examples" / "chat-seats-h100.yaml"), CATALOG)
    card = next(c for c in plan_cards(r) if c.key == "api_break_even")
    assert r.api_break_even_tokens_per_month > r.capacity_tokens_per_month > 0
    assert "owning costs more per token than the API" in card.note
    # the same fact from the other side: fully used, the owner's cost per token is above the API's
    api_usd_per_mtok = r.api_alternative_usd_per_user_month / r.workload.monthly_tokens * 1e6
    assert r.owner_cost_usd_per_mtok_at_capacity > api_usd_per_mtok
    none = plan(scenario(model="qwen3-235b-a22b", quantization="fp8", platform={"system": "hgx-b200"},
                         workload={"preset": "coding-developer-median", "target_output_tokens_per_s": 500}), CATALOG)
    assert none.supported_users == 0 and none.capacity_tokens_per_month == 0
    assert "carry no user" in next(c for c in plan_cards(none) if c.key == "api_break_even").note
    loadouts = next(c for c in plan_cards(none) if c.key == "loadouts")  # priced, but sized for no one
    assert loadouts.value == "1 priced, none carries a user" and "service target binds" in loadouts.note


def test_a_liquid_cooled_system_is_planned_at_the_liquid_cooled_pue_unless_stated():
    rack = plan(scenario(model="llama-3.1-8b", platform={"system": "gb300-nvl72"}), CATALOG)
    node = plan(scenario(model="llama-3.1-8b", platform={"system": "hgx-h100"}), CATALOG)
    stated = plan(scenario(model="llama-3.1-8b", platform={"system": "gb300-nvl72"}, money={"pue": 1.54}), CATALOG)
    liquid = CATALOG.cost_defaults.records["pue-liquid-cooled"].ratio.value
    average = CATALOG.cost_defaults.records["pue-global-average"].ratio.value
    assert any(f"PUE {liquid:g} (gb300-nvl72 is direct-liquid-cooled" in a for a in rack.assumptions)
    assert any(f"PUE {average:g} (pue-global-average)" in a for a in node.assumptions)
    assert rack.monthly_costs.power_usd == pytest.approx(stated.monthly_costs.power_usd * liquid / average)


@pytest.mark.parametrize("oem", ["dell-xe9685l", "dell-xe9680l", "lenovo-sr680a-v3"])
def test_an_oem_server_on_the_hgx_b200_board_draws_the_hgx_b200_ceiling(oem):
    """The same eight B200s cost the same colocation in any chassis: an OEM server whose GPUs are the
    HGX B200 board carries that board's 14.3 kW system ceiling (derived), not 1.5 × GPU TDP."""
    record = CATALOG.systems.records[oem]
    assert (record.accelerator, record.accelerator_count) == ("b200", 8)
    assert record.power_w.value == CATALOG.systems.records["hgx-b200"].power_w.value and record.power_w.kind == "derived"
    oem_plan = plan(scenario(model="llama-3.1-8b", platform={"system": oem}), CATALOG)
    hgx = plan(scenario(model="llama-3.1-8b", platform={"system": "hgx-b200"}), CATALOG)
    assert oem_plan.monthly_costs.colocation_usd == pytest.approx(hgx.monthly_costs.colocation_usd)
    assert not any("system power assumed" in a for a in oem_plan.assumptions)


@pytest.mark.parametrize(("usd", "currency", "digits", "shown"), [
    (0.0188, "usd", 2, "$0.0188"),      # an API seat under a cent's resolution: three significant digits
    (0.97 * FX, "eur", 2, "€0.970"),    # the euro amount decides, not the dollar one
    (1.05, "usd", 2, "$1.05"),
    (-6978.2, "usd", 0, "-$6,978"),     # not $-6,978
    (-0.3, "usd", 0, "$0"),             # no sign on what rounds to nothing
    (1e-12, "usd", 2, "<$0.00000001"),
])
def test_money_is_shown_to_the_digits_it_has(usd, currency, digits, shown):
    from inferplan.report.cards import plan_money

    r = plan(scenario(), CATALOG)
    assert plan_money(r, usd, currency, digits) == shown


def test_your_own_rental_rate_and_api_prices_replace_the_catalogues():
    """A GPU provider's negotiated rate and an API's own prices: the rent is the rate × the GPUs of the
    cells the target needs × 730 h, and the API alternative is the month of tokens at those prices."""
    from inferplan.economics import money as money_mod

    own = {"rent_usd_per_gpu_hour": 1.5, "api_input_usd_per_mtok": 0.2, "api_cached_input_usd_per_mtok": 0.05,
           "api_output_usd_per_mtok": 0.8}
    r = plan(scenario(model="llama-3.1-8b", platform={"system": "hgx-h100"}, money=own), CATALOG)
    gpus = r.rented_cells * r.rented_cell_gpus
    assert r.rented_users >= r.target_users and gpus < r.gpus  # the target, not the whole owned node
    assert r.rent_usd_per_month == pytest.approx(1.5 * gpus * money_mod.HOURS_PER_MONTH)
    w = r.workload
    expected = (w.monthly_input_tokens * ((1 - w.cache_hit_rate) * 0.2 + w.cache_hit_rate * 0.05)
                + w.monthly_output_tokens * 0.8) / 1e6
    assert r.api_alternative_usd_per_user_month == pytest.approx(expected)
    assert r.api_alternative is None
    assert any(a.startswith("API compared with: your prices") for a in r.assumptions)
    assert any(a.startswith(f"rent: your rate of $1.50 per GPU-hour for {r.rented_cells} replica cell") for a in r.assumptions)
    from inferplan.report.cards import plan_cards

    cards = {c.key: c for c in plan_cards(r)}
    assert cards["rent"].note.endswith("; at your rate per GPU-hour") and cards["api_alternative"].note == "at your API prices"


@pytest.mark.parametrize("bad, field", [
    ({"rent_usd_per_gpu_hour": 2.0, "rental": "x"}, "rent_usd_per_gpu_hour"),
    ({"api_input_usd_per_mtok": 0.2}, "api_output_usd_per_mtok"),
    ({"api_input_usd_per_mtok": 0.2, "api_output_usd_per_mtok": 0.8, "api_alternative": "x"}, "api_input_usd_per_mtok"),
])
def test_your_own_prices_beside_a_catalogue_one_are_refused_naming_the_field(bad, field):
    with pytest.raises(Exception, match=field):
        scenario(model="llama-3.1-8b", platform={"system": "hgx-h100"}, money=bad)


def test_a_bare_gpu_without_a_quote_is_refused_naming_the_quote_and_a_system_instead():
    home = {"name": "home", "model": "qwen3-8b", "platform": {"gpu": "rtx-4090", "gpus": 1},
            "workload": {"preset": "chat-seat"}, "target_users": 5, "money": {"rent_usd_per_gpu_hour": 0.35}}
    s = Scenario.model_validate(home)
    with pytest.raises(InvalidScenarioError, match=r"bare GPU platform \(1 × rtx-4090\).*platform\.system") as err:
        plan(s, CATALOG)
    assert err.value.field == "platform.quote_usd_per_system" and "USD" in err.value.allowed
    quoted = Scenario.model_validate({**home, "platform": {**home["platform"], "quote_usd_per_system": 1800}})
    assert plan(quoted, CATALOG).capex_usd == 1800


def test_a_mac_scenario_that_names_no_engine_is_planned_on_llama_cpp():
    """As fit and deploy do: the platform's own engine unless the scenario names one."""
    mac = {"name": "mac", "model": "qwen3-8b", "workload": {"preset": "chat-seat"}, "target_users": 5,
           "platform": {"gpu": "apple-m3-ultra", "gpus": 1, "quote_usd_per_system": 9500, "power_w_per_system": 270}}
    default = plan(Scenario.model_validate(mac), CATALOG)
    named = plan(Scenario.model_validate({**mac, "engine": "vllm"}), CATALOG)
    assert any(a.startswith("memory rule: llama.cpp") for a in default.capacity.cell.assumptions)
    assert any(a.startswith("memory rule: vLLM") for a in named.capacity.cell.assumptions)


def test_a_stated_running_cap_beyond_the_kv_cache_is_noted_as_never_binding():
    s = scenario(model="llama-3.1-70b-instruct", quantization="fp8", cell={"tensor_parallel_size": 4, "max_num_seqs": 4096})
    r = plan(s, CATALOG)
    cell = r.capacity.cell
    assert cell.stated_max_num_seqs == 4096 and cell.engine_slots == cell.kv_max_concurrency < 4096
    note = next(a for a in r.assumptions if a.startswith("the stated max_num_seqs (4,096) is more than the KV cache"))
    assert f"runs at most {cell.engine_slots:,} at once" in note
    small = plan(scenario(model="llama-3.1-70b-instruct", quantization="fp8",
                          cell={"tensor_parallel_size": 4, "max_num_seqs": 16}), CATALOG)
    assert small.capacity.cell.engine_slots == 16  # a cap the KV cache holds binds, and says nothing
    assert not any(a.startswith("the stated max_num_seqs") for a in small.assumptions)
