"""What the page shows stays the answer to what the form holds: no chart of an earlier scenario, a note for
what a link held that the page could not take, a field holding no number refused rather than planned blank,
and the Memory & speed box kept where only the costs are refused."""

import json
import urllib.parse

import httpx
import pytest

import test_browser
from test_browser import planned

server, browser, page = test_browser.server, test_browser.browser, test_browser.page

pytestmark = pytest.mark.slow

# a plan without uncertainty (its price typed, no catalogue band to draw from): no P10-P90 chart
NO_UNCERTAINTY = {"model": "llama-3.3-70b", "engine": "vllm", "quantization": "fp8",
                  "platform": {"gpu": "h100-sxm", "gpus": 2, "price_point": "mid", "quote_usd_per_system": 60000},
                  "workload": {"preset": "coding-developer-median"}, "target_users": 500}


def drop_refusals(page):
    page.problems[:] = [p for p in page.problems if "status of 422" not in p]  # a refused plan, logged


def test_a_plan_without_uncertainty_leaves_no_earlier_uncertainty_chart(page, server):
    view = httpx.post(server + "/api/plan", json={"scenario": NO_UNCERTAINTY, "draws": 2000}, timeout=60).json()
    assert view["uncertainty"] is None and "uncertainty" not in view["charts"]
    page.goto(server + "/")
    stamp = planned(page)
    figure = page.locator("#chart-uncertainty")
    assert figure.locator("svg").count() == 1 and figure.get_attribute("aria-label")
    page.evaluate("(s) => { fillForm(s); update(); }", NO_UNCERTAINTY)
    planned(page, stamp)
    assert figure.locator("svg").count() == 0 and figure.get_attribute("aria-label") is None
    assert page.locator("#chart-cost_per_user svg").count() == 1 and page.locator("#chart-cost_per_user").get_attribute("aria-label")


def test_a_link_whose_scenario_cannot_be_read_says_so_until_the_form_changes(page, server):
    page.goto(server + "/?s=garbage")
    stamp = planned(page)
    assert "scenario could not be read" in page.text_content("#error") and page.is_visible("#error")
    page.fill("#target_users", "40")
    planned(page, stamp)
    assert page.is_hidden("#error"), page.text_content("#error")


def test_a_currency_the_page_does_not_offer_plans_in_usd_and_says_so(page, server):
    page.goto(server + "/?c=xyz")
    planned(page)
    assert page.eval_on_selector("#currency", "e => e.value") == "usd"
    note = page.text_content("#error")
    assert note.startswith("Currency") and "xyz" in note and "usd, eur" in note and "USD" in note, note
    assert page.locator("#cards .card").count() > 0


@pytest.mark.parametrize("control, label", [("#target_users", "Target users"), ("#electricity", "Electricity")])
def test_a_field_holding_no_number_is_refused_not_planned_blank(page, server, control, label):
    page.goto(server + "/")
    planned(page)
    plans = []
    page.on("request", lambda r: plans.append(r) if r.url.endswith("/api/plan") else None)
    page.fill(control, "")
    page.type(control, "1e")  # what the browser cannot read as a number: the field's value reads ""
    page.wait_for_function("() => document.getElementById('status').textContent.startsWith('not planned')", timeout=60000)
    assert page.locator(control).get_attribute("aria-invalid") == "true"
    error = page.text_content("#error")
    assert error.startswith(label) and "not a number" in error and "allowed:" in error, error
    assert page.locator("#cards .card").count() == 0
    page.wait_for_timeout(500)
    assert not plans  # nothing was planned with the field's default


def test_target_users_says_what_blank_plans_at(page, server):
    page.goto(server + "/")
    stamp = planned(page)
    assert "default" in page.get_attribute("#target_users", "placeholder")
    page.fill("#target_users", "")
    planned(page, stamp)
    users = json.loads(urllib.parse.parse_qs(urllib.parse.urlparse(page.url).query)["s"][0]).get("target_users")
    assert users is None and page.get_attribute("#target_users", "placeholder") == "100 (the default)"


def test_a_price_on_apple_silicon_keeps_the_memory_answer_when_the_power_is_refused(page, server):
    page.goto(server + "/")
    stamp = planned(page)
    page.select_option("#model", "qwen3-32b")
    stamp = planned(page, stamp)
    page.select_option("#engine", "")  # the platform's own
    stamp = planned(page, stamp)
    page.select_option("#quantization", "")  # the model's checkpoint
    stamp = planned(page, stamp)
    page.select_option("#system", "gpu:apple-m4-max")
    page.wait_for_function("() => document.body.dataset.memoryPlanned", timeout=60000)
    first = page.evaluate("document.body.dataset.memoryPlanned")
    page.fill("#platform_price", "3000")
    page.wait_for_function("(prev) => document.body.dataset.memoryPlanned !== prev", arg=first, timeout=60000)
    drop_refusals(page)
    assert "power_w_per_system" in page.text_content("#error")
    assert page.locator("#platform_power").get_attribute("aria-invalid") == "true"
    assert "KV cache" in page.text_content("#memory-summary") and page.locator("#chart-memory svg").count() == 1
    assert page.text_content("#status") == "memory and speed up to date; the costs need the field marked"


def test_the_cards_are_not_a_live_region_and_the_search_figure_is_named(page, server):
    page.goto(server + "/")
    planned(page)
    assert page.get_attribute("#cards", "aria-live") is None and page.get_attribute("#status", "role") == "status"
    page.select_option("#search-model", "llama-3.1-8b")
    page.fill("#search-users", "50")
    page.click("#search-run")
    page.wait_for_function("() => document.body.dataset.searched", timeout=200000)
    assert page.locator("#chart-search svg").count() == 1
    assert page.get_attribute("#chart-search", "aria-label").startswith("Cost against interactivity")
