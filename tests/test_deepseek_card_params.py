"""DeepSeek-V3.2 and V4-Pro state their parameter counts: V4-Pro's card figures, V3.2's active count as the
importer counts it from its config.json, both listed by ``inferplan models``."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from inferplan.catalog.loader import load_catalog
from inferplan.memory.params import count_params
from inferplan.memory.resolve import resolve_model
from inferplan.shells.cli import app

CAT = load_catalog()


@pytest.mark.parametrize(("model", "total", "active"), [("deepseek-v3.2", 685e9, 37.5e9), ("deepseek-v4-pro", 1.6e12, 49e9)])
def test_the_cards_state_total_and_active_parameters(model, total, active):
    card = CAT.model(model)
    assert (card.total_params.value, card.active_params.value) == (total, active)
    assert card.active_params.source in CAT.sources


@pytest.mark.parametrize(("model", "tolerance"), [("deepseek-v3.2", 0.001), ("deepseek-v4-pro", 0.03)])
def test_the_stated_active_count_agrees_with_the_config(model, tolerance):
    spec = resolve_model(CAT, model)  # derived from config.json (V3.2), or the card's rounded figure (V4-Pro)
    assert spec.active_params == pytest.approx(count_params(spec.architecture).active, rel=tolerance)


def test_models_lists_both_counts():
    out = CliRunner().invoke(app, ["models", "--json"])
    assert out.exit_code == 0, out.output
    listed = {m["id"]: m for m in json.loads(out.output)}
    for model in ("deepseek-v3.2", "deepseek-v4-pro"):
        assert listed[model]["total_params"]["value"] and listed[model]["active_params"]["value"]
