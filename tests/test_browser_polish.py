"""What a demanding newcomer checks on the web page, driven in headless Chromium: every label sits on
its control, forms use the width they have, charts keep their height and their words inside their
box, a refusal marks the control it names, and nothing is shown before it means something."""

from pathlib import Path

import pytest

import test_browser
from test_browser import planned, send_quote

server, browser, page = test_browser.server, test_browser.browser, test_browser.page
pytestmark = pytest.mark.slow
MEASUREMENTS = Path(__file__).parent / "data" / "measurements"

# a label above its control, starting where the control starts (not left at the end of a wrapped row)
DETACHED_LABELS = """(formId) => [...document.querySelectorAll(`#${formId} label[for]:not(.inline)`)].filter(l => {
    const c = document.getElementById(l.htmlFor);
    if (!c || c.hidden || l.hidden) return false;
    const a = l.getBoundingClientRect(), b = c.getBoundingClientRect();
    return Math.abs(a.left - b.left) > 2 || a.bottom > b.top + 2 || b.top - a.bottom > 12;
}).map(l => l.htmlFor)"""


@pytest.mark.parametrize("width", [390, 1280])
def test_each_label_sits_on_its_control(browser, server, width):
    context = browser.new_context(viewport={"width": width, "height": 900})
    pg = context.new_page()
    pg.goto(server + "/")
    planned(pg)
    for form in ("homelab-form", "quote-form", "measurement-form", "scenario-form", "search-form"):
        assert pg.evaluate(DETACHED_LABELS, form) == [], form
    context.close()


def test_the_forms_use_the_width_they_have(page, server):
    page.goto(server + "/")
    planned(page)
    for form in ("scenario-form", "search-form"):
        right = page.evaluate(f"document.getElementById('{form}').getBoundingClientRect().right")
        last = page.evaluate(f"Math.max(...[...document.querySelectorAll('#{form} fieldset')].map(f => f.getBoundingClientRect().right))")
        assert right - last < 8, (form, right, last)  # no empty column to the right of the fieldsets


@pytest.mark.parametrize("width", [390, 1280])
def test_charts_keep_their_height_and_their_words_inside_the_box(browser, server, width):
    context = browser.new_context(viewport={"width": width, "height": 900})
    pg = context.new_page()
    pg.goto(server + "/")
    planned(pg)
    # the memory bar: a legend taller than the spec's height once squeezed the plot to a hairline
    bar = pg.evaluate("Math.max(...[...document.querySelectorAll('#chart-memory svg .mark-rect path')]"
                      ".map(p => p.getBoundingClientRect().height))")
    assert bar > 20, bar
    legend = pg.eval_on_selector_all("#chart-memory svg .role-legend-label text", "ts => ts.map(t => t.textContent)")
    assert "KV cache" in legend, legend
    outside = pg.evaluate("""() => [...document.querySelectorAll('figure[id^=chart-] svg text')].filter(t => {
        const f = t.closest('figure').getBoundingClientRect(), r = t.getBoundingClientRect();
        return r.width > 0 && (r.right > f.right + 1 || r.left < f.left - 1);
    }).map(t => t.closest('figure').id + ': ' + t.textContent)""")
    assert not outside, outside
    context.close()


def test_a_refused_plan_names_and_marks_the_control(page, server):
    page.goto(server + "/")
    planned(page)
    page.fill("#target_users", "0")
    page.locator("#error").wait_for(state="visible", timeout=30000)
    assert page.text_content("#error").startswith("Target users (scenario.target_users): "), page.text_content("#error")
    assert page.get_attribute("#target_users", "aria-invalid") == "true"
    assert page.locator("#recommendation").is_hidden()  # no empty recommendation bar under the error
    page.problems.clear()  # the refused request's 422 on the console is the answer under test
    stamp = page.evaluate("document.body.dataset.planned")
    page.fill("#target_users", "500")
    planned(page, stamp)
    assert page.get_attribute("#target_users", "aria-invalid") is None and page.locator("#error").is_hidden()


def test_a_refused_search_marks_the_control_and_a_running_one_cannot_be_sent_twice(page, server):
    page.goto(server + "/")
    planned(page)
    assert page.locator("#search-table").is_hidden() and page.locator("#search-infeasible-box").is_hidden()
    page.select_option("#search-model", "qwen3-8b")
    page.select_option("#search-lengths", "uniform")
    page.fill("#search-output-scv", "0.5")  # evenly drawn lengths spread no wider than SCV 1/3
    held = []
    page.route("**/api/views/search", lambda route: held.append(route))
    page.click("#search-run")
    page.wait_for_function("() => document.getElementById('search-run').disabled", timeout=10000)
    assert page.get_attribute("#search-form", "aria-busy") == "true"
    held[0].continue_()
    page.unroute("**/api/views/search")
    page.locator("#search-error").wait_for(state="visible", timeout=60000)
    assert page.text_content("#search-error").startswith("Spread of output lengths (SCV) (output_tokens_scv): ")
    assert page.get_attribute("#search-output-scv", "aria-invalid") == "true"
    assert not page.evaluate("document.getElementById('search-run').disabled")
    page.problems.clear()


def test_a_refused_measurement_is_an_error_and_each_run_can_be_deleted_by_name(page, server):
    page.goto(server + "/")
    planned(page)
    page.set_input_files("#measurement-file", {"name": "bad.json", "mimeType": "application/json",
                                               "buffer": b'{"nonsense": 1}'})
    page.click("#measurement-form button[type=submit]")
    page.locator("#measurement-error").wait_for(state="visible", timeout=30000)
    assert "bad.json" in page.text_content("#measurement-error")
    assert page.get_attribute("#measurement-error", "role") == "alert"
    page.problems.clear()
    page.set_input_files("#measurement-file", str(MEASUREMENTS / "guidellm_report.json"))
    page.click("#measurement-form button[type=submit]")
    page.wait_for_selector("#measurement-list li", timeout=30000)
    assert page.locator("#measurement-error").is_hidden()
    label = page.get_attribute("#measurement-list li button", "aria-label")
    assert label and label.startswith("Delete run ")
    page.click("#measurement-list li button")
    page.wait_for_function("() => !document.querySelector('#measurement-list li')", timeout=30000)


def test_saved_scenarios_say_when_there_is_nothing_to_compare(browser, tmp_path):
    with test_browser.serving(tmp_path / "empty.db") as base:  # its own empty database
        pg = browser.new_page()
        pg.goto(base + "/")
        planned(pg)
        assert pg.locator("#saved-empty").is_visible() and "No saved scenarios yet" in pg.text_content("#saved-empty")
        assert pg.evaluate("document.getElementById('compare').disabled")
        pg.fill("#scenario-name", "one")
        pg.click("#save-scenario")
        pg.wait_for_selector("#saved-list li >> text=one")
        assert pg.locator("#saved-empty").is_hidden()
        assert pg.evaluate("document.getElementById('compare').disabled")  # one scenario: nothing to compare it with
        pg.fill("#scenario-name", "two")
        pg.click("#save-scenario")
        pg.wait_for_selector("#saved-list li >> text=two")
        assert not pg.evaluate("document.getElementById('compare').disabled")
        pg.click("#compare")  # the count of differing rows shows beside the Compare button, not a screen above
        pg.wait_for_function("() => /rows differ/.test(document.getElementById('saved-status').textContent)", timeout=30000)
        pg.close()


def test_the_ranked_deployments_on_a_phone(browser, server):
    context = browser.new_context(viewport={"width": 390, "height": 844})
    pg = context.new_page()
    pg.goto(server + "/")
    planned(pg)
    pg.select_option("#search-model", "qwen3-8b")
    pg.fill("#search-top", "3")
    pg.click("#search-run")
    pg.wait_for_function("() => document.body.dataset.searched", timeout=180000)
    assert pg.locator("#search-table tbody tr").count() >= 1
    use = pg.locator("button[aria-label='Use deployment 1']").bounding_box()
    assert use["x"] + use["width"] <= 390, use  # in view, not in a column scrolled off to the right
    summary = pg.text_content("#search-summary")
    assert summary.endswith("ranked by USD per million tokens."), summary  # the objective in words, a full stop
    assert pg.locator("#search-notes li").count() >= 1  # each note on its own line, not run on after the summary
    outside = pg.evaluate("""() => [...document.querySelectorAll('#chart-search svg text')].filter(t => {
        const f = t.closest('figure').getBoundingClientRect(), r = t.getBoundingClientRect();
        return r.width > 0 && (r.right > f.right + 1 || r.left < f.left - 1);
    }).map(t => t.textContent)""")
    assert not outside, outside
    assert pg.evaluate("document.documentElement.scrollWidth") <= 400
    context.close()


def test_quote_and_saved_scenario_errors_show_beside_their_own_forms(page, server):
    page.goto(server + "/")
    planned(page)
    send_quote(page, system="hgx-h100", price="250000", quoted_on="2099-01-01", vendor="Example integrator")
    page.locator("#quote-error").wait_for(state="visible", timeout=30000)
    assert page.text_content("#quote-error").startswith("Quoted on (quoted_on): "), page.text_content("#quote-error")
    assert page.get_attribute("#quote-date", "aria-invalid") == "true"
    assert page.locator("#error").is_hidden()  # not in the simulator's box, a screen away from the quote form
    page.problems.clear()
    page.fill("#scenario-name", "to rename")
    page.click("#save-scenario")
    page.wait_for_selector("#saved-list li >> text=to rename")
    page.fill("#scenario-name", "")
    page.click("button[aria-label^='Rename to rename']")
    page.locator("#saved-error").wait_for(state="visible", timeout=10000)
    assert "Save as" in page.text_content("#saved-error") and page.locator("#error").is_hidden()


def test_search_greys_out_what_the_request_would_not_read(page, server):
    page.goto(server + "/")
    planned(page)
    disabled = lambda *ids: [page.evaluate(f"document.getElementById('{i}').disabled") for i in ids]  # noqa: E731
    # users and a preset: the per-request lengths and the burst ratio are not read
    assert disabled("search-users", "search-input-len", "search-output-len", "search-peak") == [False, True, True, True]
    page.fill("#search-rate", "4")  # a rate replaces users and preset and reads the lengths
    assert disabled("search-users", "search-preset", "search-input-len", "search-output-len") == [True, True, False, False]
    page.select_option("#search-arrival", "bursty")
    assert disabled("search-peak") == [False]
    page.set_input_files("#search-trace", files=[{"name": "t.jsonl", "mimeType": "application/jsonl",
                                                  "buffer": b'{"arrival_s": 0, "input_tokens": 10, "output_tokens": 5}'}])
    assert disabled("search-rate", "search-arrival", "search-peak", "search-output-scv") == [True, True, True, True]


def test_the_downloaded_report_reads_on_a_phone(browser, server):
    context = browser.new_context(viewport={"width": 390, "height": 844}, accept_downloads=True)
    pg = context.new_page()
    pg.goto(server + "/")
    planned(pg)
    with pg.expect_download() as info:
        pg.click("#download-report")
    pg.set_content(Path(info.value.path()).read_text())
    assert pg.locator("figure svg").count() >= 3
    assert pg.evaluate("document.documentElement.scrollWidth") <= 400  # its charts scale to the screen
    context.close()


def test_a_link_the_clipboard_refuses_is_shown_within_a_phone_screen(browser, server):
    context = browser.new_context(viewport={"width": 390, "height": 844})
    # a page served on a LAN address is not a secure context: the clipboard refuses, the link is shown
    context.add_init_script("navigator.clipboard.writeText = () => Promise.reject(new Error('not allowed'))")
    pg = context.new_page()
    pg.goto(server + "/")
    planned(pg)
    pg.click("#copy-link")
    pg.wait_for_function("() => document.getElementById('status').textContent.includes('?s=')", timeout=10000)
    assert pg.evaluate("document.documentElement.scrollWidth") <= 400
    context.close()


def test_what_runs_says_what_its_columns_measure(page, server):
    page.goto(server + "/")
    planned(page)
    page.click("#homelab-run")
    page.wait_for_function("() => document.body.dataset.homelab", timeout=60000)
    summary = page.text_content("#homelab-summary")
    # one sentence per idea, the request's tokens named input and output (was "1,024 + 256 tokens")
    assert "1,024 input + 256 output tokens" in summary and "Requests at once: how many" in summary, summary
    assert summary.endswith("."), summary


def test_what_runs_on_a_phone_shows_each_models_speed(browser, server):
    context = browser.new_context(viewport={"width": 390, "height": 844})
    pg = context.new_page()
    pg.goto(server + "/")
    planned(pg)
    pg.click("#homelab-run")
    pg.wait_for_function("() => document.body.dataset.homelab", timeout=60000)
    speed = pg.locator("#homelab-table tbody tr").first.locator("td").nth(6)
    box = speed.bounding_box()
    assert box["x"] + box["width"] <= 390, box  # in view, not in a column scrolled off to the right
    assert speed.get_attribute("data-label") == "Tokens/s for one user"  # each value keeps its column's name
    context.close()


def test_a_rented_pick_in_the_simulator_plans_on_its_rent_route(page, server):
    """A rented pick on a system the catalogue prices at no band (Llama-3.3-70B on one RTX PRO 6000 of the
    8-GPU server) loads into the simulator and is planned on its rent route, saying it is not priced to own."""
    page.goto(server + "/")
    before = planned(page)
    page.select_option("#search-model", "llama-3.3-70b")
    page.select_option("#search-pricing", "rent")
    page.fill("#search-top", "1")
    page.click("#search-run")
    page.wait_for_function("() => document.body.dataset.searched", timeout=180000)
    scenario = page.evaluate("window.inferplan.lastSearch.rows[0].scenario")
    assert "quote_usd_per_system" not in scenario["platform"] and scenario["rented"] is True, scenario
    page.click("button[aria-label='Use deployment 1']")
    planned(page, before)
    assert page.locator("#error").is_hidden()
    body = page.text_content("body")
    assert "not priced to own" in body
    # the server's cards for a renter: the rent is the operating cost, and its $/Mtok is shown
    assert "Rented cost / million tokens" in body and "the provider's price includes power" in body
