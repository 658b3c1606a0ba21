"""`plan`'s headline shows the owner cost per million tokens both at the served users (a mostly idle node when
they are few) and at capacity, each labelled with its users, as PlanResult returns them."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from inferplan.economics.plan import plan
from inferplan.economics.scenario import Scenario
from inferplan.report.cards import plan_cards
from inferplan.shells.cli import app

SCENARIO = """name: Chat seats, llama-3.3-70b FP8 on HGX H200
model: llama-3.3-70b
quantization: fp8
platform: {system: hgx-h200, price_point: mid}
workload: {preset: chat-seat}
target_users: 2000
"""


def test_both_costs_per_million_tokens_are_headline_cards_naming_their_users(catalog):
    r = plan(Scenario.model_validate({"name": "x", "model": "llama-3.3-70b", "quantization": "fp8",
                                      "platform": {"system": "hgx-h200", "price_point": "mid"},
                                      "workload": {"preset": "chat-seat"}, "target_users": 2000}), catalog)
    assert r.supported_users > r.served_users == 2000  # a mostly idle node: the two figures differ
    cards = {c.key: c for c in plan_cards(r)}
    served, full = cards["cost_per_mtok"], cards["cost_per_mtok_at_capacity"]
    assert served.label.endswith("at your 2,000 users") and served.value == f"${r.owner_cost_usd_per_mtok:,.3f}"
    assert full.label.endswith(f"at capacity ({r.capacity_users:,.1f} users)")
    # the figure's users: capacity tokens over a user's month, not the floored supported users
    assert r.capacity_users * r.workload.monthly_tokens == pytest.approx(r.capacity_tokens_per_month)
    assert r.owner_cost_usd_per_mtok_at_capacity * r.capacity_tokens_per_month / 1e6 == pytest.approx(
        r.owner_cost_usd_per_mtok * r.served_users * r.workload.monthly_tokens / 1e6)
    assert full.value == f"${r.owner_cost_usd_per_mtok_at_capacity:,.3f}"


def test_the_headline_without_explain_prints_both(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(SCENARIO)
    out = " ".join(CliRunner().invoke(app, ["plan", str(path), "--draws", "0"], terminal_width=160).stdout.split())
    assert "Owner cost / million tokens at your 2,000 users" in out
    assert "Owner cost / million tokens at capacity (" in out and "--explain shows all" in out


def test_the_at_capacity_card_says_why_its_users_differ_from_the_supported_users(catalog):
    """Llama 3.3 70B FP8 for 500 coding developers on HGX H100s: 13 loadouts of 40 whole users each support 520,
    while their token throughput at the binding limit is 532.3 users' tokens; the card says which is which."""
    r = plan(Scenario.model_validate({"model": "llama-3.3-70b", "quantization": "fp8", "platform": {"system": "hgx-h100"},
                                      "workload": {"preset": "coding-developer-median"}, "target_users": 500}), catalog)
    assert (r.supported_users, r.users_per_loadout, r.loadouts) == (520, 40, 13)
    assert r.capacity_users == pytest.approx(532.3, abs=0.05)
    note = {c.key: c for c in plan_cards(r)}["cost_per_mtok_at_capacity"].note
    assert "the tokens of 532.3 users, where the supported users (520) count whole users per loadout" in note


def test_the_at_capacity_card_of_rented_cells_counts_whole_users_per_rented_cell(catalog):
    """Llama 3.1 8B FP8 rented for 500 coding developers with a DGX H100 named: the target's 14 one-GPU cells are
    rented, no loadout is, so the supported users are whole users per rented cell, not per loadout."""
    r = plan(Scenario.model_validate({"model": "llama-3.1-8b", "quantization": "fp8", "platform": {"system": "dgx-h100"},
                                      "rented": True, "workload": {"preset": "coding-developer-median"},
                                      "target_users": 500}), catalog)
    assert r.users_on_rented_cells and (r.rented_cells, r.rented_held_cells, r.supported_users) == (14, 14, 504)
    note = {c.key: c for c in plan_cards(r)}["cost_per_mtok_at_capacity"].note
    assert "where the supported users (504) count whole users per rented cell;" in note
    assert "per loadout" not in note


def test_the_headline_without_explain_says_why_the_users_at_capacity_differ(tmp_path):
    """The headline hides the cards' notes; the at-capacity card's note, which says the supported users count whole
    users per loadout, is printed beneath it in the library's words, as the web page shows it."""
    path = tmp_path / "s.yaml"
    path.write_text("model: llama-3.3-70b\nquantization: fp8\nplatform: {system: hgx-h100}\n"
                    "workload: {preset: coding-developer-median}\ntarget_users: 500\n")
    out = " ".join(CliRunner().invoke(app, ["plan", str(path), "--draws", "0"], terminal_width=160).stdout.split())
    assert ("At capacity: the loadouts full at their binding limit: the tokens of 532.3 users, where the supported "
            "users (520) count whole users per loadout") in out


def test_the_headline_leaves_a_fraction_of_a_user_to_the_card(catalog):
    """Users at capacity less than one whole user beyond the supported users: the headline prints no line for it."""
    from inferplan.report.cards import capacity_users_headline, capacity_users_note

    r = plan(Scenario.model_validate({"model": "llama-3.3-70b", "quantization": "fp8", "platform": {"system": "hgx-h100"},
                                      "workload": {"preset": "coding-developer-median"}, "target_users": 500}), catalog)
    near = r.model_copy(update={"capacity_users": r.supported_users + 0.4})
    assert capacity_users_note(near) and capacity_users_headline(near) == ""
    assert capacity_users_headline(r) == capacity_users_note(r) != ""


def test_one_user_is_named_in_the_singular(catalog):
    r = plan(Scenario.model_validate({"model": "llama-3.3-70b", "quantization": "fp8", "platform": {"system": "hgx-h100"},
                                      "workload": {"preset": "coding-developer-median"}, "target_users": 1}), catalog)
    cards = {c.key: c for c in plan_cards(r)}
    assert cards["cost_per_mtok"].label.endswith("at your 1 user")
    assert cards["loadouts"].note.endswith("for 1 user")
