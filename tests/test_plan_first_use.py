"""A first plan of one home GPU: each refusal names the key to change and what would plan; small
monthly bills show their cents."""

import re
from pathlib import Path

import pytest

from inferplan.catalog.loader import load_catalog
from inferplan.economics.plan import plan
from inferplan.economics.scenario import Scenario
from inferplan.errors import InvalidScenarioError
from inferplan.report.cards import plan_cards, recommendation_reasons
from inferplan.scenario import load_scenario

CATALOG = load_catalog()
HOME = {"name": "home", "model": "qwen3-32b", "workload": {"preset": "chat-seat"}, "target_users": 5}


def test_a_bare_gpu_loadout_too_small_for_the_model_names_its_gpu_count_and_what_fits():
    s = Scenario.model_validate({**HOME, "platform": {"gpu": "rtx-4090", "gpus": 1, "quote_usd_per_system": 3000}})
    with pytest.raises(InvalidScenarioError) as err:
        plan(s, CATALOG)
    assert err.value.field == "platform.gpus"  # the GPU count, not a system the scenario does not name
    assert "1 × rtx-4090" in str(err.value) and "1 GPUs" not in str(err.value)
    # the BF16 checkpoint needs a 4-GPU instance; a 4-bit build fits the one card at the request's context
    assert "at least 4 GPUs" in err.value.allowed and "int4-awq" in err.value.allowed
    awq = Scenario.model_validate({**s.model_dump(exclude_unset=True), "quantization": "int4-awq"})
    assert plan(awq, CATALOG).capacity.cell.gpus == 1


def test_a_bare_gpu_without_a_price_names_the_priced_systems_built_on_it():
    s = Scenario.model_validate({**HOME, "quantization": "int4-awq", "platform": {"gpu": "RTX 4090", "gpus": 1}})
    with pytest.raises(InvalidScenarioError) as err:
        plan(s, CATALOG)
    assert err.value.field == "platform.quote_usd_per_system"
    assert "platform.system: rtx-4090-workstation (1 × rtx-4090)" in str(err.value)
    # a GPU no priced system is built on: the key alone
    h20 = Scenario.model_validate({**s.model_dump(exclude_unset=True), "platform": {"gpu": "h20", "gpus": 1}})
    with pytest.raises(InvalidScenarioError, match=r"\(platform\.system\)"):
        plan(h20, CATALOG)


def test_a_monthly_bill_under_ten_shows_its_cents_in_the_recommendation_and_the_cards():
    s = Scenario.model_validate({**HOME, "engine": "llamacpp", "quantization": "q4_k_m",
                                 "platform": {"system": "rtx-4090-workstation"}})
    r = plan(s, CATALOG)
    api = r.recommendation.monthly_usd["stay on an API"]
    assert 0 < api < 1  # five chat seats cost cents a month at an API
    for currency, symbol in (("usd", r"\$"), ("eur", "€")):
        assert re.search(rf"API {symbol}0\.\d+", recommendation_reasons(r, currency)[0])
    cards = {c.key: c.value for c in plan_cards(r)}
    assert re.fullmatch(r"\$0\.\d+", cards["api_cost"]) and re.fullmatch(r"\$0\.\d+", cards["billing"])
    notes = {c.key: c.note for c in plan_cards(r)}
    assert "1 × rtx-4090-workstation (1 GPU) for 5 users" in notes["loadouts"]
    assert any(a.endswith("1 loadout(s) of 1 GPU") for a in r.assumptions)


ROOT = Path(__file__).resolve().parents[1]


def _loadouts(path: Path, engine: str, users: int) -> int:
    s = load_scenario(path)
    return plan(s.model_copy(update={"engine": engine, "target_users": users}), CATALOG).loadouts


def test_the_engine_gap_the_example_and_the_api_doc_state_is_what_plan_computes():
    example = ROOT / "examples" / "coding-developers-b200.yaml"
    said = re.search(r"(\d+) users need (\d+) systems; SGLang carries them on (\d+)", example.read_text())
    users, vllm, sglang = map(int, said.groups())
    assert (_loadouts(example, "vllm", users), _loadouts(example, "sglang", users)) == (vllm, sglang)
    # docs/api.md describes the page's default scenario, at the page's default target users
    page = (ROOT / "src/inferplan/shells/static/index.html").read_text()
    default_users = int(re.search(r'id="target_users"[^>]*value="(\d+)"', page).group(1))
    doc = " ".join((ROOT / "docs" / "api.md").read_text().split())
    said = re.search(r"its (\d+) users need (\d+) systems where SGLang needs (\d+)", doc)
    users, vllm, sglang = map(int, said.groups())
    assert users == default_users
    assert (_loadouts(example, "vllm", users), _loadouts(example, "sglang", users)) == (vllm, sglang)


def test_a_scenario_file_refused_by_a_keys_type_says_what_the_key_takes(tmp_path):
    from typer.testing import CliRunner

    from inferplan.shells.cli import app

    def refusal(text: str) -> str:
        path = tmp_path / "s.yaml"
        path.write_text(text)
        result = CliRunner().invoke(app, ["plan", str(path), "--draws", "0"], terminal_width=400)
        assert result.exit_code == 2
        return " ".join(result.output.split())

    base = "name: x\nmodel: qwen3-8b\nplatform: {system: rtx-4090-workstation}\nworkload: {preset: chat-seat}\n"
    section = refusal(base.replace("{preset: chat-seat}", "chat-seat"))
    assert "s.yaml:4: workload: a section of keys" in section and "not 'chat-seat'" in section
    assert "(allowed: an object with the keys" in section and "preset" in section and "WorkloadOverrides" not in section
    point = refusal(base.replace("}\nworkload", ", price_point: median}\nworkload"))
    assert "platform.price_point" in point and "(allowed: low, mid, high)" in point


def test_a_scenario_file_number_too_large_for_a_count_is_named_as_too_large(tmp_path):
    """1e308 users in a plan YAML: refused as too large with the bounds, as the API refuses it, not as an input
    string pydantic cannot parse; a bound in pydantic's words is written as a number (1,000,000,000)."""
    from typer.testing import CliRunner

    from inferplan.shells.cli import app

    base = "name: x\nmodel: qwen3-8b\nplatform: {system: hgx-h100}\ntarget_users: "
    said = []
    for users in ("1e308", "2000000000"):
        path = tmp_path / "s.yaml"
        path.write_text(base + users + "\n")
        result = CliRunner().invoke(app, ["plan", str(path), "--draws", "0"], terminal_width=400)
        assert result.exit_code == 2
        said.append(" ".join(result.output.split()))
    assert "s.yaml:4: target_users: Input is too large" in said[0] and "string" not in said[0], said[0]
    assert "(allowed: a whole number at least 1 and at most 1,000,000,000)" in said[0], said[0]
    assert "less than or equal to 1,000,000,000 (allowed: at most 1,000,000,000)" in said[1], said[1]
