"""catalog/memo.py: a remembered answer is the answer, and only what can be remembered is."""

from inferplan.catalog.loader import load_catalog
from inferplan.catalog.memo import per_catalog
from inferplan.economics.capacity import loadout_capacity
from inferplan.report.views import PlanRequest, plan_view
from inferplan.economics.scenario import Scenario

SCENARIO = {"model": "llama-3.3-70b", "quantization": "fp8", "platform": {"system": "hgx-h100"},
            "workload": {"preset": "chat-seat"}, "target_users": 2000}


def test_a_remembered_plan_is_the_plan_computed_afresh():
    catalog = load_catalog()
    first = {u: plan_view(PlanRequest(scenario=Scenario.model_validate({**SCENARIO, "target_users": u}), draws=200), catalog)
             for u in (10, 2000, 2001)}
    hits = loadout_capacity.cache_info().hits
    again = plan_view(PlanRequest(scenario=Scenario.model_validate({**SCENARIO, "target_users": 2000}), draws=200), catalog)
    assert loadout_capacity.cache_info().hits > hits  # remembered: another user count packs the same cells
    assert again.model_dump_json() == first[2000].model_dump_json()
    loadout_capacity.cache_clear()
    fresh = plan_view(PlanRequest(scenario=Scenario.model_validate({**SCENARIO, "target_users": 2000}), draws=200), catalog)
    assert fresh.model_dump_json() == first[2000].model_dump_json()
    assert first[10].result.loadouts <= first[2000].result.loadouts <= first[2001].result.loadouts


def test_only_calls_with_a_catalogue_and_hashable_arguments_are_remembered():
    calls = []

    @per_catalog(maxsize=8)
    def count(catalog, key):
        calls.append(key)
        return len(calls)

    catalog = load_catalog()
    assert count(catalog, "a") == count(catalog, "a") == 1  # remembered
    assert count(catalog, ["a"]) == 2 and count(catalog, ["a"]) == 3  # a list cannot be a key: computed each time
    assert count(None, "a") == 4 and count(None, "a") == 5  # no catalogue object: the one loaded could differ


def test_a_stated_default_is_another_question_than_the_default_left_out():
    """pydantic's equality leaves out which fields were given: a deployment naming vLLM on a Mac is
    planned on vLLM, one naming no engine on llama.cpp, and the two compare equal."""
    from inferplan.inputs.deployment import Deployment

    calls = []

    @per_catalog(maxsize=8)
    def engine_of(catalog, d):
        calls.append(d)
        return "engine" in d.model_fields_set

    catalog = load_catalog()
    unstated, stated = Deployment(model="qwen3-8b", gpu="apple-m3-ultra"), Deployment(model="qwen3-8b", gpu="apple-m3-ultra",
                                                                                       engine="vllm")
    assert unstated == stated and (engine_of(catalog, unstated), engine_of(catalog, stated)) == (False, True)
    assert engine_of(catalog, Deployment(model="qwen3-8b", gpu="apple-m3-ultra", engine="vllm")) is True and len(calls) == 2
