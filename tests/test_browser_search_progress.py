"""The Find the cheapest view's progress bar, in headless Chromium: shown while the search runs with the
server's figures (the stage it names, done of total), hidden when the answer is in."""

import json

import pytest

import test_browser
from test_browser import planned
from test_browser_search import searched

from inferplan.search.budget import CHECK_STAGE, MODEL_STAGE

server, browser, page = test_browser.server, test_browser.browser, test_browser.page
pytestmark = pytest.mark.slow

# every state of the bar as it changes: shown or not, its value and max attributes, its label's text
WATCH = """() => {
  window.barStates = [];
  const box = document.getElementById("search-progress-box"), bar = document.getElementById("search-progress");
  const record = () => barStates.push({ hidden: box.hidden, value: bar.getAttribute("value"),
    max: bar.getAttribute("max"), label: bar.labels[0].textContent });
  new MutationObserver(record).observe(box, { attributes: true, subtree: true, childList: true, characterData: true });
}"""


def test_a_search_shows_its_progress_then_the_table(page, server):
    page.goto(server + "/")
    planned(page)
    assert page.locator("#search-progress-box").is_hidden()
    page.select_option("#search-model", "qwen3-8b")
    page.select_option("#search-engines", "vllm")
    page.fill("#search-top", "3")
    page.evaluate("SEARCH_PROGRESS.shownAfterMs = 0")  # shown from the start: a quick search is seen too
    page.evaluate(WATCH)
    page.click("#search-run")
    searched(page)
    assert page.locator("#search-error").is_hidden(), page.text_content("#search-error")
    rows = page.locator("#search-table tbody tr")
    assert rows.count() >= 1 and page.locator("#search-table").is_visible()
    assert page.text_content("#search-status") == f"{rows.count()} deployments"
    assert page.locator("#search-progress-box").is_hidden()  # the answer is in: no bar
    states = page.evaluate("barStates")
    shown = [s for s in states if not s["hidden"] and s["value"] is not None]
    assert shown, states
    result = page.evaluate("window.inferplan.lastSearch.result")
    for s in shown:  # the server's figures, passed through: done of the stage's total
        assert int(s["value"]) <= int(s["max"])
        stage = s["label"].removeprefix("Search progress: ")
        assert (stage, int(s["max"])) in ((MODEL_STAGE, result["cells"]), (CHECK_STAGE, 3)), s
    assert any(s["label"] == f"Search progress: {MODEL_STAGE}" for s in shown)
    assert states[-1]["hidden"]


def test_a_search_refused_mid_way_shows_its_error_and_no_bar(page, server):
    """A search stopped after its progress began (the stream's last line an error body) reads as a refused
    search does: the error, no table, no bar."""
    page.goto(server + "/")
    planned(page)
    error = {"error": {"field": "users", "message": "too many", "allowed": "at most 10"},
             "detail": [{"loc": ["body", "users"], "msg": "too many", "type": "InvalidScenarioError",
                         "allowed": "at most 10"}]}
    body = json.dumps({"progress": {"done": 1, "total": 4, "stage": MODEL_STAGE}}) + "\n" + json.dumps(error) + "\n"
    page.route("**/api/views/search", lambda route: route.fulfill(status=200, content_type="application/x-ndjson",
                                                                  body=body))
    page.evaluate(WATCH)
    page.click("#search-run")
    searched(page)
    assert page.text_content("#search-error") == "Users (users): too many (allowed: at most 10)"
    assert page.get_attribute("#search-users", "aria-invalid") == "true"
    assert page.locator("#search-table").is_hidden() and page.locator("#search-progress-box").is_hidden()
