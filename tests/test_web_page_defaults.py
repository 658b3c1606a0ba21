"""The web page's form shows the catalogue's money defaults (a control's starting value): a catalogue
update that the page does not follow would have it state one figure while the plan uses another. The
electricity, PUE and colocation defaults depend on where the platform stands (a desk, a data centre),
so their placeholders are the rates the server's plan used; the EUR rate is not in the page at all:
it comes from the API (tests/test_fx_source.py)."""

import re
from pathlib import Path

import pytest

from inferplan.catalog.loader import load_catalog

STATIC = Path(__file__).resolve().parents[1] / "src" / "inferplan" / "shells" / "static"
PAGE = (STATIC / "index.html").read_text()


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
])
def test_a_money_control_starts_at_the_catalogue_default(control_id, attribute, default_id, field):
    default = getattr(next(c for c in load_catalog().cost_defaults if c.id == default_id), field).value
    assert float(_attribute(control_id, attribute)) == pytest.approx(default, abs=1e-9)


def test_the_site_dependent_money_controls_show_the_rates_the_plan_used():
    """Electricity, PUE and colocation: each control sends its scenario field, and after a plan its
    placeholder is the rate the server's plan used for it (``result.rates``), not a figure in the page."""
    form, script = (STATIC / "form.js").read_text(), (STATIC / "app.js").read_text()
    pairs = dict(re.findall(r'\["(\w+)", "(\w+)"\]', re.search(r"const SITE_RATES = \[(.*?)\];", form).group(1)))
    assert pairs == {"electricity": "electricity_usd_per_kwh", "pue": "pue", "colocation": "colocation_usd_per_kw_month"}
    for control, field in pairs.items():
        assert _attribute(control, "data-field") == f"scenario.money.{field}"
        assert not re.fullmatch(r"[\d.]+", _attribute(control, "placeholder"))  # no number the page would have to follow
    assert re.search(r"for \(const \[id, key\] of SITE_RATES\) \$\(id\)\.placeholder = `\$\{view\.result\.rates\[key\]\}`", script)
