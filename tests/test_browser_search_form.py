"""The "Find the cheapest" form says what a platform engineer chooses, in headless Chromium: the systems or
accelerators, engines, models, weight formats and KV-cache types to consider (listed from the server's
choices), the speculative and disaggregated switches, the prefix-cache hit rate and the utilisation
cap; a refused value is named at its control. The search table has a caption and every chart an
accessible name of its own."""

import pytest

import test_browser
from test_browser import planned
from test_browser_polish import DETACHED_LABELS
from test_browser_search import refusals_only, searched, small_h100_search

server, browser, page = test_browser.server, test_browser.browser, test_browser.page
pytestmark = pytest.mark.slow

ACCELERATORS = ["h100-sxm", "h200-sxm"]


def _chosen(pg, selector):
    return pg.eval_on_selector_all(f"{selector} option:checked", "os => os.map(o => o.value)")


def _h100_h200_on_vllm(pg):
    """A search where drafting and disaggregated picks rank among the best: a small model with EAGLE-3
    drafts, and a speed per user that drafting helps reach."""
    pg.select_option("#search-model", "llama-3.1-8b")
    pg.fill("#search-users", "50")
    pg.select_option("#search-preset", "chat-seat")
    pg.fill("#search-speed", "60")
    pg.fill("#search-top", "10")
    pg.select_option("#search-accelerators", ACCELERATORS)
    pg.select_option("#search-engines", ["vllm"])


def test_two_accelerators_and_one_engine_give_picks_only_on_those_and_speculative_off_drafts_none(page, server, catalog):
    page.goto(server + "/")
    planned(page)
    # the lists are the catalogue's, from the server; the switches start at the request's defaults
    assert page.eval_on_selector_all("#search-accelerators option", "os => os.map(o => o.value)") == [
        a.id for a in catalog.accelerators]
    assert page.eval_on_selector_all("#search-systems option", "os => os.map(o => o.value)") == [s.id for s in catalog.systems]
    assert page.is_checked("#search-speculative") and page.is_checked("#search-disaggregated")
    _h100_h200_on_vllm(page)
    assert page.is_disabled("#search-systems")  # accelerators or systems, not both
    with page.expect_request("**/api/views/search") as sent:
        page.click("#search-run")
    body = sent.value.post_data_json
    assert body["accelerators"] == ACCELERATORS and body["engines"] == ["vllm"] and "systems" not in body
    assert body["speculative"] is True and body["disaggregated"] is True
    stamp = searched(page)
    assert page.locator("#search-error").is_hidden(), page.text_content("#search-error")
    results = page.evaluate("window.inferplan.lastSearch")["result"]["results"]
    assert results and {r["accelerator"] for r in results} <= set(ACCELERATORS) and {r["engine"] for r in results} == {"vllm"}
    # both switches on: drafting and disaggregated picks are among them, so switching off has something to remove
    assert any(r["speculative_tokens"] for r in results) and any(r["disaggregated"] for r in results)
    assert page.text_content("#search-table caption").startswith("The cheapest deployments")
    page.click("#search-advanced summary")
    page.uncheck("#search-speculative")
    page.uncheck("#search-disaggregated")
    with page.expect_request("**/api/views/search") as sent:
        page.click("#search-run")
    assert sent.value.post_data_json["speculative"] is False and sent.value.post_data_json["disaggregated"] is False
    searched(page, stamp)
    assert page.locator("#search-error").is_hidden(), page.text_content("#search-error")
    results = page.evaluate("window.inferplan.lastSearch")["result"]["results"]
    assert results and {r["accelerator"] for r in results} <= set(ACCELERATORS)
    assert not any(r["speculative_tokens"] or r["speculative_method"] or r["draft_model"] for r in results)
    assert not any(r["disaggregated"] for r in results)


def test_a_refused_advanced_value_is_named_at_its_control_and_models_formats_reach_the_search(page, server):
    page.goto(server + "/")
    planned(page)
    page.select_option("#search-model", ["qwen3-8b", "llama-3.1-8b"])
    page.fill("#search-users", "50")
    page.fill("#search-top", "5")
    page.select_option("#search-vendors", ["amd"])
    page.focus("#search-advanced summary")  # the rarer settings open from the keyboard
    page.keyboard.press("Enter")
    assert page.evaluate("document.getElementById('search-advanced').open")
    assert page.evaluate(DETACHED_LABELS, "search-form") == []  # opened, each label sits on its control
    page.select_option("#search-quantizations", ["fp8", "bf16"])
    page.select_option("#search-kv-cache-dtypes", ["fp8"])
    page.fill("#search-prefix-cache", "1.5")  # above 1: the form itself holds it back
    assert page.evaluate("document.getElementById('search-prefix-cache').validity.rangeOverflow")
    page.fill("#search-prefix-cache", "0.5")
    page.fill("#search-max-utilisation", "0")  # the form lets 0 through; the server wants more than 0
    page.click("#search-advanced summary")  # folded again: the refusal opens it at the control
    with page.expect_request("**/api/views/search") as sent:
        page.click("#search-run")
    body = sent.value.post_data_json
    # in the lists' order, whatever the order of the clicks
    assert set(body["models"]) == {"qwen3-8b", "llama-3.1-8b"} and set(body["quantizations"]) == {"fp8", "bf16"}
    assert body["kv_cache_dtypes"] == ["fp8"] and body["prefix_cache_hit_rate"] == 0.5
    assert body["targets"]["max_utilisation"] == 0
    stamp = searched(page)
    error = page.text_content("#search-error")
    assert error.startswith("Busiest instance's load at most") and "(targets.max_utilisation)" in error
    assert page.get_attribute("#search-max-utilisation", "aria-invalid") == "true"
    assert page.evaluate("document.getElementById('search-advanced').open")
    refusals_only(page)
    page.fill("#search-max-utilisation", "0.7")
    page.click("#search-run")
    searched(page, stamp)
    assert page.locator("#search-error").is_hidden(), page.text_content("#search-error")
    assert page.get_attribute("#search-max-utilisation", "aria-invalid") is None
    results = page.evaluate("window.inferplan.lastSearch")["result"]["results"]
    assert results and {r["model"] for r in results} <= {"qwen3-8b", "llama-3.1-8b"}
    assert {r["quantization"] for r in results} <= {"fp8", "bf16"} and {r["kv_cache_dtype"] for r in results} == {"fp8"}


def test_every_chart_has_an_accessible_name_of_its_own(page, server):
    page.goto(server + "/")
    planned(page)
    names = {fig: page.get_attribute(f"#chart-{fig}", "aria-label")
             for fig in ("cost_per_user", "payback", "capacity", "uncertainty", "memory", "frontier")}
    assert all(n and n != "Vega visualization" for n in names.values()), names
    assert names["cost_per_user"].startswith("Price per user per month")
    assert names["memory"].startswith("Memory per GPU of")
    assert len(set(names.values())) == len(names)


def test_keyboard_focus_goes_to_the_refused_control_and_back_to_the_search_button(page, server):
    """The search button is disabled while a search runs, which drops its focus to the page's top: a refusal
    puts focus on the control to mend, and an answer gives it back to the button, so Tab goes on from there."""
    small_h100_search(page, server, 50)
    page.fill("#search-ttft-p95", "0")  # the form lets 0 through; the server wants more than 0
    page.focus("#search-run")
    page.keyboard.press("Enter")
    stamp = searched(page)
    assert page.get_attribute("#search-ttft-p95", "aria-invalid") == "true"
    assert page.evaluate("document.activeElement.id") == "search-ttft-p95"
    refusals_only(page)
    page.keyboard.type("2")  # mended where the focus is
    page.focus("#search-run")
    page.keyboard.press("Enter")
    searched(page, stamp)
    assert page.locator("#search-error").is_hidden(), page.text_content("#search-error")
    assert page.evaluate("document.activeElement.id") == "search-run"
