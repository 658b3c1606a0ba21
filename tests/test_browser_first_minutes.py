"""The first minutes on the web page, driven in headless Chromium: a shared link naming a model by an
Ollama tag plans that tag's build and says which, a control hidden for a chip sold in one size takes
no room, and typing the name to save under plans nothing."""

import json
import urllib.parse

import pytest

import test_browser
from test_browser import api_view, planned, scenario_in_url

# the browser test module's fixtures, shared
server, browser, page = test_browser.server, test_browser.browser, test_browser.page

pytestmark = pytest.mark.slow

OLLAMA = {"name": "Ollama on a 4090", "model": "qwen3:32b", "platform": {"system": "rtx-4090-workstation"},
          "workload": {"preset": "chat-seat"}, "target_users": 5}


def test_a_link_naming_an_ollama_tag_plans_the_tag_and_shows_its_build(page, server):
    page.goto(server + "/?" + urllib.parse.urlencode({"s": json.dumps(OLLAMA)}))
    planned(page)
    assert page.input_value("#model") == "qwen3:32b" and page.locator("#error").is_hidden()
    assert "qwen3:32b" in page.locator("#model option:checked").text_content()
    note = api_view(server, OLLAMA)["memory"]["build_note"]
    assert "Ollama's GGUF Q4_K_M" in note  # the line `inferplan fit qwen3:32b` prints as "build: ..."
    assert page.text_content("#build-note") == f"Build: {note}"
    placed = api_view(server, OLLAMA)["memory"]["placement_note"]  # where llama-server --fit keeps its layers
    assert "Ollama (llama-server --fit)" in placed and page.text_content("#placement-note") == f"Placement: {placed}"


def test_a_catalogue_id_has_no_build_line(page, server):
    page.goto(server + "/?" + urllib.parse.urlencode({"s": json.dumps({**OLLAMA, "model": "gpt-oss-20b"})}))
    planned(page)
    assert page.text_content("#build-note") == ""


def test_the_memory_size_control_shows_only_for_a_chip_sold_in_several(page, server):
    page.goto(server + "/")
    planned(page)
    assert page.input_value("#homelab-gpu") == "rtx-4090"
    assert page.locator("#homelab-memory-field").is_hidden()  # not an empty "Memory" label beside the count
    page.select_option("#homelab-gpu", "apple-m4-max")
    assert page.locator("#homelab-memory-field").is_visible()


def test_typing_the_name_to_save_under_plans_nothing_and_the_saved_status_stays(page, server):
    page.goto(server + "/")
    planned(page)
    before = sum("/api/plan" in u for u in page.requests)
    page.fill("#scenario-name", "first minutes")
    page.click("#save-scenario")
    page.locator("#saved-list li", has_text="first minutes").wait_for(timeout=10000)
    page.wait_for_timeout(1000)  # four times the page's wait before it replans after a change
    assert sum("/api/plan" in u for u in page.requests) == before
    assert page.text_content("#status") == "saved “first minutes”"


def test_on_a_phone_each_section_link_keeps_to_one_line(browser, server):
    context = browser.new_context(viewport={"width": 375, "height": 800})
    pg = context.new_page()
    pg.goto(server + "/")
    pg.locator("nav a").first.wait_for()
    lines = pg.evaluate("[...document.querySelectorAll('nav a')].map((a) => [a.textContent, a.getClientRects().length])")
    context.close()
    assert [name for name, boxes in lines if boxes != 1] == []  # "Find the / cheapest" split over two lines before
    assert len(lines) >= 9


def test_on_a_phone_the_ranked_deployments_wrap_in_its_width(browser, server):
    context = browser.new_context(viewport={"width": 375, "height": 800})
    pg = context.new_page()
    pg.goto(server + "/")
    planned(pg)
    pg.select_option("#search-model", "qwen3-32b")  # its cheapest pick's launch holds an 85-character draft config
    pg.fill("#search-top", "3")
    pg.click("#search-run")
    pg.wait_for_function("() => document.body.dataset.searched", timeout=180000)
    assert "--speculative-config" in pg.text_content("#search-table")
    beyond = pg.evaluate("""() => [...document.querySelectorAll('#search-table td')]
        .map((td) => Math.round(td.getBoundingClientRect().right)).filter((right) => right > 375)""")
    context.close()
    assert beyond == []  # a launch command or a pick's notes ran 170 px past the right edge before


def test_a_links_scenario_keeps_its_name_until_its_deployment_changes(page, server):
    page.goto(server + "/?" + urllib.parse.urlencode({"s": json.dumps(OLLAMA)}))
    stamp = planned(page)
    page.fill("#target_users", "7")
    stamp = planned(page, stamp)
    assert scenario_in_url(page)["name"] == "Ollama on a 4090"  # the report and a saved copy carry it
    page.select_option("#model", "gpt-oss-20b")
    planned(page, stamp)
    assert scenario_in_url(page)["name"] == "gpt-oss-20b on Workstation with 1x GeForce RTX 4090"  # the catalogue's names
