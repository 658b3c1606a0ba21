"""The page's catalogue tables carry each shown number's source and date (the hover text)."""

import re

from inferplan.report.views import model_cards, platform_ladder, source_notes

TOOLTIP = r"source: .+ \((https?://\S+|seed: \S+)\), checked \d{4}-\d{2}-\d{2}, (spec|measured|derived|assumed)"


def test_every_priced_platform_says_where_its_price_and_memory_come_from(catalog):
    for view, system in zip(platform_ladder(catalog), catalog.systems):
        assert view.id == system.id
        if system.price and system.price.usd_low:
            assert {n.source for n in view.sources["price_usd"]} >= {system.price.usd_low.source}
        if system.memory_bytes:
            [note] = view.sources["memory"]
            assert note.source == system.memory_bytes.source
            assert note.checked == (system.memory_bytes.checked or catalog.sources[note.source].checked)
        for notes in view.sources.values():
            assert all(re.fullmatch(TOOLTIP, n.tooltip) for n in notes)


def test_model_cards_source_their_parameter_counts(catalog):
    cards = {c.id: c for c in model_cards(catalog, include_reference=True)}
    for m in catalog.models:
        if m.total_params:
            assert m.total_params.source in {n.source for n in cards[m.id].sources["params"]}


def test_one_note_per_source_and_date(catalog):
    system = next(s for s in catalog.systems if s.price and s.price.usd_high)
    band = system.price
    same = band.usd_low.source == band.usd_high.source and band.usd_low.checked == band.usd_high.checked
    notes = source_notes(catalog, band.usd_low, band.usd_high, None)
    assert len(notes) == (1 if same and band.usd_low.kind == band.usd_high.kind else 2)


def test_the_plans_price_cards_name_their_catalogue_records(catalog):
    from pathlib import Path

    from inferplan.report.views import PlanRequest, plan_view
    from inferplan.scenario import load_scenario

    scenario = load_scenario(Path(__file__).resolve().parents[1] / "examples" / "chat-seats-h100.yaml")
    view = plan_view(PlanRequest(scenario=scenario, draws=0), catalog)
    cards = {c.key: c for c in view.cards}
    band = catalog.systems.records[view.result.system].price
    assert {n.source for n in cards["capex"].sources} == {q.source for q in (band.usd_low, band.usd_high) if q}
    api = catalog.api_prices.records[view.result.api_price]
    assert api.model == scenario.model and api.output_usd_per_mtok.source in {n.source for n in cards["same_model_api"].sources}
    rental = catalog.rental_prices.records[view.result.rental]
    assert rental.accelerator == view.result.accelerator and cards["rent"].sources
    assert not cards["users"].sources  # a derived count rests on no single record
    quoted = plan_view(PlanRequest(scenario=scenario.model_copy(update={"platform": scenario.platform.model_copy(
        update={"quote_usd_per_system": 250_000.0})}), draws=0), catalog)
    assert not next(c for c in quoted.cards if c.key == "capex").sources  # a vendor quote has no catalogue source
