"""A first plan of one home GPU: each refusal names the key to change and what would plan; small
monthly bills show their cents."""

import re

import pytest

from inferplan.catalog.loader import load_catalog
from inferplan.economics.plan import plan
from inferplan.economics.scenario import Scenario
from inferplan.errors import InvalidScenarioError
from inferplan.report.cards import plan_cards, recommendation_reasons

CATALOG = load_catalog()
HOME = {"name": "home", "model": "qwen3-32b", "workload": {"preset": "chat-seat"}, "target_users": 5}


def test_a_bare_gpu_loadout_too_small_for_the_model_names_its_gpu_count_and_what_fits():
    s = Scenario.model_validate({**HOME, "platform": {"gpu": "rtx-4090", "gpus": 1, "quote_usd_per_system": 3000}})
    with pytest.raises(InvalidScenarioError) as err:
        plan(s, CATALOG)
    assert err.value.field == "platform.gpus"  # the GPU count, not a system the scenario does not name
    assert "1 × rtx-4090" in str(err.value) and "1 GPUs" not in str(err.value)
    # the BF16 checkpoint needs a 4-GPU instance; a 4-bit build fits the one card at the request's context
    assert "at least 4 GPUs" in err.value.allowed and "int4-awq" in err.value.allowed
    awq = Scenario.model_validate({**s.model_dump(exclude_unset=True), "quantization": "int4-awq"})
    assert plan(awq, CATALOG).capacity.cell.gpus == 1


def test_a_bare_gpu_without_a_price_names_the_priced_systems_built_on_it():
    s = Scenario.model_validate({**HOME, "quantization": "int4-awq", "platform": {"gpu": "RTX 4090", "gpus": 1}})
    with pytest.raises(InvalidScenarioError) as err:
        plan(s, CATALOG)
    assert err.value.field == "platform.quote_usd_per_system"
    assert "platform.system: rtx-4090-workstation (1 × rtx-4090)" in str(err.value)
    # a GPU no priced system is built on: the key alone
    h20 = Scenario.model_validate({**s.model_dump(exclude_unset=True), "platform": {"gpu": "h20", "gpus": 1}})
    with pytest.raises(InvalidScenarioError, match=r"\(platform\.system\)"):
        plan(h20, CATALOG)


def test_a_monthly_bill_under_ten_shows_its_cents_in_the_recommendation_and_the_cards():
    s = Scenario.model_validate({**HOME, "engine": "llamacpp", "quantization": "q4_k_m",
                                 "platform": {"system": "rtx-4090-workstation"}})
    r = plan(s, CATALOG)
    api = r.recommendation.monthly_usd["stay on an API"]
    assert 0 < api < 1  # five chat seats cost cents a month at an API
    for currency, symbol in (("usd", r"\$"), ("eur", "€")):
        assert re.search(rf"API {symbol}0\.\d+", recommendation_reasons(r, currency)[0])
    cards = {c.key: c.value for c in plan_cards(r)}
    assert re.fullmatch(r"\$0\.\d+", cards["api_cost"]) and re.fullmatch(r"\$0\.\d+", cards["billing"])
