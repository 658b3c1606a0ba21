"""The acceptance rate drafts are priced at is resolved in the library, alike for every shell: a stated
rate, else a catalogued EAGLE-3 draft's published one, else the default (assumed, and every answer says so:
the perf assumption line, a search pick's note); the API, the CLI, a Users + ROI scenario and a search
pick price the same draft at the same rate."""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from inferplan.catalog.eagle3_drafts import drafts_for
from inferplan.catalog.loader import load_catalog
from inferplan.inputs.deployment import Deployment
from inferplan.inputs.workload import DEFAULT_ACCEPTANCE_RATE, Workload
from inferplan.memory.eagle3 import acceptance_rate
from inferplan.performance.context import tokens_per_step
from inferplan.performance.drafts import resolve_acceptance
from inferplan.performance.serving import estimate
from inferplan.search.request import SearchRequest, Targets
from inferplan.search.run import search
from inferplan.shells.api import create_app
from inferplan.shells.cli import app

MODEL = "gpt-oss-20b"


@pytest.fixture(scope="module")
def catalog():
    return load_catalog()


@pytest.fixture(scope="module")
def draft(catalog):
    return next(d for d in drafts_for(catalog, MODEL) if d.acceptance is not None)


def _spec_line(assumptions) -> str:
    return next(a for a in assumptions if a.startswith("speculative decoding: "))


@pytest.mark.parametrize("sent", [{}, {"acceptance_rate": None}])
def test_the_api_and_the_cli_price_an_eagle3_draft_alike(tmp_path, draft, sent):
    cli = json.loads(CliRunner().invoke(app, ["perf", "--model", MODEL, "--gpu", "h100-sxm", "--speculative-tokens", "3",
                                              "--speculative-method", "eagle3", "--draft-model", draft.repo, "--json"]).stdout)
    r = TestClient(create_app(tmp_path / "t.db")).post("/api/perf", json={
        "deployment": {"model": MODEL, "gpu": "h100-sxm", "eagle3_draft": draft.repo},
        "workload": {"speculative_tokens": 3, **sent}})
    assert r.status_code == 200, r.text
    api = r.json()
    assert api["tokens_per_step"] == pytest.approx(cli["tokens_per_step"], rel=1e-12)
    assert api["tokens_per_step"] == pytest.approx(tokens_per_step(3, acceptance_rate(draft)), rel=1e-9)
    assert api["acceptance_rate"] == pytest.approx(acceptance_rate(draft)) == cli["acceptance_rate"]  # the rate used
    line = _spec_line(api["assumptions"])
    assert f"acceptance {acceptance_rate(draft):.3g} from {draft.repo}" in line and draft.acceptance.length.source in line
    assert "assumed" not in line.split("→")[0]


def test_a_stated_rate_wins_over_the_drafts(catalog, draft):
    d = Deployment(model=MODEL, gpu="h100-sxm", eagle3_draft=draft.repo)
    e = estimate(d, Workload(speculative_tokens=3, acceptance_rate=0.5), catalog)
    assert e.tokens_per_step == pytest.approx(tokens_per_step(3, 0.5))
    assert "at acceptance 0.5 stated" in _spec_line(e.assumptions)


def test_a_draft_that_publishes_no_acceptance_is_priced_at_the_default_and_said_to_be(catalog):
    unpublished = next(d for d in catalog.eagle3_drafts if d.acceptance is None)
    d = Deployment(model=unpublished.model, gpu="h100-sxm", eagle3_draft=unpublished.repo)
    a = resolve_acceptance(catalog, d, None)
    assert a.rate == DEFAULT_ACCEPTANCE_RATE and a.assumed
    assert a.text == f"acceptance {DEFAULT_ACCEPTANCE_RATE:g} assumed: {unpublished.repo} publishes none"


def test_an_mtp_draft_is_priced_at_the_default_and_said_to_be(catalog):
    e = estimate(Deployment(model="deepseek-v3", system="hgx-h200"), Workload(speculative_tokens=1), catalog)
    assert e.tokens_per_step == pytest.approx(tokens_per_step(1, DEFAULT_ACCEPTANCE_RATE))
    assert f"acceptance {DEFAULT_ACCEPTANCE_RATE:g} assumed: the model's MTP layers publish none" in _spec_line(e.assumptions)


def test_a_scenario_with_the_draft_prices_the_drafts_published_rate(catalog, draft):
    from inferplan.economics.plan import plan
    from inferplan.economics.scenario import Scenario

    base = {"model": MODEL, "platform": {"gpu": "h100-sxm", "gpus": 1, "quote_usd_per_system": 30000}, "target_users": 10}
    drafted = plan(Scenario.model_validate({**base, "speculative": {"tokens": 3, "draft_model": draft.repo}}), catalog)
    stated = plan(Scenario.model_validate({**base, "speculative": {"tokens": 3, "draft_model": draft.repo,
                                                                   "acceptance_rate": acceptance_rate(draft)}}), catalog)
    line = _spec_line(drafted.capacity.assumptions)
    assert f"acceptance {acceptance_rate(draft):.3g} from {draft.repo}" in line
    assert drafted.capacity.cell.output_tokens_per_s_per_user == pytest.approx(stated.capacity.cell.output_tokens_per_s_per_user)


def test_a_search_pick_drafting_at_an_unpublished_acceptance_says_it_is_assumed(catalog):
    unpublished = next(d for d in catalog.eagle3_drafts if d.id == "eagle3-llama-3.3-70b-nvidia")  # for TensorRT-LLM
    assert unpublished.acceptance is None
    req = SearchRequest(models=(unpublished.model,), accelerators=("h100-sxm",), engines=("trtllm",), top=50,
                        targets=Targets(ttft_p95_s=5.0, tpot_p95_s=0.2), request_rate_per_s=1.0, input_len=1000,
                        output_len=300, disaggregated=False, pricing="rent")
    picks = [r for r in search(req, catalog).results if r.draft_model == unpublished.repo]
    assert picks, "no pick drafting with the draft"
    note = f"acceptance {DEFAULT_ACCEPTANCE_RATE:g} assumed: {unpublished.repo} publishes none"
    assert all(any(note in n for n in p.notes) for p in picks)
    assert "acceptance_rate" not in picks[0].scenario["speculative"]  # the plan resolves it alike
