"""Every user-given string reaches a report as text, never as Markdown formatting or an HTML tag."""

from pathlib import Path

import pytest

from inferplan.economics.plan import plan
from inferplan.report.files import _markdown, markdown_text, render_html
from inferplan.scenario import load_scenario

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "chat-seats-h100.yaml"
HOSTILE = "*x* <script>alert(1)</script> | [a](b)"


@pytest.fixture(scope="module")
def hostile_plan():
    return plan(load_scenario(EXAMPLE).model_copy(update={"name": HOSTILE}))


def test_the_markdown_report_writes_the_scenario_name_as_text(hostile_plan):
    text = _markdown(hostile_plan, None, {})
    title = text.splitlines()[0]
    assert title == r"# \*x\* &lt;script&gt;alert\(1\)&lt;/script&gt; \| \[a\]\(b\)"
    assert "<script>" not in text and "[a](b)" not in text and "*x*" not in text


def test_a_table_cell_cannot_open_a_column():
    assert markdown_text("a | b") == r"a \| b"
    assert markdown_text("line\nbreak") == "line break"
    assert markdown_text("plain words 1.5 GiB") == "plain words 1.5 GiB"


def test_the_html_report_escapes_the_scenario_name(hostile_plan):
    text = render_html(hostile_plan, None)
    assert "<script>alert(1)</script>" not in text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text
