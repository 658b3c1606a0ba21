"""The Users + ROI simulator shows how to launch the replica cell it sized: the plan's own launch command and
notes (``/api/plan``'s ``deploy``, as ``inferplan plan`` prints it), following the form."""

import httpx
import pytest

import test_browser
from test_browser import planned

server, browser, page = test_browser.server, test_browser.browser, test_browser.page

pytestmark = pytest.mark.slow

TWO_H100 = {"model": "llama-3.3-70b", "engine": "vllm", "quantization": "fp8",
            "platform": {"gpu": "h100-sxm", "gpus": 2, "price_point": "mid", "quote_usd_per_system": 60000},
            "workload": {"preset": "coding-developer-median"}, "target_users": 500}


def _plan(server, scenario) -> dict:
    return httpx.post(server + "/api/plan", json={"scenario": scenario, "draws": 2000}, timeout=60).json()


def test_the_simulator_shows_the_launch_of_the_cell_it_sized_and_follows_the_form(page, server):
    page.goto(server + "/")
    stamp = planned(page)
    first = _plan(server, page.evaluate("readScenario()"))
    assert first["deploy"] and page.is_hidden("#launch") is False
    assert page.text_content("#launch-command") == first["deploy"]
    assert page.locator("#launch-notes li").all_text_contents() == first["deploy_notes"]
    page.evaluate("(s) => { fillForm(s); update(); }", TWO_H100)
    planned(page, stamp)
    second = _plan(server, page.evaluate("readScenario()"))
    assert second["deploy"] != first["deploy"] and "Llama-3.3-70B" in second["deploy"]
    assert page.text_content("#launch-command") == second["deploy"]
