"""The web page's form shows the catalogue's money defaults (a control's starting value, the
electricity placeholder): a catalogue update that the page does not follow would have it state one
figure while the plan uses another. The EUR rate is not in the page at all: it comes from the API
(tests/test_fx_source.py)."""

import re
from pathlib import Path

import pytest

from inferplan.catalog.loader import load_catalog

PAGE = (Path(__file__).resolve().parents[1] / "src" / "inferplan" / "shells" / "static" / "index.html").read_text()


def _attribute(control_id: str, attribute: str) -> str:
    tag = re.search(rf'<(?:input|select)[^>]*\bid="{control_id}"[^>]*>', PAGE)
    assert tag, control_id
    value = re.search(rf'\b{attribute}="([^"]*)"', tag.group(0))
    assert value, (control_id, attribute)
    return value.group(1)


@pytest.mark.parametrize(("control_id", "attribute", "default_id", "field"), [
    ("amortization_years", "value", "amortization-years", "count"),
    ("capital_recovery_years", "value", "capital-recovery-years", "count"),
    ("utilization", "value", "utilization-default", "ratio"),
    ("electricity", "placeholder", "electricity-us-industrial", "usd"),
])
def test_a_money_control_starts_at_the_catalogue_default(control_id, attribute, default_id, field):
    default = getattr(next(c for c in load_catalog().cost_defaults if c.id == default_id), field).value
    assert float(_attribute(control_id, attribute)) == pytest.approx(default, abs=1e-9)
