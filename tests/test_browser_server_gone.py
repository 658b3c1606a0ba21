"""A request that gets no reply (the server stopped, the network down) says so in words a user can act on,
in the error box of the form it came from, instead of the browser's "Failed to fetch"."""

import pytest

import test_browser
from test_browser import planned

server, browser, page = test_browser.server, test_browser.browser, test_browser.page

pytestmark = pytest.mark.slow


def test_a_plan_and_a_search_without_a_reply_say_the_server_did_not_answer(page, server):
    page.goto(server + "/")
    planned(page)
    page.route("**/api/**", lambda route: route.abort("connectionrefused"))
    page.fill("#target_users", "321")
    page.dispatch_event("#target_users", "change")
    page.wait_for_function("() => !document.querySelector('#error').hidden", timeout=10000)
    assert "the server did not answer" in page.text_content("#error")  # it read "Failed to fetch"
    assert "inferplan serve" in page.text_content("#error")
    page.click("#search-run")
    page.wait_for_function("() => !document.querySelector('#search-error').hidden", timeout=10000)
    assert "the server did not answer" in page.text_content("#search-error")
    page.unroute("**/api/**")
    page.fill("#target_users", "322")
    page.dispatch_event("#target_users", "change")
    page.wait_for_function("() => document.querySelector('#error').hidden", timeout=60000)  # the next plan clears it
    assert page.locator("#cards .card").count() > 0
    page.problems.clear()  # the refused requests' console lines are the point of this test


def test_a_report_download_without_a_reply_says_the_server_did_not_answer(page, server):
    page.goto(server + "/")
    planned(page)
    page.route("**/api/report", lambda route: route.abort("connectionrefused"))
    page.click("#download-report")
    page.wait_for_function("() => !document.querySelector('#error').hidden", timeout=10000)
    assert "the server did not answer" in page.text_content("#error")  # it read "Failed to fetch"
    page.problems.clear()  # the refused request's console line is the point of this test
