"""GPUs of one kind with no price typed yet: the plan is refused at the price, but the Memory & speed box
still answers what the replica cell holds (the library's memory part, POST /api/views/memory)."""

import httpx
import pytest

import test_browser
from test_browser import planned

server, browser, page = test_browser.server, test_browser.browser, test_browser.page

pytestmark = pytest.mark.slow

UNPRICED = {"model": "llama-3.3-70b", "quantization": "fp8", "engine": "vllm",
            "platform": {"gpu": "h100-sxm", "gpus": 4}, "workload": {"preset": "coding-developer-median"},
            "target_users": 1000}


def llama_on_four_h100s(page, server) -> str:
    """The page's form set to Llama 3.3 70B on four H100 GPUs (no price typed); the last plan's stamp."""
    page.goto(server + "/")
    stamp = planned(page)
    page.select_option("#model", "llama-3.3-70b")
    stamp = planned(page, stamp)
    page.select_option("#system", "gpu:h100-sxm")
    page.fill("#gpus", "4")
    return stamp


def test_four_gpus_without_a_price_still_show_what_is_left_for_the_kv_cache(page, server):
    llama_on_four_h100s(page, server)
    page.wait_for_function("() => document.body.dataset.memoryPlanned", timeout=60000)
    assert "quote_usd_per_system" in page.text_content("#error")
    assert page.locator("#platform_price").get_attribute("aria-invalid") == "true"
    page.problems[:] = [p for p in page.problems if "status of 422" not in p]  # the refused plan, logged
    assert page.locator("#cards .card").count() == 0 and page.locator("#chart-cost_per_user svg").count() == 0
    summary = page.text_content("#memory-summary")
    assert summary.startswith("Replica cell: 4× h100-sxm") and "KV cache" in summary, summary
    assert page.locator("#chart-memory svg").count() == 1 and page.locator("#chart-frontier svg").count() == 1
    scenario = page.evaluate("readScenario()")
    view = httpx.post(server + "/api/views/memory", json={"scenario": scenario}, timeout=60).json()
    assert summary == view["memory_summary"]


def test_the_memory_part_answers_where_the_plan_wants_a_price(server):
    plan = httpx.post(server + "/api/plan", json={"scenario": UNPRICED}, timeout=60)
    assert plan.status_code == 422 and plan.json()["error"]["field"] == "scenario.platform.quote_usd_per_system"
    view = httpx.post(server + "/api/views/memory", json={"scenario": UNPRICED}, timeout=60).json()
    priced = httpx.post(server + "/api/plan", json={"scenario": {**UNPRICED, "platform": {
        **UNPRICED["platform"], "quote_usd_per_system": 120000}}, "draws": 0}, timeout=60).json()
    assert view["memory_summary"] == priced["memory_summary"] and view["charts"]["memory"] == priced["charts"]["memory"]
    bad = httpx.post(server + "/api/views/memory", json={"scenario": {**UNPRICED, "model": "no-such-model"}}, timeout=60)
    assert bad.status_code == 422 and bad.json()["error"]["field"] == "scenario.model"


def memory_planned(page, previous=None) -> str:
    page.wait_for_function("([prev]) => document.body.dataset.memoryPlanned && document.body.dataset.memoryPlanned !== prev",
                           arg=[previous], timeout=60000)
    return page.evaluate("document.body.dataset.memoryPlanned")


def test_a_refused_money_field_keeps_the_memory_answer_and_an_upper_case_currency_is_offered(page, server):
    page.goto(server + "/?c=EUR")
    planned(page)
    assert page.input_value("#currency") == "eur" and "not offered" not in page.text_content("#error")
    stamp = None
    for field, value, path in (("#electricity", "-1", "scenario.money.electricity_usd_per_kwh"),
                               ("#amortization_years", "0", "scenario.money.amortization")):
        page.fill("#electricity", "")
        page.fill("#amortization_years", "4")
        page.fill(field, value)
        stamp = memory_planned(page, stamp)
        assert path in page.text_content("#error")
        assert page.text_content("#memory-summary").startswith("Replica cell:")
        assert page.locator("#chart-memory svg").count() == 1
    page.problems[:] = [p for p in page.problems if "status of 422" not in p]  # the refused plans, logged
