"""What a newcomer meets on the web page in the first minutes, driven in headless Chromium: the
default plan, a quote of any size, errors that replace the answer, every platform (unpriced ones and
bare GPUs with a count), every engine, comparisons that name and diff their scenarios, and charts
that fit a phone and a desktop."""

from pathlib import Path

import httpx
import pytest

from inferplan.catalog.loader import load_catalog

import test_browser
from test_browser import card_values, planned, scenario_in_url, send_quote

# the browser test module's fixtures, shared
server, browser, page = test_browser.server, test_browser.browser, test_browser.page

pytestmark = pytest.mark.slow
README = Path(__file__).resolve().parents[1] / "README.md"


def test_the_default_plan_is_the_one_the_readme_describes(page, server):
    page.goto(server + "/")
    planned(page)
    sent = scenario_in_url(page)
    assert (sent["model"], sent["quantization"], sent["engine"], sent["platform"]["system"]) == (
        "qwen3-235b-a22b", "fp8", "sglang", "hgx-b200")
    assert "Qwen3-235B FP8 with SGLang on HGX B200" in " ".join(README.read_text().split())


def test_a_quote_of_a_quarter_million_is_saved(page, server):
    page.goto(server + "/")
    planned(page)
    send_quote(page, system="hgx-h100", price="250000", quoted_on="2026-11-30", vendor="Example integrator")
    page.locator("#quote-list li", has_text="$250,000").wait_for(timeout=10000)
    assert any(q["price_usd"] == 250000 for q in httpx.get(server + "/api/quotes").json())


def test_an_error_clears_the_answer_and_an_unpriced_server_plans_with_a_typed_price(page, server):
    page.goto(server + "/")
    stamp = planned(page)
    assert page.locator("#cards .card").count() >= 20
    option = page.locator("#system option[value='rtx-pro-6000-server-8x']")  # a system the catalogue prices at no band
    assert "type one" in option.text_content()
    page.select_option("#model", "qwen3-32b")
    stamp = planned(page, stamp)
    page.select_option("#system", "rtx-pro-6000-server-8x")
    page.locator("#error").wait_for(state="visible", timeout=30000)
    assert "quote_usd_per_system" in page.text_content("#error")
    # the browser logs the refused request (422) on its console: expected here, nothing else is
    assert all("status of 422" in p for p in page.problems), page.problems
    page.problems.clear()
    assert page.locator("#cards .card").count() == 0 and page.locator("#simulator figure svg").count() == 0
    assert page.text_content("#recommendation") == ""
    # what the replica cell holds needs no price: the Memory & speed box answers it
    page.wait_for_function("() => document.body.dataset.memoryPlanned", timeout=60000)
    assert page.text_content("#memory-summary").startswith("Replica cell: ")
    page.fill("#platform_price", "12000")
    planned(page, stamp)
    assert page.locator("#error").is_hidden() and page.locator("#cards .card").count() >= 20
    sent = scenario_in_url(page)
    assert sent["platform"] == {"system": "rtx-pro-6000-server-8x", "price_point": "mid", "quote_usd_per_system": 12000}


def test_two_bare_gpus_with_llama_cpp(page, server):
    page.goto(server + "/")
    stamp = planned(page)
    engines = page.eval_on_selector_all("#engine option", "os => os.map(o => o.value)")
    # the platform's own (blank) first, then every catalogue engine (vLLM, SGLang, TensorRT-LLM, llama.cpp, MLX, ...)
    assert engines[0] == "" and set(engines[1:]) == {e.id for e in load_catalog().engines} >= {"vllm", "sglang", "trtllm",
                                                                                               "llamacpp", "mlx"}
    assert page.locator("#gpus").is_hidden()
    page.select_option("#model", "qwen3-32b")
    stamp = planned(page, stamp)
    page.select_option("#system", "gpu:rtx-4090")
    assert page.locator("#gpus").is_visible()
    page.fill("#gpus", "2")
    page.select_option("#engine", "llamacpp")
    page.select_option("#quantization", "gguf-q4_k_m")
    page.select_option("#preset", "chat-seat")
    page.fill("#platform_price", "4000")
    planned(page, stamp)
    sent = scenario_in_url(page)
    assert sent["platform"]["gpu"] == "rtx-4090" and sent["platform"]["gpus"] == 2 and sent["engine"] == "llamacpp"
    assert page.locator("#error").is_hidden(), page.text_content("#error")
    assert card_values(page)["capex"] == "$4,000"


def test_compare_names_both_scenarios_and_marks_what_differs(page, server):
    base = {"model": "qwen3-235b-a22b", "quantization": "fp8", "engine": "sglang",
            "platform": {"system": "hgx-b200"}, "workload": {"preset": "coding-developer-median"}, "target_users": 300}
    for name, system in (("B200 baseline", "hgx-b200"), ("H200 option", "hgx-h200")):
        scenario = {**base, "name": f"{name} (plan name)", "platform": {"system": system}}
        r = httpx.post(server + "/api/scenarios", json={"name": name, "scenario": scenario, "replace": True}, timeout=60)
        assert r.status_code in (200, 201), r.text
    page.goto(server + "/")
    planned(page)
    ids = dict(page.eval_on_selector_all("#compare-a option", "os => os.map(o => [o.textContent, o.value])"))
    page.select_option("#compare-a", ids["B200 baseline"])
    page.select_option("#compare-b", ids["H200 option"])
    page.click("#compare")
    page.locator("#compare-table tr.differs").first.wait_for(timeout=60000)
    head = page.eval_on_selector_all("#compare-table tr:first-child th", "ts => ts.map(t => t.textContent)")
    assert head[1:] == ["B200 baseline", "H200 option"]
    differs = page.eval_on_selector_all("#compare-table tr.differs td:first-child", "ts => ts.map(t => t.textContent)")
    assert "Platform" in differs and "Model" not in differs and "Capex" in differs


@pytest.mark.parametrize("width", [390, 1440])
def test_no_element_is_wider_than_the_screen_and_charts_fit_their_box(browser, server, width):
    context = browser.new_context(viewport={"width": width, "height": 900})
    pg = context.new_page()
    pg.goto(server + "/")
    planned(pg)
    wider = pg.evaluate("""() => [...document.querySelectorAll('body *')]
        .filter(e => !e.closest('.table-wrap') && e.getBoundingClientRect().right > window.innerWidth + 1)
        .map(e => (e.closest('figure') || e).id + ' ' + e.tagName + ' ' + Math.round(e.getBoundingClientRect().right))""")
    assert not wider, wider
    clipped = pg.evaluate("""() => [...document.querySelectorAll('figure[id^=chart-]')]
        .filter(f => f.querySelector('svg') && f.scrollWidth > f.clientWidth + 1).map(f => f.id)""")
    assert not clipped, clipped
    context.close()


def test_what_runs_on_two_rtx_4090s(page, server):
    """The first question a person with a GPU or two asks, answered on the first screen."""
    page.goto(server + "/")
    planned(page)
    assert page.locator("#homelab").bounding_box()["y"] < page.locator("#simulator").bounding_box()["y"]
    page.select_option("#homelab-gpu", "rtx-4090")
    page.fill("#homelab-gpus", "2")
    page.select_option("#homelab-engine", "llamacpp")
    page.select_option("#homelab-quantization", "gguf-q4_k_m")
    page.click("#homelab-run")
    page.wait_for_function("() => document.body.dataset.homelab", timeout=60000)
    assert page.locator("#homelab-error").is_hidden(), page.text_content("#homelab-error")
    rows = page.eval_on_selector_all("#homelab-table tbody tr", "rs => rs.map(r => [...r.cells].map(c => c.textContent))")
    runs = {r[0]: r for r in rows if r[2] == "runs"}
    assert "qwen3-32b" in runs and runs["qwen3-32b"][6].endswith("tok/s")
    assert any(r[2].startswith("needs ") for r in rows)  # the largest models need more GPUs, and say how many
    assert "2 × rtx-4090" in page.text_content("#homelab-summary")


def test_what_runs_on_one_rtx_4090_offers_expert_offload_and_prices_it_with_the_host_ram(page, server):
    """gpt-oss-120b needs 3 GPUs, or the experts of some layers in host RAM: the row says how much RAM,
    and with the host RAM typed, how fast."""
    page.goto(server + "/")
    planned(page)
    page.select_option("#homelab-gpu", "rtx-4090")
    page.select_option("#homelab-engine", "llamacpp")
    page.select_option("#homelab-quantization", "gguf-q4_k_m")

    def rows() -> dict[str, list[str]]:
        page.evaluate("delete document.body.dataset.homelab")
        page.click("#homelab-run")
        page.wait_for_function("() => document.body.dataset.homelab", timeout=60000)
        assert page.locator("#homelab-error").is_hidden(), page.text_content("#homelab-error")
        got = page.eval_on_selector_all("#homelab-table tbody tr", "rs => rs.map(r => [...r.cells].map(c => c.textContent))")
        return {r[0]: r for r in got}

    row = rows()["gpt-oss-120b"]
    assert row[2] == "needs 3 GPUs" and row[6] == "—", row
    assert row[7].startswith("llama.cpp --n-cpu-moe ") and "GiB of host RAM (state the host RAM" in row[7], row
    page.fill("#homelab-host-memory", "64")
    row = rows()["gpt-oss-120b"]
    assert row[6].endswith(" tok/s") and "of the 64 GiB of host RAM" in row[7], row
    header = page.locator("#homelab-table thead th").nth(7).text_content()
    assert header == "With weights in host RAM" and "64 GiB of host RAM" in page.text_content("#homelab-summary")
