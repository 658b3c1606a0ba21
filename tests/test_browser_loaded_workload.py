"""A loaded scenario whose workload names no preset (a search's pick, a shared link's stated load)
plans as loaded, shown as a preset option of its own, until the user chooses a preset."""

import json
import urllib.parse

import pytest

import test_browser
from test_browser import api_view, card_values, planned, scenario_in_url

server, browser, page = test_browser.server, test_browser.browser, test_browser.page

pytestmark = pytest.mark.slow

STATED_LOAD = {"model": "qwen3-32b", "platform": {"system": "hgx-h100"},
               "workload": {"monthly_tokens": 5000000, "output_share": 0.3}, "target_users": 100}


def test_a_linked_load_without_a_preset_plans_as_loaded_until_a_preset_is_chosen(page, server):
    page.goto(server + "/?s=" + urllib.parse.quote(json.dumps(STATED_LOAD)))
    stamp = planned(page)
    assert scenario_in_url(page)["workload"] == STATED_LOAD["workload"]
    assert page.eval_on_selector("#preset", "e => e.selectedOptions[0].textContent") == (
        "Chat seat (typical human assistant user), as the scenario changes it")
    expected = {c["key"]: c["value"] for c in api_view(server, scenario_in_url(page))["cards"] if c["key"] != "recommendation"}
    assert card_values(page) == expected
    page.select_option("#preset", "agent-worker")
    planned(page, stamp)
    assert scenario_in_url(page)["workload"] == {"preset": "agent-worker"}


def test_a_saved_scenario_with_a_preset_takes_the_custom_load_option_away(page, server):
    page.goto(server + "/?s=" + urllib.parse.quote(json.dumps(STATED_LOAD)))
    planned(page)
    page.evaluate("""() => fillForm({model: "qwen3-32b", platform: {system: "hgx-h100"},
                                     workload: {preset: "agent-worker", monthly_tokens: 7000000}})""")
    assert page.eval_on_selector_all('#preset option[value=""]', "os => os.length") == 0
    assert page.eval_on_selector("#preset", "e => e.value") == "agent-worker"


def test_a_link_stating_no_workload_shows_the_preset_the_scenario_plans(page, server):
    """A scenario without workload keys plans chat-seat (economics/workloads.py): the form selects it."""
    page.goto(server + "/?s=" + urllib.parse.quote(json.dumps({k: v for k, v in STATED_LOAD.items() if k != "workload"})))
    planned(page)
    assert page.eval_on_selector_all('#preset option[value=""]', "os => os.length") == 0
    assert page.eval_on_selector("#preset", "e => e.value") == "chat-seat"
    assert scenario_in_url(page).get("workload", {}).get("preset", "chat-seat") == "chat-seat"
    expected = {c["key"]: c["value"] for c in api_view(server, scenario_in_url(page))["cards"] if c["key"] != "recommendation"}
    assert card_values(page) == expected
