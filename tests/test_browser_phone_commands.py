"""On a phone (375 px) a launch command keeps each flag whole — the simulator's and each ranked pick's
scroll sideways instead of breaking "--model-path" at its hyphen — and the ranked table's caption spans
the rows above them."""

import pytest

import test_browser
from test_browser import planned

server, browser = test_browser.server, test_browser.browser

pytestmark = pytest.mark.slow

PHONE = {"width": 375, "height": 800}

# The lines the element's text is drawn on (distinct tops of its text's boxes) against the lines it holds.
DRAWN_AND_WRITTEN_LINES = """(el) => {
  const range = document.createRange();
  range.selectNodeContents(el);
  const tops = new Set([...range.getClientRects()].filter((r) => r.width > 0).map((r) => Math.round(r.top)));
  return [tops.size, el.textContent.split("\\n").length];
}"""


@pytest.fixture()
def phone(browser, server):
    context = browser.new_context(viewport=PHONE)
    pg = context.new_page()
    pg.goto(server + "/")
    planned(pg)
    yield pg
    context.close()


def test_on_a_phone_the_simulators_launch_command_scrolls_instead_of_breaking_a_flag(phone):
    phone.evaluate("document.querySelector('#launch').open = true")
    launch = phone.locator("#launch-command")
    assert "--model-path" in launch.text_content()  # the landing scenario's SGLang line, longer than a phone
    drawn, written = launch.evaluate(DRAWN_AND_WRITTEN_LINES)
    assert drawn == written  # it was drawn over 5 lines, "--model-" ending the first
    assert launch.evaluate("(el) => el.scrollWidth > el.clientWidth")  # the rest is a sideways scroll away
    assert phone.evaluate("document.documentElement.scrollWidth") == PHONE["width"]  # the page itself does not scroll
    assert launch.get_attribute("tabindex") == "0"  # a keyboard reaches it to scroll it


def _search_one_gpu(pg):
    pg.select_option("#search-model", "llama-3.1-8b")
    pg.select_option("#search-accelerators", "rtx-4090")  # one GPU: a search of a second or two
    pg.fill("#search-top", "3")
    pg.click("#search-run")
    pg.wait_for_function("() => document.body.dataset.searched", timeout=180000)


def test_on_a_phone_a_ranked_picks_launch_keeps_its_flags_whole(phone):
    _search_one_gpu(phone)
    commands = phone.locator("#search-table .command")
    assert commands.count() == 3
    for i in range(3):
        drawn, written = commands.nth(i).evaluate(DRAWN_AND_WRITTEN_LINES)
        assert drawn == written, commands.nth(i).text_content()  # a one-line command was drawn over 4
    beyond = phone.evaluate("""() => [...document.querySelectorAll('#search-table td')]
        .map((td) => Math.round(td.getBoundingClientRect().right)).filter((right) => right > 375)""")
    assert beyond == []



def test_on_a_phone_the_ranked_tables_caption_spans_its_rows(phone):
    _search_one_gpu(phone)
    caption, table = phone.evaluate("""() => [document.querySelector('#search-table caption').getBoundingClientRect().width,
        document.querySelector('#search-table').getBoundingClientRect().width]""")
    assert caption >= 0.9 * table  # it was an 88 px column, a word a line, beside a 337 px table
