"""A chip sold in several memory sizes (an Apple M-series or Ryzen AI Max) on the web page, driven in
headless Chromium: the simulator and the "What runs on my GPUs?" box offer the sizes the catalogue
lists (from /api/views/memory-configurations), start at the size the library plans the chip's own id
at, send the chosen size's id, say which size the answer is for, and a shared link or a saved scenario
brings the size back."""

import json
import urllib.parse

import httpx
import pytest

import test_browser
from test_browser import api_view, planned, scenario_in_url

# the browser test module's fixtures, shared
server, browser, page = test_browser.server, test_browser.browser, test_browser.page

pytestmark = pytest.mark.slow

# Llama-3.3-70B at Q4_K_M with llama.cpp (the platform's own on Apple silicon): 40 GiB of weights, so
# the 64 GB M4 Max (48 GiB of Metal working set) holds far less KV cache than the 128 GB one
MAC = {"name": "70B on a Mac", "model": "llama-3.3-70b", "quantization": "gguf-q4_k_m",
       "platform": {"gpu": "apple-m4-max", "gpus": 1, "price_point": "mid", "quote_usd_per_system": 3500,
                    "power_w_per_system": 300},
       "workload": {"preset": "chat-seat"}, "target_users": 5}


def _refusals_only(pg):
    """A refused plan (a price cleared with the size it was typed for) logs its 422 on the console:
    expected here, nothing else is."""
    assert all("status of 422" in p for p in pg.problems), pg.problems
    pg.problems.clear()


def _link(server, scenario):
    return server + "/?" + urllib.parse.urlencode({"s": json.dumps(scenario)})


def test_the_simulator_plans_a_64gb_m4_max_and_the_answer_changes_from_the_128gb_one(page, server):
    page.goto(server + "/")
    stamp = planned(page)
    assert page.locator("#gpu-memory").is_hidden()  # a system: no size to pick
    page.select_option("#model", "llama-3.3-70b")
    page.select_option("#quantization", "gguf-q4_k_m")
    page.select_option("#engine", "")
    page.select_option("#preset", "chat-seat")
    page.select_option("#system", "gpu:apple-m4-max")
    assert page.locator("#gpu-memory").is_visible()
    offered = page.eval_on_selector_all("#gpu-memory option", "os => os.map(o => [o.value, o.textContent])")
    listed = next(v for v in httpx.get(server + "/api/views/memory-configurations").json()
                  if v["accelerator"] == "apple-m4-max")["configurations"]
    assert [v for v, _ in offered] == [c["id"] for c in listed] == [
        "apple-m4-max-36gb", "apple-m4-max-48gb", "apple-m4-max-64gb", "apple-m4-max"]
    assert offered[0][1] == "36 GB, 410 GB/s" and offered[3][1] == "128 GB, 546 GB/s (default)"
    assert page.input_value("#gpu-memory") == "apple-m4-max"  # the library's default: the record's 128 GB
    page.fill("#platform_power", "300")
    page.fill("#platform_price", "3500")
    stamp = planned(page, stamp)
    _refusals_only(page)
    assert page.locator("#error").is_hidden(), page.text_content("#error")
    large = page.text_content("#memory-summary")
    assert scenario_in_url(page)["platform"]["gpu"] == "apple-m4-max"
    assert "Apple M4 Max 128 GB" in page.text_content("#answer-size")

    page.select_option("#gpu-memory", "apple-m4-max-64gb")
    assert page.input_value("#platform_price") == ""  # a typed price belongs to the size it was typed for
    page.fill("#platform_price", "2700")
    planned(page, stamp)
    _refusals_only(page)
    sent = scenario_in_url(page)
    assert sent["platform"]["gpu"] == "apple-m4-max-64gb" and sent["platform"]["power_w_per_system"] == 300
    small = page.text_content("#memory-summary")
    assert small != large and "1× apple-m4-max-64gb" in small and "1× apple-m4-max " in large
    assert small == api_view(server, sent)["memory_summary"]  # what the API plans for the size sent
    assert "Apple M4 Max 64 GB (64 GB, 546 GB/s)" in page.text_content("#answer-size")


def test_a_shared_link_and_a_saved_scenario_bring_the_size_back(page, server):
    sized = {**MAC, "platform": {**MAC["platform"], "gpu": "apple-m4-max-64gb"}}
    page.goto(_link(server, sized))
    stamp = planned(page)
    assert page.input_value("#system") == "gpu:apple-m4-max"
    assert page.input_value("#gpu-memory") == "apple-m4-max-64gb"
    assert page.input_value("#platform_power") == "300"
    assert "64 GB" in page.text_content("#answer-size")
    assert scenario_in_url(page)["platform"]["gpu"] == "apple-m4-max-64gb"
    small = page.text_content("#memory-summary")
    page.fill("#scenario-name", "M4 Max 64 GB")
    page.click("#save-scenario")
    page.locator("#saved-list li", has_text="M4 Max 64 GB").wait_for(timeout=10000)
    saved = [s for s in httpx.get(server + "/api/scenarios").json() if s["name"] == "M4 Max 64 GB"]
    assert saved[0]["scenario"]["platform"]["gpu"] == "apple-m4-max-64gb"

    page.goto(_link(server, MAC))  # the same machine at the default size
    stamp = planned(page)
    assert page.input_value("#gpu-memory") == "apple-m4-max" and page.text_content("#memory-summary") != small
    page.click("#saved-list li[data-id='%s'] button:text('Load')" % saved[0]["id"])
    planned(page, stamp)
    assert page.input_value("#gpu-memory") == "apple-m4-max-64gb"
    assert page.text_content("#memory-summary") == small


def test_what_runs_on_an_m4_max_at_64gb_and_at_128gb(page, server):
    page.goto(server + "/")
    planned(page)
    assert page.locator("#homelab-memory").is_hidden()  # an RTX 4090 is sold in one size
    page.select_option("#homelab-gpu", "apple-m4-max")
    assert page.locator("#homelab-memory").is_visible()
    assert page.input_value("#homelab-memory") == "apple-m4-max"
    answers = {}
    for size in ("apple-m4-max", "apple-m4-max-64gb"):
        page.select_option("#homelab-memory", size)
        page.evaluate("delete document.body.dataset.homelab")
        page.click("#homelab-run")
        page.wait_for_function("() => document.body.dataset.homelab", timeout=60000)
        assert page.locator("#homelab-error").is_hidden(), page.text_content("#homelab-error")
        rows = page.eval_on_selector_all("#homelab-table tbody tr", "rs => rs.map(r => [...r.cells].map(c => c.textContent))")
        answers[size] = (page.text_content("#homelab-summary"), page.text_content("#homelab-size"), rows)
    assert "1 × apple-m4-max-64gb" in answers["apple-m4-max-64gb"][0]
    assert "Apple M4 Max 64 GB" in answers["apple-m4-max-64gb"][1]
    assert "Apple M4 Max 128 GB" in answers["apple-m4-max"][1]
    assert answers["apple-m4-max-64gb"][2] != answers["apple-m4-max"][2]  # less memory, fewer requests at once
    api = httpx.post(server + "/api/views/homelab", json={"gpu": "apple-m4-max-64gb"}, timeout=60).json()
    assert [r["at_once"] for r in api["rows"]] == [row[4] for row in answers["apple-m4-max-64gb"][2]]


def test_what_runs_shows_no_requests_at_once_for_a_model_the_gpu_does_not_hold(page, server):
    """llama.cpp's offload command for a 70B on one RTX 4090 opens one --parallel slot, yet the row does not
    run until the host RAM is stated: its "requests at once" is "—", as on every other engine."""
    page.goto(server + "/")
    planned(page)
    page.select_option("#homelab-gpu", "rtx-4090")
    page.select_option("#homelab-engine", "llamacpp")
    page.select_option("#homelab-quantization", "gguf-q4_k_m")
    page.evaluate("delete document.body.dataset.homelab")
    page.click("#homelab-run")
    page.wait_for_function("() => document.body.dataset.homelab", timeout=60000)
    rows = page.eval_on_selector_all("#homelab-table tbody tr", "rs => rs.map(r => [...r.cells].map(c => c.textContent))")
    row = next(r for r in rows if r[0] == "llama-3.3-70b")
    assert row[2].startswith("needs") and row[4] == "—" and row[5] == "—", row
    assert all(r[4] != "—" for r in rows if r[2] == "runs")
