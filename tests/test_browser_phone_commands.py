"""A launch command wraps between its arguments only, never breaking "--model-path" at its hyphen — the
simulator's on a phone (375 px), each ranked pick's on a phone and on a desktop — an argument longer than
its box scrolling sideways, the box a tab stop for the keyboard that scrolls it; and on a phone the ranked
table's caption spans the rows above them."""

import contextlib

import pytest

import test_browser
from test_browser import planned

server, browser = test_browser.server, test_browser.browser

pytestmark = pytest.mark.slow

PHONE = {"width": 375, "height": 800}

# The arguments (space-separated words) of the element's text drawn over more than one line: each word's
# characters within its text node, as a range whose boxes have more than one top.
SPLIT_ARGUMENTS = """(el) => {
  const split = [], walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    for (const m of node.data.matchAll(/[^ \\n]+/g)) {
      const range = document.createRange();
      range.setStart(node, m.index); range.setEnd(node, m.index + m[0].length);
      const tops = new Set([...range.getClientRects()].filter((r) => r.width > 0).map((r) => Math.round(r.top)));
      if (tops.size > 1) split.push(m[0]);
    }
  }
  return split;
}"""


@contextlib.contextmanager
def planned_page(browser, server, width: int):
    """The page at ``width`` px once its landing plan is drawn."""
    context = browser.new_context(viewport={"width": width, "height": 800})
    pg = context.new_page()
    pg.goto(server + "/")
    planned(pg)
    try:
        yield pg
    finally:
        context.close()


@pytest.fixture()
def phone(browser, server):
    with planned_page(browser, server, PHONE["width"]) as pg:
        yield pg


def test_on_a_phone_the_simulators_launch_command_wraps_between_arguments_only(phone):
    phone.evaluate("document.querySelector('#launch').open = true")
    launch = phone.locator("#launch-command")
    assert "--model-path" in launch.text_content()  # the landing scenario's SGLang line, longer than a phone
    assert launch.evaluate(SPLIT_ARGUMENTS) == []  # "--model-path" and "--port" were split at their hyphens
    assert launch.evaluate("(el) => el.getClientRects()[0].height > 40")  # it wraps, between arguments
    assert phone.evaluate("document.documentElement.scrollWidth") == PHONE["width"]  # the page itself does not scroll
    assert launch.get_attribute("tabindex") == "0"  # a keyboard reaches it to scroll it


def _search_one_gpu(pg):
    pg.select_option("#search-model", "llama-3.1-8b")
    pg.select_option("#search-accelerators", "rtx-4090")  # one GPU: a search of a second or two
    pg.fill("#search-top", "3")
    pg.click("#search-run")
    pg.wait_for_function("() => document.body.dataset.searched", timeout=180000)


def test_a_ranked_picks_launch_wraps_between_arguments_only_on_a_desktop(browser, server):
    with planned_page(browser, server, 1280) as pg:
        _search_one_gpu(pg)
        commands = pg.locator("#search-table .command")
        split = [commands.nth(i).evaluate(SPLIT_ARGUMENTS) for i in range(commands.count())]
    assert split == [[]] * 3  # a repo name or "--n-gpu-layers" was split at a hyphen


def test_on_a_phone_a_ranked_picks_launch_keeps_its_flags_whole(phone):
    _search_one_gpu(phone)
    commands = phone.locator("#search-table .command")
    assert commands.count() == 3
    for i in range(3):
        assert commands.nth(i).evaluate(SPLIT_ARGUMENTS) == [], commands.nth(i).text_content()
        assert commands.nth(i).get_attribute("tabindex") == "0"  # a keyboard reaches it to scroll it
    beyond = phone.evaluate("""() => [...document.querySelectorAll('#search-table td')]
        .map((td) => Math.round(td.getBoundingClientRect().right)).filter((right) => right > 375)""")
    assert beyond == []


def test_on_a_phone_the_ranked_tables_caption_spans_its_rows(phone):
    _search_one_gpu(phone)
    caption, table = phone.evaluate("""() => [document.querySelector('#search-table caption').getBoundingClientRect().width,
        document.querySelector('#search-table').getBoundingClientRect().width]""")
    assert caption >= 0.9 * table  # it was an 88 px column, a word a line, beside a 337 px table


@pytest.mark.parametrize("width", [375, 1280])
def test_what_runs_on_my_gpus_commands_wrap_between_arguments_only(browser, server, width):
    with planned_page(browser, server, width) as pg:
        pg.select_option("#homelab-gpu", "rtx-4090")
        pg.click("#homelab-run")
        pg.wait_for_function("() => document.body.dataset.homelab", timeout=120000)
        commands = pg.locator("#homelab-table tbody td:last-child")
        count = commands.count()
        split = [a for i in range(count) for a in commands.nth(i).evaluate(SPLIT_ARGUMENTS)]
        unreachable = pg.evaluate("""() => [...document.querySelectorAll('#homelab-table td.command')]
            .filter((td) => td.tabIndex !== 0).length""")  # a keyboard reaches each to scroll it
        beyond = pg.evaluate(f"""() => [...document.querySelectorAll('#homelab-table td')]
            .filter((td) => td.getBoundingClientRect().right > {width}).length""")
    assert count > 20 and split == []  # "--max_seq_len" and repo names were split at hyphens
    assert beyond == 0  # a long argument scrolls in its cell rather than widening every row
    assert unreachable == 0
