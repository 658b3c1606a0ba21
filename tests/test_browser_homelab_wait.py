"""What runs on my GPUs, in headless Chromium: while the best way for each model is worked out (every model on
each engine, with no figure of progress coming back) the status says what is being done and that it can take a
while, and names the engine when one is chosen; the words go when the table is in."""

import pytest

import test_browser

server, browser, page = test_browser.server, test_browser.browser, test_browser.page
pytestmark = pytest.mark.slow


def _status_while_held(page, server, engine: str) -> str:
    held = []
    page.route("**/api/views/homelab", lambda route: held.append(route))  # answered once the words are read
    page.goto(server + "/")
    page.select_option("#homelab-gpu", "rtx-4090")
    page.select_option("#homelab-engine", engine)
    page.select_option("#homelab-quantization", "gguf-q4_k_m")
    page.click("#homelab-run")
    page.wait_for_function("() => document.getElementById('homelab-form').getAttribute('aria-busy') === 'true'")
    status = page.text_content("#homelab-status")
    while not held:
        page.wait_for_timeout(50)
    held[0].continue_()
    page.wait_for_function("() => document.body.dataset.homelab", timeout=60000)
    assert page.text_content("#homelab-status") == "" and page.get_attribute("#homelab-form", "aria-busy") is None
    page.unroute("**/api/views/homelab")
    return status


def test_the_best_for_each_model_says_it_can_take_a_while(page, server):
    status = _status_while_held(page, server, "")
    assert "each engine this GPU runs" in status and "can take a while" in status


def test_a_chosen_engine_is_named_while_it_computes(page, server):
    page.goto(server + "/")
    page.wait_for_selector("#homelab-engine option[value='llamacpp']", state="attached")  # options come from the API
    label = page.eval_on_selector("#homelab-engine", "s => [...s.options].find(o => o.value === 'llamacpp').textContent")
    assert _status_while_held(page, server, "llamacpp") == f"computing every model on {label}…"
