"""An API list price carries the last day it was in force (``valid_until``, dated by a source): a
superseded price is left out of every comparison and said to be, and one named on purpose is labelled
with its date; a model with no current price says so instead of printing nothing."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from inferplan.catalog.economics_schema import ApiPrice
from inferplan.economics.plan import plan
from inferplan.economics.plan_inputs import api_price, current_api_prices
from inferplan.economics.scenario import Scenario
from inferplan.report.cards import plan_cards
from inferplan.search.request import SearchRequest
from inferplan.search.run import search

PRICE = {"value": 1.0, "unit": "USD", "kind": "spec", "source": "api-deepseek-pricing-2025"}


def test_deepseeks_v3_list_price_of_2025_is_dated_by_its_source(catalog):
    """DeepSeek moved deepseek-chat to V3.1 prices on 2025-09-05 (api-deepseek-pricing-2025's note)."""
    old = catalog.api_prices.records["api-deepseek-deepseek-v3"]
    assert old.valid_until.isoformat() == "2025-09-05" and old.valid_until_source in catalog.sources
    assert old.validity_label == "list price until 2025-09-05"
    for p in catalog.api_prices:
        assert p.valid_until_source is None or p.valid_until_source in catalog.sources


def test_a_validity_date_needs_its_source():
    with pytest.raises(ValidationError, match="valid_until"):
        ApiPrice(id="x", model="deepseek-v3", provider="p", input_usd_per_mtok=PRICE, output_usd_per_mtok=PRICE,
                 valid_until="2025-09-05")


def test_no_comparison_defaults_to_a_superseded_price(catalog):
    for model in {p.model for p in catalog.api_prices}:
        chosen = api_price(catalog, model, None)
        assert chosen is None or not chosen.superseded, model
    assert api_price(catalog, "deepseek-v3", None).id == "api-openrouter-deepseek-v3"
    assert "api-deepseek-deepseek-v3" not in {p.id for p in current_api_prices(catalog, "deepseek-v3")}


@pytest.fixture(scope="module")
def deepseek_search(catalog):
    return search(SearchRequest(models=("deepseek-v3",), users=50, workload="agent-worker", systems=("hgx-b200",),
                                top=1), catalog)


def test_search_compares_with_current_prices_and_says_which_it_left_out(deepseek_search):
    ids = {a.id for a in deepseek_search.api}
    assert "api-openrouter-deepseek-v3" in ids and "api-deepseek-deepseek-v3" not in ids
    assert any("api-deepseek-deepseek-v3" in n and "list price until 2025-09-05" in n for n in deepseek_search.notes)


def test_a_superseded_price_named_in_a_plan_is_labelled_with_its_date(catalog):
    s = Scenario.model_validate({"model": "deepseek-v3", "quantization": "fp8-block", "engine": "sglang",
                                 "platform": {"system": "hgx-b200"}, "workload": {"preset": "agent-worker"},
                                 "target_users": 50, "money": {"api_alternative": "api-deepseek-deepseek-v3"}})
    r = plan(s, catalog)
    assert r.api_alternative == "api-deepseek-deepseek-v3" and r.api_alternative_valid_until.isoformat() == "2025-09-05"
    assert r.api_price == "api-openrouter-deepseek-v3"  # the quote rests on a current price
    card = next(c for c in plan_cards(r) if c.key == "api_alternative")
    assert card.note == "list price until 2025-09-05"
    assert any("api-deepseek-deepseek-v3 is deepseek's list price until 2025-09-05" in a for a in r.assumptions)
    unnamed = plan(s.model_copy(update={"money": s.money.model_copy(update={"api_alternative": None})}), catalog)
    assert unnamed.api_alternative_valid_until is None
    assert any("left out of API comparisons: api-deepseek-deepseek-v3" in a for a in unnamed.assumptions)


def test_the_2507_qwen3_235b_has_its_own_api_price_and_a_model_without_one_says_so(catalog):
    (price,) = current_api_prices(catalog, "qwen3-235b-a22b-2507")
    assert (price.provider, price.input_usd_per_mtok.value, price.output_usd_per_mtok.value) == ("openrouter", 0.09, 0.1)
    res = search(SearchRequest(models=("qwen3-4b",), request_rate_per_s=1.0, input_len=500, output_len=100,
                               systems=("hgx-h100",), engines=("vllm",), top=1), catalog)
    assert res.api == ()
    assert "no current API price is catalogued for qwen3-4b: nothing to compare with at an API" in res.notes


@pytest.mark.parametrize("name", ["qwen3:8b", "Qwen/Qwen3-8B"])
def test_a_model_named_by_tag_or_repo_compares_with_its_cards_api_price(catalog, name):
    """The price belongs to the model card: an Ollama tag or a Hugging Face repo finds the card's price, in a
    search and in a plan, as the card id does."""
    res = search(SearchRequest(models=(name,), users=20, accelerators=("rtx-4090",), top=1), catalog)
    assert "api-openrouter-qwen3-8b" in {a.id for a in res.api}
    assert not any("no current API price" in n for n in res.notes)
    s = Scenario.model_validate({"model": name, "platform": {"gpu": "rtx-4090", "gpus": 1, "quote_usd_per_system": 3000},
                                 "workload": {"preset": "chat-seat"}, "target_users": 20})
    assert plan(s, catalog).api_price == "api-openrouter-qwen3-8b"


@pytest.mark.parametrize("name", ["qwen3:32b", "Qwen/Qwen3-32B"])
def test_a_model_named_by_an_ollama_tag_or_an_alias_compares_with_its_cards_api_price(catalog, name):
    s = Scenario.model_validate({"model": name, "platform": {"system": "rtx-4090-workstation"},
                                 "workload": {"preset": "chat-seat"}, "target_users": 5})
    by_id = api_price(catalog, "qwen3-32b", None)
    assert by_id is not None
    r = plan(s.model_copy(update={"quantization": "gguf-q4_k_m", "engine": "llamacpp"}), catalog)
    assert r.api_price == by_id.id  # not "no API price": the recommendation weighs the same API as for qwen3-32b
    assert not any("no API price" in a for a in r.assumptions)
