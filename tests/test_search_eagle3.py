"""With speculative decoding on, the search also tries a catalogued EAGLE-3 draft (eagle3_drafts.yaml) on
the engines its publisher shows it running on whose launch flags take eagle3, priced at the draft's measured acceptance, its memory counted, and
its pick's launch command naming the draft; a model without a catalogued draft gets no eagle3 candidate."""

from __future__ import annotations

import pytest

from inferplan.catalog.eagle3_drafts import drafts_for
from inferplan.catalog.loader import load_catalog
from inferplan.memory.eagle3 import acceptance_rate
from inferplan.report.search_view import layout_text
from inferplan.search import evaluate
from inferplan.search.request import SearchRequest, Targets
from inferplan.search.run import search
from inferplan.search.serving_modes import serving_modes
from inferplan.search.space import build_space

LOAD = dict(request_rate_per_s=2.0, input_len=1000, output_len=300, disaggregated=False, pricing="rent")
TARGETS = Targets(ttft_p95_s=3.0, tpot_p95_s=0.1)


@pytest.fixture(scope="module")
def catalog():
    return load_catalog()


def _space(catalog, **kw):
    return build_space(catalog, SearchRequest(**{**LOAD, **kw}), input_len=1000, output_len=300).cells


def test_the_space_tries_the_catalogued_draft_at_its_sourced_token_count(catalog):
    cells = _space(catalog, models=("gpt-oss-20b",), accelerators=("h100-sxm",), engines=("vllm", "sglang"))
    draft = drafts_for(catalog, "gpt-oss-20b")[0]
    eagle = [c for c in cells if c.speculative_method == "eagle3"]
    assert eagle and {c.engine for c in eagle} == {"vllm"} == set(draft.engines)  # its card shows vLLM only
    assert {(c.draft_model, c.speculative_tokens) for c in eagle} == {(draft.repo, int(serving_modes().eagle3_draft_tokens.value))}
    assert all(evaluate.draft_acceptance(catalog, c).rate == pytest.approx(acceptance_rate(draft)) for c in eagle)
    assert all(c.deployment(4096).eagle3_draft == draft.repo and not c.deployment(4096).mtp_draft for c in eagle)
    assert not [c for c in _space(catalog, models=("gpt-oss-20b",), accelerators=("h100-sxm",), speculative=False)
                if c.speculative_tokens]


def test_a_model_without_a_catalogued_draft_gets_no_eagle3_candidate(catalog):
    assert not drafts_for(catalog, "qwen2.5-7b")
    cells = _space(catalog, models=("qwen2.5-7b",), accelerators=("h100-sxm",), engines=("vllm",))
    assert cells and not [c for c in cells if c.speculative_tokens]


@pytest.mark.parametrize("engine, flag", [("vllm", '"method":"eagle3"')])
def test_a_search_returns_an_eagle3_pick_whose_command_names_the_draft(catalog, engine, flag):
    req = SearchRequest(models=("gpt-oss-20b",), accelerators=("h100-sxm",), engines=(engine,), targets=TARGETS,
                        top=50, **LOAD)
    picks = [r for r in search(req, catalog).results if r.speculative_method == "eagle3"]
    assert picks, "no eagle3 candidate"
    repo = drafts_for(catalog, "gpt-oss-20b")[0].repo
    assert picks[0].draft_model == repo and repo in picks[0].deploy and flag in picks[0].deploy
    assert f"EAGLE-3 {repo} 2 draft" in layout_text(picks[0])  # the table and the web page say which draft
    rate = acceptance_rate(drafts_for(catalog, "gpt-oss-20b")[0])
    assert any(n.startswith(f"drafts priced at acceptance {rate:.3g} from {repo}") for n in picks[0].notes)


def test_trtllm_launches_the_draft_from_its_options_file(catalog):
    """NVIDIA's Llama-3.3-70B head lists TensorRT-LLM as its one runtime: tried there, not on vLLM or SGLang."""
    draft = drafts_for(catalog, "llama-3.3-70b")[0]
    cells = _space(catalog, models=("llama-3.3-70b",), accelerators=("h100-sxm",),
                   engines=("trtllm", "vllm", "sglang", "llamacpp"))
    assert {c.engine for c in cells if c.speculative_method == "eagle3"} == {"trtllm"} == set(draft.engines)
    req = SearchRequest(models=("llama-3.3-70b",), accelerators=("h100-sxm",), engines=("trtllm",), targets=TARGETS,
                        top=50, **LOAD)
    picks = [r for r in search(req, catalog).results if r.speculative_method == "eagle3"]
    assert picks and "decoding_type: Eagle3" in picks[0].deploy
    assert f"speculative_model: {draft.repo}" in picks[0].deploy


def test_an_eagle3_picks_scenario_plans_the_draft_the_search_priced(catalog):
    from inferplan.economics.plan import plan
    from inferplan.economics.scenario import Scenario

    req = SearchRequest(models=("gpt-oss-20b",), accelerators=("h100-sxm",), engines=("vllm",), targets=TARGETS,
                        top=50, **LOAD)
    pick = next(r for r in search(req, catalog).results if r.speculative_method == "eagle3")
    assert pick.scenario["speculative"]["draft_model"] == pick.draft_model
    assert pick.scenario["speculative"]["method"] == "eagle3"
    drafted = plan(Scenario.model_validate(pick.scenario), catalog)
    assert drafted.rent_usd_per_month == pytest.approx(pick.monthly_usd, rel=1e-9)
    undrafted = {k: v for k, v in pick.scenario.items() if k != "speculative"}
    plain = plan(Scenario.model_validate(undrafted), catalog)
    assert drafted.capacity.cell.kv_max_concurrency < plain.capacity.cell.kv_max_concurrency  # the draft's memory


def test_a_search_on_qwen3_8b_drafts_with_angelslims_head_on_vllm_only(catalog):
    """AngelSlim measured its Qwen3-8B draft with vLLM: the search tries it there, not on SGLang or TensorRT-LLM."""
    draft = drafts_for(catalog, "qwen3-8b")[0]
    cells = _space(catalog, models=("qwen3-8b",), accelerators=("h100-sxm",), engines=("vllm", "sglang", "trtllm"))
    assert {c.engine for c in cells} == {"vllm", "sglang", "trtllm"}
    assert {c.engine for c in cells if c.speculative_method == "eagle3"} == {"vllm"}
    req = SearchRequest(models=("qwen3-8b",), accelerators=("h100-sxm",), engines=("vllm",), targets=TARGETS,
                        top=50, **LOAD)
    picks = [r for r in search(req, catalog).results if r.speculative_method == "eagle3"]
    assert picks and picks[0].draft_model == draft.repo and draft.repo in picks[0].deploy
    assert any(n.startswith(f"drafts priced at acceptance {acceptance_rate(draft):.3g} from {draft.repo}")
               for n in picks[0].notes)


def test_the_space_adds_no_drafts_it_cannot_price_without_a_stated_acceptance(catalog):
    """A search states no acceptance rate, so it tries no method that has no default one (n-gram: the rate is the
    workload's); each speculative candidate's acceptance resolves (a published or the assumed default rate)."""
    from inferplan.performance.drafts import NO_DEFAULT_ACCEPTANCE_METHODS

    cells = _space(catalog, models=("qwen3-8b", "glm-4.5-air"), accelerators=("h100-sxm",), speculative=True)
    drafted = [c for c in cells if c.speculative_tokens]
    assert {c.speculative_method for c in drafted} == {"eagle3", "mtp"}  # the check below can fail
    assert not [c for c in drafted if c.speculative_method in NO_DEFAULT_ACCEPTANCE_METHODS]
    assert all(evaluate.draft_acceptance(catalog, c).rate > 0 for c in drafted[:4])
