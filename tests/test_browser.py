"""Drive the real page in headless Chromium (Debian's /usr/bin/chromium) through Playwright."""

import json
import os
import re
import shutil
import urllib.parse
from pathlib import Path

import httpx
import pytest

import live_server

pytestmark = pytest.mark.slow

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
OUT = Path(__file__).resolve().parents[1] / "out"
if not Path(CHROMIUM).exists():
    if os.environ.get("CI"):
        raise RuntimeError("CI must install Debian's chromium for the browser tests (.ci/run does)")
    pytest.skip("chromium is not installed", allow_module_level=True)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with serving(tmp_path_factory.mktemp("db") / "b.db") as base:
        yield base


def serving(db: Path):
    """The app on a free loopback port with its own database, for as long as the block runs."""
    from inferplan.shells.api import create_app
    from inferplan.shells.api_guard import loopback_hosts

    return live_server.serving(lambda port: create_app(db, allowed_hosts=loopback_hosts(port)))


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=[
            "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
            "--disable-component-update", "--disable-sync"])
        yield b
        b.close()


@pytest.fixture()
def page(browser, server):
    context = browser.new_context(viewport={"width": 1280, "height": 900}, accept_downloads=True)
    pg = context.new_page()
    pg.problems, pg.requests = [], []
    pg.on("console", lambda m: pg.problems.append(m.text) if m.type == "error" else None)
    pg.on("pageerror", lambda e: pg.problems.append(str(e)))
    pg.on("request", lambda r: pg.requests.append(r.url))
    yield pg
    assert not pg.problems, pg.problems
    foreign = [u for u in pg.requests if not (u.startswith(server) or u.startswith(("data:", "blob:")))]
    assert not foreign, foreign
    context.close()


def planned(pg, previous=None):
    pg.wait_for_function("([prev]) => document.body.dataset.planned && document.body.dataset.planned !== prev",
                         arg=[previous], timeout=60000)
    return pg.evaluate("document.body.dataset.planned")


def scenario_in_url(pg):
    return json.loads(urllib.parse.parse_qs(urllib.parse.urlparse(pg.url).query)["s"][0])


def api_view(server, scenario, currency="usd"):
    r = httpx.post(server + "/api/plan", json={"scenario": scenario, "draws": 2000, "currency": currency}, timeout=60)
    r.raise_for_status()
    return r.json()


def send_quote(pg, *, system: str, price: str, quoted_on: str, vendor: str) -> None:
    """Fill the vendor-quote form and send it."""
    pg.select_option("#quote-system", system)
    pg.fill("#quote-price", price)
    pg.fill("#quote-date", quoted_on)
    pg.fill("#quote-vendor", vendor)
    pg.click("#quote-form button[type=submit]")


def card_values(pg):
    return pg.evaluate("Object.fromEntries([...document.querySelectorAll('#cards .card')].map(c => [c.dataset.key, c.querySelector('.value').textContent]))")


def assert_page_matches_api(pg, server):
    view = api_view(server, scenario_in_url(pg))
    expected = {c["key"]: c["value"] for c in view["cards"] if c["key"] != "recommendation"}
    assert card_values(pg) == expected
    shown = pg.evaluate("window.inferplan.lastPlan.charts")
    assert shown["cost_per_user"]["data"] == view["charts"]["cost_per_user"]["data"]
    assert shown["capacity"]["data"] == view["charts"]["capacity"]["data"]


def test_the_page_shows_the_apis_numbers_and_updates(page, server):
    page.goto(server + "/")
    stamp = planned(page)
    assert scenario_in_url(page)["engine"] == "sglang"  # the landing deployment is the coding-developers example's
    assert page.locator("#cards .card").count() >= 20
    assert page.locator("#chart-cost_per_user svg").count() == 1 and page.locator("#chart-memory svg").count() == 1
    assert page.locator("#model-table tbody tr").count() >= 15 and page.locator("#platform-table tbody tr").count() >= 18
    assert_page_matches_api(page, server)
    OUT.mkdir(exist_ok=True)
    page.screenshot(path=str(OUT / "screenshot-main.png"), full_page=False)

    page.select_option("#preset", "agent-worker")  # choose a preset
    stamp = planned(page, stamp)
    assert scenario_in_url(page)["workload"]["preset"] == "agent-worker"
    assert_page_matches_api(page, server)

    slider = page.locator("#quote_multiplier")  # move a slider with the keyboard
    slider.focus()
    for _ in range(4):
        page.keyboard.press("ArrowRight")
    stamp = planned(page, stamp)
    assert scenario_in_url(page)["money"]["quote_multiplier"] == 2.5
    assert card_values(page)["multiplier"] == "2.5×"
    assert_page_matches_api(page, server)


def test_save_reload_and_shared_link(page, server, browser):
    page.goto(server + "/")
    stamp = planned(page)
    page.select_option("#system", "hgx-h200")
    stamp = planned(page, stamp)
    page.fill("#scenario-name", "h200 plan")
    page.click("#save-scenario")
    page.wait_for_selector("#saved-list li >> text=h200 plan")
    shared = page.url

    page.goto(server + "/")  # reload from scratch: defaults, then load the saved one
    stamp = planned(page)
    assert page.input_value("#system") == "hgx-b200"
    page.click("button[aria-label='Load h200 plan']")
    planned(page, stamp)
    assert page.input_value("#system") == "hgx-h200"
    assert_page_matches_api(page, server)

    other = browser.new_page()  # a shared URL reproduces the view
    try:
        other.goto(shared)
        planned(other)
        assert other.input_value("#system") == "hgx-h200"
        assert card_values(other) == card_values(page)
    finally:
        other.close()


def test_a_loaded_scenario_plans_as_it_was_saved(page, server):
    # fields the form has no control for, and values its slider cannot hold, survive loading
    saved = {"name": "full", "model": "qwen3-235b-a22b", "quantization": "fp8", "engine": "sglang",
             "platform": {"system": "hgx-b200", "quote_usd_per_system": 450000}, "cell": {"tensor_parallel_size": 8},
             "kv_cache_dtype": "fp8", "workload": {"preset": "coding-developer-median", "cache_hit_rate": 0.5,
                                                   "target_output_tokens_per_s": 40},
             "target_users": 50000, "money": {"quote_multiplier": 1.3, "pue": 1.2, "software": "nvaie-1-year"}}
    r = httpx.post(server + "/api/scenarios", json={"name": "full plan", "scenario": saved, "replace": True}, timeout=60)
    assert r.status_code == 201, r.text
    page.goto(server + "/")
    stamp = planned(page)
    page.click("button[aria-label='Load full plan']")
    planned(page, stamp)
    sent = scenario_in_url(page)
    assert sent["cell"]["tensor_parallel_size"] == 8
    assert sent["kv_cache_dtype"] == "fp8" and sent["platform"]["quote_usd_per_system"] == 450000
    assert sent["workload"]["cache_hit_rate"] == 0.5 and sent["target_users"] == 50000
    assert sent["money"]["quote_multiplier"] == 1.3 and sent["money"]["pue"] == 1.2
    assert card_values(page)["capex"] == next(c["value"] for c in api_view(server, saved)["cards"] if c["key"] == "capex")
    stamp = planned(page, stamp)
    # a cleared control means "the default", not the loaded value (re-sending the loaded 40 would be the bug)
    assert page.input_value("#target_speed") == "40" and scenario_in_url(page)["workload"]["target_output_tokens_per_s"] == 40
    page.fill("#target_speed", "")
    stamp = planned(page, stamp)
    assert scenario_in_url(page)["workload"].get("target_output_tokens_per_s") is None
    assert scenario_in_url(page)["workload"]["cache_hit_rate"] == 0.5  # the loaded override stays
    # the cell, KV dtype and quote belong to what they were saved with: another system drops them
    page.select_option("#system", "hgx-h200")
    planned(page, stamp)
    sent = scenario_in_url(page)
    assert "cell" not in sent and "kv_cache_dtype" not in sent and "quote_usd_per_system" not in sent["platform"]


def test_loading_a_scenario_puts_controls_it_leaves_out_back_to_their_defaults(page, server):
    base = {"model": "llama-3.1-8b", "platform": {"system": "hgx-h100"}, "workload": {"preset": "chat-seat"}}
    for name, money in (("tight", {"utilization": 0.3, "capital_recovery_years": 5}), ("plain", {})):
        r = httpx.post(server + "/api/scenarios", json={"name": name, "scenario": {**base, "name": name, "money": money},
                                                         "replace": True}, timeout=60)
        assert r.status_code == 201, r.text
    page.goto(server + "/")
    stamp = planned(page)
    page.click("button[aria-label='Load tight']")
    stamp = planned(page, stamp)
    assert page.input_value("#utilization") == "0.3" and page.input_value("#capital_recovery_years") == "5"
    page.click("button[aria-label='Load plain']")
    planned(page, stamp)
    assert page.input_value("#utilization") == "0.6" and page.input_value("#capital_recovery_years") == "3"


def test_a_shipped_example_opened_by_link_plans_as_the_cli_does(page, server):
    """A scenario that names no engine plans with the platform's own on the page, as `inferplan plan`
    plans it: the engine control is left blank, not set to an engine the library would not pick."""
    import yaml

    from inferplan.economics.plan import plan
    from inferplan.scenario import load_scenario

    path = Path(__file__).resolve().parents[1] / "examples" / "chat-seats-h100.yaml"
    stated = yaml.safe_load(path.read_text())
    assert "engine" not in stated
    cli = plan(load_scenario(path))
    page.goto(server + "/?" + urllib.parse.urlencode({"s": json.dumps(stated), "c": "usd"}) + "#simulator")
    planned(page)
    assert page.input_value("#engine") == "" and "engine" not in scenario_in_url(page)
    assert card_values(page)["users"] == f"{cli.supported_users:,}"
    assert_page_matches_api(page, server)


def test_a_roadmap_platform_is_noted_above_the_recommendation(page, server):
    kyber = {"name": "Kyber", "model": "nemotron-3-ultra", "quantization": "nvfp4", "platform": {"system": "kyber-nvl144"},
             "workload": {"preset": "agent-worker"}, "target_users": 1000}
    page.goto(server + "/?" + urllib.parse.urlencode({"s": json.dumps(kyber)}) + "#simulator")
    planned(page)
    expected = api_view(server, scenario_in_url(page))["headline_notes"]
    assert expected and page.locator("#headline-notes p").all_inner_texts() == [f"Note: {n}" for n in expected]
    row = page.locator("#platform-table tbody tr", has_text="Kyber NVL144")
    assert "assumed (roadmap part)" in row.inner_text()


def test_the_eur_choice_and_the_ladder_state_the_catalogues_rate_source_and_date(page, server):
    fx = httpx.get(server + "/api/views/fx", timeout=60).json()
    page.goto(server + "/")
    planned(page)
    assert page.locator("#currency option[value=eur]").inner_text() == f"EUR ({fx['label']})"
    assert page.locator("#fx-note").inner_text() == f"EUR at {fx['text']}"
    assert page.locator("#ladder-fx").inner_text() == f"EUR prices at {fx['text']}"


def test_report_download_and_phone_layout(page, server):
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(server + "/")
    planned(page)
    assert page.evaluate("document.documentElement.scrollWidth") <= 400  # no sideways scrolling on a phone
    with page.expect_download() as info:
        page.click("#download-report")
    text = Path(info.value.path()).read_text()
    assert "Estimated supported users" in text and "<svg" in text


def test_api_docs_render_offline(page, server):
    page.goto(server + "/docs")
    page.get_by_text("/api/plan", exact=True).first.wait_for(timeout=30000)


def test_catalogue_numbers_show_their_source_and_date_on_hover(page, server):
    page.goto(server + "/")
    planned(page)
    row = page.locator("#platform-table tbody tr", has_text="HGX B200").first
    cells = row.locator("td")
    headers = [h.strip() for h in page.locator("#platform-table thead th").all_inner_texts()]
    dated = r"source: .+ \(.+\), checked \d{4}-\d{2}-\d{2}, (spec|measured|derived|assumed)"
    for column in ("Price (USD)", "Memory", "Power"):
        cell = cells.nth(headers.index(column))
        cell.hover()
        title = cell.get_attribute("title")
        assert title and re.fullmatch(dated, title), (column, title)
    params = page.locator("#model-table tbody tr").first.locator("td").nth(2)
    assert re.match(dated, params.get_attribute("title") or ""), params.get_attribute("title")
    capex = page.locator('#cards .card[data-key="capex"]')
    capex.hover()
    assert re.fullmatch(dated, capex.get_attribute("title") or ""), capex.get_attribute("title")


def test_your_measurements_upload_list_and_chart(page, server):
    page.goto(server + "/")
    page.wait_for_selector("#measurement-form")
    data = Path(__file__).parent / "data" / "measurements"
    page.set_input_files("#measurement-file", str(data / "guidellm_report.json"))
    page.fill("#measurement-version", "0.11.0")
    page.click("#measurement-form button[type=submit]")
    page.wait_for_selector("#measurement-list li >> text=guidellm_report.json", timeout=30000)
    row = page.text_content("#measurement-list li")
    assert "median |error|" in row
    assert re.search(r"under load \(approximation / simulation\) TTFT p50 \d+% / \d+%", row), row  # the run's p50/p99
    page.wait_for_selector("#chart-measured svg", timeout=30000)
    marks = page.evaluate("document.querySelectorAll('#chart-measured svg path[aria-roledescription=\"point\"], "
                          "#chart-measured svg .mark-symbol path').length")
    assert marks >= 6  # two load levels × TTFT, TPOT and output tokens/s
    page.set_input_files("#measurement-file", {"name": "bad.json", "mimeType": "application/json",
                                               "buffer": b'{"completed": 1, "max_concurrency": 1, "output_throughput": 2}'})
    page.click("#measurement-form button[type=submit]")
    page.wait_for_selector("#measurement-error >> text=refused", timeout=30000)
    assert "total_input_tokens" in page.text_content("#measurement-error")
    # the refused upload's 422 is the answer under test, not a page problem
    page.problems[:] = [p for p in page.problems if "422 (Unprocessable Entity)" not in p]
