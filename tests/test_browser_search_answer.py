"""The "Find the cheapest" answer in headless Chromium: a search that fails replaces the earlier answer
(no row, reason or chart of it stays beside the error), a search that finds nothing shows the reasons
and no empty table, the bursty arrivals' spell length reaches the search from the form, the chart has
an accessible name, and "Use this" takes the keyboard focus to the simulator."""

import pytest

import test_browser
from test_browser import planned
from test_browser_search import searched, small_h100_search

server, browser, page = test_browser.server, test_browser.browser, test_browser.page
pytestmark = pytest.mark.slow


def _small_search(pg):
    pg.select_option("#search-model", "qwen3-8b")
    pg.fill("#search-users", "50")
    pg.fill("#search-top", "3")
    pg.select_option("#search-vendors", ["amd"])


def test_a_failed_search_leaves_no_answer_of_the_one_before(page, server):
    page.goto(server + "/")
    planned(page)
    _small_search(page)
    page.click("#search-run")
    stamp = searched(page)
    assert page.locator("#search-table tbody tr").count() >= 1 and page.text_content("#search-summary")
    # the chart's accessible name says what it plots, not "Vega visualization"
    assert page.get_attribute("#chart-search", "aria-label").startswith("Cost against interactivity: USD per million")
    page.fill("#search-ttft-p95", "0")  # the form lets 0 through; the server wants more than 0
    page.click("#search-run")
    searched(page, stamp)
    assert "targets.ttft_p95_s" in page.text_content("#search-error")
    assert page.locator("#search-table").is_hidden() and page.locator("#search-table tbody tr").count() == 0
    assert page.text_content("#search-summary") == "" and page.locator("#chart-search svg").count() == 0
    assert page.locator("#search-infeasible-box").is_hidden()
    assert page.evaluate("window.inferplan.lastSearch") is None
    assert all("status of 422" in p for p in page.problems), page.problems
    page.problems.clear()


def test_a_search_that_finds_nothing_shows_reasons_and_no_empty_table(page, server):
    page.goto(server + "/")
    planned(page)
    _small_search(page)
    page.fill("#search-ttft-p95", "0.0001")
    page.click("#search-run")
    searched(page)
    assert page.text_content("#search-status") == "nothing meets every target"
    assert page.locator("#search-table").is_hidden()
    assert page.locator("#search-infeasible li").first.is_visible()


def test_the_burst_period_reaches_the_search_and_a_too_short_one_is_named(page, server):
    page.goto(server + "/")
    planned(page)
    _small_search(page)
    assert page.is_disabled("#search-burst-period")  # Poisson arrivals have no spells
    page.select_option("#search-arrival", "bursty")
    page.fill("#search-peak", "3")
    page.fill("#search-burst-period", "0.000001")
    page.click("#search-run")
    stamp = searched(page)
    assert "(burst_period_s)" in page.text_content("#search-error") and "at least" in page.text_content("#search-error")
    assert page.get_attribute("#search-burst-period", "aria-invalid") == "true"
    assert all("status of 422" in p for p in page.problems), page.problems
    page.problems.clear()
    page.fill("#search-burst-period", "120")
    with page.expect_request("**/api/views/search") as sent:
        page.click("#search-run")
    searched(page, stamp)
    assert sent.value.post_data_json["burst_period_s"] == 120
    assert page.locator("#search-error").is_hidden(), page.text_content("#search-error")
    assert "a busy and a quiet spell per 120 s" in page.text_content("#search-summary")


def test_use_this_takes_keyboard_focus_to_the_simulator(page, server):
    page.goto(server + "/")
    stamp = planned(page)
    _small_search(page)
    page.click("#search-run")
    searched(page)
    page.focus("button[aria-label='Use deployment 1']")
    page.keyboard.press("Enter")
    planned(page, stamp)
    page.wait_for_function("document.activeElement && document.activeElement.id === 'sim-title'", timeout=10000)
    assert page.evaluate("document.activeElement.closest('#simulator') !== null")


def test_bare_gpus_bought_without_a_price_lead_with_the_cause_and_a_price_ranks_them(page, server):
    """Buying bare H100s: the answer leads with why (no purchase price for them alone) and what to search
    next; the price typed beside the buy/rent choice reaches the search and prices the bare GPUs."""
    small_h100_search(page, server, 200)
    page.select_option("#search-pricing", "buy")
    page.click("#search-run")
    stamp = searched(page)
    assert page.locator("#search-answer").is_visible()
    assert page.text_content("#search-headline").startswith("Buying bare h100-sxm GPUs cannot be priced")
    assert "hgx-h100" in page.text_content("#search-next")
    assert page.locator("#search-infeasible li").count() < 5  # one line per reason, not per family
    page.fill("#search-gpu-price", "0")
    page.click("#search-run")
    stamp = searched(page, stamp)
    assert "gpu_price_usd" in page.text_content("#search-error")
    assert page.get_attribute("#search-gpu-price", "aria-invalid") == "true"
    assert page.locator("#search-answer").is_hidden()
    page.problems.clear()
    page.fill("#search-gpu-price", "h100-sxm=25000")
    with page.expect_request("**/api/views/search") as sent:
        page.click("#search-run")
    assert sent.value.post_data_json["gpu_price_usd"] == "h100-sxm=25000"
    searched(page, stamp)
    assert page.locator("#search-answer").is_hidden()
    results = page.evaluate("window.inferplan.lastSearch")["result"]["results"]
    assert results and all(r["capex_usd"] == 25000 * r["gpus_paid"] for r in results)
