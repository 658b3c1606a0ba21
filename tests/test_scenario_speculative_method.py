"""A scenario's speculative decoding names its method (ngram, draft_model, eagle3, mtp) and is planned as the
deployment side (``perf``, ``fit``) plans the same drafts; scenarios without a method plan as before."""

import pytest

from inferplan.catalog.loader import load_catalog
from inferplan.economics.plan import plan
from inferplan.economics.scenario import Scenario
from inferplan.errors import InferplanError
from inferplan.inputs.deployment import Deployment
from inferplan.inputs.workload import Workload
from inferplan.performance.context import ServingContext
from inferplan.performance.drafts import with_drafts
from inferplan.performance.serving import estimate_at
from inferplan.scenario import parse_scenario

L40S = {"gpu": "l40s", "gpus": 1, "quote_usd_per_system": 12000}
QWEN = {"model": "qwen3-8b", "platform": L40S, "workload": {"preset": "chat-seat"}, "target_users": 200}
GLM = {"model": "glm-4.5-air", "quantization": "fp8", "platform": {"system": "hgx-h100"},
       "workload": {"preset": "chat-seat"}, "target_users": 2000}


NGRAM_RATE = 0.7  # ngram has no default acceptance: these plans state the one MTP is assumed to have


def _scenario(base: dict, **speculative) -> Scenario:
    if speculative.get("method") == "ngram":
        speculative.setdefault("acceptance_rate", NGRAM_RATE)
    return Scenario(**base, speculative=speculative)


def _deployment_side(base: dict, r, method: str | None, draft_model: str | None):
    """The plan's replica cell as perf plans it with the same drafts: its KV concurrency and per-user speed."""
    catalog = load_catalog()
    c, w = r.capacity.cell, r.workload
    shape = Workload(input_len=w.input_tokens_per_request, output_len=w.output_tokens_per_request,
                     prefix_cache_hit_rate=w.cache_hit_rate, speculative_tokens=w.speculative_tokens,
                     acceptance_rate=NGRAM_RATE if method == "ngram" else None)
    d = Deployment(model=base["model"], gpu=r.accelerator, quantization=base.get("quantization"),
                   tensor_parallel_size=c.tensor_parallel_size, pipeline_parallel_size=c.pipeline_parallel_size,
                   data_parallel_size=c.data_parallel_size if c.data_parallel_size > 1 else None,
                   enable_expert_parallel=c.expert_parallel,
                   max_model_len=shape.input_len + shape.output_len)
    ctx = ServingContext(catalog, with_drafts(catalog, d, shape, method, draft_model), shape)
    return ctx.max_concurrency(), estimate_at(ctx, c.concurrency_at_target).output_tokens_per_s_per_user


@pytest.mark.parametrize("base, method, draft_model", [
    (QWEN, "ngram", None),
    (QWEN, "draft_model", "qwen3-0.6b"),
    (QWEN, "eagle3", None),  # the model's one catalogued draft
    (GLM, "mtp", None),
    (GLM, "ngram", None),  # a model with MTP layers drafting by ngram: no MTP draft on either side
])
def test_each_method_plans_as_the_deployment_side(base, method, draft_model):
    r = plan(_scenario(base, tokens=3, method=method, **({"draft_model": draft_model} if draft_model else {})))
    c = r.capacity.cell
    assert c.concurrency_at_target > 0
    kv, speed = _deployment_side(base, r, method, draft_model)
    assert c.kv_max_concurrency == kv
    assert c.output_tokens_per_s_per_user == pytest.approx(speed)


def test_a_standalone_draft_model_is_counted_and_differs_from_an_eagle3_head_of_that_name():
    standalone = plan(_scenario(QWEN, tokens=3, method="draft_model", draft_model="qwen3-0.6b"))
    as_before = plan(_scenario(QWEN, tokens=3, draft_model="qwen3-0.6b"))  # no method: an EAGLE-3 head, not catalogued
    assert standalone.capacity.cell.kv_max_concurrency < as_before.capacity.cell.kv_max_concurrency
    assert any("draft_model on vllm with Qwen3 0.6B" in a for a in standalone.assumptions)
    assert any("qwen3-0.6b is not in the catalogue" in a for a in as_before.assumptions)


# numbers of scenarios without a method, as they planned before the method was added
GOLDEN = [
    (QWEN, {"tokens": 3, "draft_model": "AngelSlim/Qwen3-8B_eagle3"}, "eagle3", 16919, 70, 36),
    (GLM, {"tokens": 2}, "mtp", 382218, 928, 816),
]


@pytest.mark.parametrize("base, speculative, default, users, kv, at_target", GOLDEN)
def test_scenarios_without_a_method_plan_as_before(base, speculative, default, users, kv, at_target):
    r = plan(Scenario(**base, speculative=speculative))
    assert (r.supported_users, r.capacity.cell.kv_max_concurrency, r.capacity.cell.concurrency_at_target) == (users, kv, at_target)
    if default is not None:  # the default is the method that plans the same
        stated = plan(Scenario(**base, speculative={**speculative, "method": default}))
        assert stated.supported_users == users


def test_no_method_on_a_model_without_mtp_layers_drafts_by_ngram_which_needs_its_rate():
    """What deploy launches there (memory.mtp.OTHER_METHOD): so the rate is the workload's, stated, not assumed."""
    with pytest.raises(InferplanError) as e:
        plan(Scenario(**QWEN, speculative={"tokens": 3}))
    assert e.value.field == "speculative.acceptance_rate"
    unnamed = plan(Scenario(**QWEN, speculative={"tokens": 3, "acceptance_rate": 0.6}))
    named = plan(Scenario(**QWEN, speculative={"tokens": 3, "acceptance_rate": 0.6, "method": "ngram"}))
    assert unnamed.supported_users == named.supported_users


def test_an_unknown_method_is_refused_naming_the_field_and_the_methods():
    text = "model: qwen3-8b\nplatform: {system: hgx-h100}\ntarget_users: 10\nspeculative: {tokens: 3, method: medusa}\n"
    with pytest.raises(InferplanError) as e:
        parse_scenario(text)
    assert "speculative.method" in e.value.describe()
    for method in ("ngram", "draft_model", "eagle3", "mtp"):
        assert method in e.value.describe()


@pytest.mark.parametrize("base, speculative, field", [
    (QWEN, {"tokens": 3, "method": "mtp"}, "speculative.method"),  # qwen3-8b ships no MTP layers
    (QWEN, {"tokens": 3, "method": "draft_model"}, "speculative.draft_model"),  # no draft named
    (QWEN, {"tokens": 3, "method": "ngram", "acceptance_rate": 0.5, "draft_model": "qwen3-0.6b"}, "speculative.draft_model"),
    (QWEN, {"tokens": 3, "method": "draft_model", "draft_model": "llama-3.1-8b"}, "speculative.draft_model"),  # vocabulary
    (QWEN, {"tokens": 3, "method": "draft_model", "draft_model": "no-such-draft-model"}, "speculative.draft_model"),
])
def test_bad_combinations_are_refused_naming_the_scenario_key(base, speculative, field):
    with pytest.raises(InferplanError) as e:
        plan(Scenario(**base, speculative=speculative))
    assert e.value.field == field
    assert e.value.allowed


def test_a_scenario_file_and_the_api_take_the_method(tmp_path):
    from fastapi.testclient import TestClient

    from inferplan.scenario import load_scenario
    from inferplan.shells.api import create_app

    path = tmp_path / "draft.yaml"
    path.write_text("model: qwen3-8b\nplatform: {gpu: l40s, gpus: 1, quote_usd_per_system: 12000}\n"
                    "workload: {preset: chat-seat}\ntarget_users: 200\n"
                    "speculative: {tokens: 3, method: draft_model, draft_model: qwen3-0.6b}\n")
    from_file = plan(load_scenario(path))
    client = TestClient(create_app())
    body = {"scenario": {**QWEN, "speculative": {"tokens": 3, "method": "draft_model", "draft_model": "qwen3-0.6b"}},
            "draws": 0}
    answer = client.post("/api/plan", json=body)
    assert answer.status_code == 200
    assert answer.json()["result"]["supported_users"] == from_file.supported_users
    refused = client.post("/api/plan", json={**body, "scenario": {**body["scenario"], "speculative": {"tokens": 3, "method": "mtp"}}})
    assert refused.status_code == 422 and refused.json()["error"]["field"] == "scenario.speculative.method"



def test_the_speed_model_adds_no_mtp_draft_beside_a_draft_model():
    """An estimate adds the model's MTP layers only where no other draft is named (``with_mtp_draft``): a draft
    model of a model with MTP layers is planned as a draft model, not as a second draft beside MTP."""
    from inferplan.memory.mtp import with_mtp_draft

    d = Deployment(model="glm-4.5-air", gpu="h100", draft_checkpoint="some/draft")
    assert with_mtp_draft(load_catalog(), d, 3).mtp_draft is False
    assert with_mtp_draft(load_catalog(), d.model_copy(update={"draft_checkpoint": None}), 3).mtp_draft is True


def test_ngram_on_a_model_with_mtp_layers_holds_no_mtp_draft():
    """GLM-4.5-Air ships MTP layers: a scenario drafting by ngram plans the memory of one without speculative
    decoding (no MTP weights or KV) and serves more users than MTP drafting at the same acceptance (stated for ngram)."""
    ngram = plan(_scenario(GLM, tokens=3, method="ngram"))
    mtp, plain = plan(_scenario(GLM, tokens=3, method="mtp")), plan(Scenario(**GLM))
    assert ngram.capacity.cell.kv_max_concurrency == plain.capacity.cell.kv_max_concurrency
    assert ngram.capacity.cell.kv_max_concurrency > mtp.capacity.cell.kv_max_concurrency
    assert ngram.supported_users > mtp.supported_users


def test_ngram_without_a_stated_acceptance_is_refused_naming_the_scenario_key():
    """N-gram drafting has no default acceptance (it is the workload's): a scenario file and the API refuse it
    naming speculative.acceptance_rate, and plan it with one stated."""
    from fastapi.testclient import TestClient

    from inferplan.shells.api import create_app

    text = ("model: qwen3-8b\nplatform: {gpu: l40s, gpus: 1, quote_usd_per_system: 12000}\n"
            "workload: {preset: chat-seat}\ntarget_users: 200\nspeculative: {tokens: 3, method: ngram}\n")
    with pytest.raises(InferplanError) as e:
        parse_scenario(text)
    assert "speculative.acceptance_rate" in e.value.describe() and "no default" in e.value.describe()
    stated = plan(parse_scenario(text.replace("method: ngram}", "method: ngram, acceptance_rate: 0.4}")))
    assert stated.supported_users > 0
    client = TestClient(create_app())
    refused = client.post("/api/plan", json={"scenario": {**QWEN, "speculative": {"tokens": 3, "method": "ngram"}}, "draws": 0})
    assert refused.status_code == 422 and refused.json()["error"]["field"] == "scenario.speculative.acceptance_rate"
