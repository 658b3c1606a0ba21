"""The page's Delete of a stored run shows a failing request as the page's other API errors show (next to the
upload form), rather than leaving an unhandled error and the list as it was with nothing said."""

from pathlib import Path

import httpx
import pytest

import test_browser

server, browser, page = test_browser.server, test_browser.browser, test_browser.page
pytestmark = pytest.mark.slow
REPORT = Path(__file__).parent / "data" / "measurements" / "guidellm_report.json"


def _stored_run(server) -> int:
    r = httpx.post(server + "/api/measurements", json={"files": [{"name": REPORT.name, "content": REPORT.read_text()}],
                                                       "provenance": {"model": "llama-3.1-8b", "gpu": "h100"}})
    assert r.status_code == 201, r.text
    return r.json()[0]["id"]


def test_a_delete_whose_list_request_fails_shows_the_error(page, server):
    run_id = _stored_run(server)
    page.goto(server + "/")
    page.wait_for_selector(f"#measurement-list button[aria-label='Delete run {run_id}']", timeout=30000)
    page.route("**/api/measurements/view", lambda route: route.fulfill(
        status=500, content_type="application/json", body='{"detail": [{"msg": "the store could not be read"}]}'))
    page.click(f"#measurement-list button[aria-label='Delete run {run_id}']")
    page.wait_for_selector("#measurement-error >> text=the store could not be read", timeout=30000)
    assert page.is_visible("#measurement-error")
    assert httpx.get(server + "/api/measurements").json() == []  # the delete itself went through
    page.problems[:] = [p for p in page.problems if "500 (Internal Server Error)" not in p]


def test_a_delete_the_server_refuses_shows_the_refusal_and_the_list_as_stored(page, server):
    run_id = _stored_run(server)
    page.goto(server + "/")
    page.wait_for_selector(f"#measurement-list button[aria-label='Delete run {run_id}']", timeout=30000)
    httpx.delete(f"{server}/api/measurements/{run_id}")  # deleted meanwhile (another tab): the page's delete is a 404
    page.click(f"#measurement-list button[aria-label='Delete run {run_id}']")
    page.wait_for_selector(f"#measurement-error >> text=no stored measurement {run_id}", timeout=30000)
    assert page.eval_on_selector_all("#measurement-list li", "items => items.length") == 0  # read again
    page.problems[:] = [p for p in page.problems if "404 (Not Found)" not in p]
