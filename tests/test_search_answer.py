"""An answer with no deployment leads with its one cause: buying bare GPUs the catalogue prices only inside
systems is said once, with the searches to run next as ready commands, and the failed families are grouped
by identical reason instead of one line each (CLI, ``--json``'s ``infeasible_summary``, the web view)."""

from __future__ import annotations

import json
import shlex

import pytest
from typer.testing import CliRunner

from inferplan.report.search_view import group_text, search_view
from inferplan.search.answer import _groups, _next_steps, _price_is_the_cause
from inferplan.search.request import SearchRequest, Targets
from inferplan.search.result import Infeasible
from inferplan.search.run import search
from inferplan.shells.cli import app

ASPECTS = dict(models=("qwen3-8b",), engines=("vllm",), disaggregated=False, speculative=False, top=3,
               users=200, workload="chat-seat", pricing="buy", targets=Targets(ttft_p95_s=2.0))
ARGS = ["search", "--model", "qwen3-8b", "--users", "200", "--workload", "chat-seat", "--engines", "vllm",
        "--accelerators", "h100-sxm", "--buy", "--ttft-p95", "2", "--no-speculative", "--no-disaggregated"]


@pytest.fixture(scope="module")
def unpriced(catalog):
    return search(SearchRequest(**ASPECTS, accelerators=("h100-sxm",)), catalog)


def test_bare_gpus_without_a_price_give_one_cause_and_one_group(unpriced):
    r = unpriced
    assert not r.results and r.infeasible
    s = r.infeasible_summary
    assert "bare h100-sxm" in s.cause and "inside systems" in s.cause
    price = [x for x in r.infeasible if x.reason == "price"]
    assert len({x.platform for x in price}) > 1  # 1x, 2x, … of the GPU: one message for all of them
    group = next(g for g in s.groups if g.reason == "price")
    assert len(group.families) == len(price) and len(s.groups) < len(r.infeasible)
    assert sum(len(g.families) for g in s.groups) == len(r.infeasible)


def test_the_next_steps_are_the_systems_that_hold_the_gpu_renting_and_a_price(catalog, unpriced):
    steps = unpriced.infeasible_summary.next_steps
    changes = [s.changes for s in steps]
    assert changes[0]["systems"] and "hgx-h100" in changes[0]["systems"] and changes[0]["accelerators"] is None
    assert {"pricing": "rent", "gpu_price_usd": None} in changes
    assert changes[-1] == {"gpu_price_usd": {"h100-sxm": None}}
    stated = {k: v for k, v in SearchRequest(**ASPECTS, accelerators=("h100-sxm",)).model_dump().items() if v is not None}
    in_systems = search(SearchRequest(**{**stated, **{k: v for k, v in changes[0].items() if v is not None},
                                         "accelerators": None}), catalog)
    assert in_systems.results  # the first step's search prices them


@pytest.mark.parametrize("others, priced, leads", [
    ([], True, True),
    ([("latency", 1.015)], True, True),  # missed by less than the near-miss margin: inside the speed model's error
    ([("latency", 1.5)], True, False),  # a priced platform misses the targets: price is not the one cause
    ([("latency", 1.5)], False, True),  # no platform searched has a price: whatever else fails, price does
    ([("memory", None)] * 5, True, True),  # a family that does not fit fails at any price
    ([("engine", None), ("latency", 1.015)], True, True),
])
def test_price_leads_unless_a_priced_platform_fails_for_another_reason(others, priced, leads):
    def fam(i, reason, shortfall=None):
        return Infeasible(model="m", platform=f"{i}x-g", engine="e", quantization="q", reason=reason, message="x",
                          shortfall=shortfall)
    families = [fam(i, "price") for i in range(3)] + [fam(9, r, s) for r, s in others]
    assert _price_is_the_cause(tuple(families), 0.02, priced) is leads


@pytest.mark.parametrize("accelerators, route", [
    ("rtx-4090", "--buy"),  # most families fail on price, the rest on memory
    ("h100-sxm,a100-80gb,l40s", "--buy"),  # the rest miss latency by far more than the margin
])
def test_bare_gpus_without_a_price_lead_with_the_cause_whatever_else_fails(accelerators, route):
    out = CliRunner().invoke(app, ["search", "--model", "qwen3-32b", "--users", "5", "--workload", "chat-seat",
                                   "--accelerators", accelerators, route], terminal_width=200)
    assert out.exit_code == 0, out.output
    assert "No deployment meets every target" not in out.output
    assert "cannot be priced" in out.output and "inferplan search" in out.output


def test_a_group_keeps_the_smaller_format_that_fits_and_families_with_another_hint_are_another_group():
    def fam(engine, fits, at=None):
        return Infeasible(model="m", platform="1x-g", engine=engine, quantization="bf16", reason="memory",
                          message="m does not fit", fits_in_quantization=fits, fits_at_max_model_len=at)
    groups = _groups((fam("vllm", "fp8"), fam("sglang", "fp8"), fam("trtllm", "int4-awq", 8192), fam("llamacpp", None)))
    lines = [group_text(g) for g in groups]
    assert len(groups) == 3
    assert "2 families" in lines[0] and "it fits as fp8 (name it" in lines[0]
    assert any("it fits as int4-awq at 8,192 tokens" in line for line in lines)
    assert sum("it fits as" in line for line in lines) == 2


def test_a_gpu_no_catalogue_system_holds_is_not_said_to_be_priced_inside_systems(catalog):
    assert not any(s.accelerator == "a100-80gb" for s in catalog.systems)
    r = search(SearchRequest(**ASPECTS, accelerators=("a100-80gb",)), catalog)
    assert "bare a100-80gb" in r.infeasible_summary.cause
    said = [r.infeasible_summary.cause, *(x.message for x in r.infeasible)]
    assert not any("inside systems" in m for m in said)


def test_the_price_step_keeps_the_prices_already_given(catalog):
    req = SearchRequest(**ASPECTS, accelerators=("h100-sxm", "a100-80gb"), gpu_price_usd={"h100-sxm": 25_000})
    step = _next_steps(catalog, req, ["a100-80gb"])[-1]
    assert step.changes == {"gpu_price_usd": {"h100-sxm": 25_000, "a100-80gb": None}}


def test_the_view_leads_with_the_cause_and_groups_the_reasons(unpriced):
    v = search_view(unpriced)
    assert v.headline.startswith("Buying bare h100-sxm GPUs cannot be priced")
    assert len(v.infeasible) == len(unpriced.infeasible_summary.groups)
    assert any("families (qwen3-8b on 1x-h100-sxm" in line for line in v.infeasible)
    assert any("hgx-h100" in s for s in v.next_steps) and any("your price" in s for s in v.next_steps)


def test_cli_leads_with_the_cause_and_prints_commands_that_run():
    out = CliRunner().invoke(app, ARGS, terminal_width=200)
    assert out.exit_code == 0, out.output
    assert "No deployment meets every target" not in out.output
    assert "Buying bare h100-sxm GPUs cannot be priced" in out.output
    assert out.output.count("no purchase price for bare h100-sxm") == 1
    commands = [line.strip() for line in out.output.splitlines() if line.strip().startswith("inferplan search")]
    assert any("--systems hgx-h100" in c and "--accelerators" not in c for c in commands)
    assert any("--gpu-price-usd h100-sxm=USD" in c for c in commands)
    priced = next(c for c in commands if "--gpu-price-usd" in c).replace("=USD", "=25000")
    again = CliRunner().invoke(app, [*shlex.split(priced)[1:], "--json"])
    assert again.exit_code == 0, again.output
    assert json.loads(again.output)["results"]


def test_cli_json_keeps_every_family_and_adds_the_summary(unpriced):
    out = CliRunner().invoke(app, [*ARGS, "--json"])
    data = json.loads(out.output)
    assert len(data["infeasible"]) == len(unpriced.infeasible)
    assert data["infeasible_summary"]["cause"] == unpriced.infeasible_summary.cause
    assert data["infeasible_summary"]["next_steps"][-1]["changes"] == {"gpu_price_usd": {"h100-sxm": None}}


def test_a_next_step_command_states_every_setting_of_the_request_as_its_flag():
    from inferplan.shells.cli_search import search_command

    req = SearchRequest(models=("qwen3-8b",), request_rate_per_s=2, input_len=100, output_len=10, max_capex_usd=1e6,
                        pricing="buy", speculative=False, accelerators=("h100-sxm",), targets=Targets(ttft_p95_s=2))
    assert search_command(req, {"pricing": "rent"}) == (
        "inferplan search --model qwen3-8b --request-rate 2 --input-len 100 --output-len 10 --accelerators h100-sxm "
        "--max-capex 1000000 --rent --no-speculative --ttft-p95 2")
    assert search_command(req, {"accelerators": None, "systems": ["hgx-h100"]}).count("--systems hgx-h100") == 1


def test_renting_bare_gpus_no_listing_rents_leads_with_buying_them(catalog):
    # a DGX Spark's GB10 is catalogued to buy (dgx-spark) but no provider rents it: renting it is the cause, and
    # the next steps buy the system that holds it or the GPU at the user's price
    req = SearchRequest(models=("qwen3-8b",), users=5, workload="chat-seat", pricing="rent", accelerators=("gb10",))
    s = search(req, catalog).infeasible_summary
    assert s.cause.startswith("renting bare gb10 GPUs cannot be priced")
    assert [x.changes for x in s.next_steps] == [
        {"systems": ["dgx-spark"], "accelerators": None, "pricing": "buy"},
        {"pricing": "buy", "gpu_price_usd": {"gb10": None}}]
    stated = {k: v for k, v in req.model_dump().items() if v is not None}
    bought = search(SearchRequest(**{**stated, **s.next_steps[0].changes}), catalog)
    assert bought.results and bought.results[0].system == "dgx-spark"
