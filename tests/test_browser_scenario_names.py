"""The page names a scenario as a person reads it (the catalogue's names and the GPU count, not an internal
key), and a scenario saved under a name is planned and reported under that name."""

import pytest

import test_browser
from test_browser import planned, scenario_in_url
from test_browser_unpriced_memory import llama_on_four_h100s

server, browser, page = test_browser.server, test_browser.browser, test_browser.page

pytestmark = pytest.mark.slow


def test_a_scenario_on_four_gpus_is_named_with_their_count_and_name_and_saved_under_its_new_name(page, server):
    stamp = llama_on_four_h100s(page, server)
    page.fill("#platform_price", "100000")
    page.wait_for_function("() => new URL(location).searchParams.get('s').includes('100000')", timeout=60000)
    stamp = planned(page, stamp)
    assert scenario_in_url(page)["name"] == "Llama 3.3 70B Instruct on 4× NVIDIA H100 SXM5 80GB"
    page.fill("#scenario-name", "Small plan")
    page.click("#save-scenario")
    page.wait_for_function("() => document.getElementById('status').textContent.startsWith('saved')", timeout=30000)
    assert scenario_in_url(page)["name"] == "Small plan"
    with page.expect_download(timeout=60000) as download:
        page.click("#download-report")
    html = open(download.value.path(), encoding="utf-8").read()
    assert "Small plan" in html and "on 4× NVIDIA H100" not in html
