"""EAGLE-3 draft checkpoints as catalogue data (eagle3_drafts.yaml): fit and perf with
--speculative-method eagle3 count a catalogued draft's weights and KV where the engine holds them,
say when a named draft is not catalogued, and price a draft at its publisher's acceptance."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from inferplan.catalog.eagle3_drafts import Eagle3Draft, check_eagle3_drafts, drafts_for
from inferplan.catalog.loader import load_catalog
from inferplan.errors import CatalogError, InvalidScenarioError
from inferplan.inputs.deployment import Deployment
from inferplan.memory.eagle3 import acceptance_rate
from inferplan.memory.resolve import resolve_model
from inferplan.memory.suggest import fit_or_suggest
from inferplan.performance.context import tokens_per_step
from inferplan.shells.cli import app

L8 = ["fit", "--model", "llama-3.1-8b", "--gpu", "H100", "--tensor-parallel-size", "2", "--engine", "vllm", "--json",
      "--speculative-tokens", "2"]


def _draft(draft_id: str) -> Eagle3Draft:
    return next(d for d in load_catalog().eagle3_drafts if d.id == draft_id)


def _fit(*extra: str) -> dict:
    result = CliRunner().invoke(app, [*L8, *extra])
    assert result.exit_code in (0, 1), result.output
    return json.loads(result.stdout)


def test_at_least_five_catalogue_models_have_a_sourced_draft():
    catalog = load_catalog()
    models = {d.model for d in catalog.eagle3_drafts}
    assert len(models) >= 5 and all(m in catalog.models for m in models)
    for d in catalog.eagle3_drafts:
        assert d.parameters.source in catalog.sources and d.sources


def test_a_catalogued_draft_takes_its_weights_and_kv_from_the_pool():
    """vLLM loads the draft before sizing the KV cache and gives its layer entries in the same pool: the
    tokens drop by the draft's weights per GPU over the KV per token with its layer added."""
    plain, drafted = _fit("--speculative-method", "ngram"), _fit("--speculative-method", "eagle3")
    draft = drafts_for(load_catalog(), "llama-3.1-8b")[0]
    per_gpu = draft.weight_bytes / 2
    layers = 32
    kv_bytes = plain["kv_cache_tokens"] * 2 * 1024 * layers  # bf16, K and V of 4 KV heads of 128 per layer and rank at TP 2
    expected = (kv_bytes - per_gpu) / (2 * 1024 * (layers + 1))
    assert drafted["kv_cache_tokens"] < plain["kv_cache_tokens"]
    assert drafted["kv_cache_tokens"] == pytest.approx(expected, rel=0.02)
    assert any(draft.repo in note for note in drafted["assumptions"])


def test_the_one_catalogued_draft_is_the_default_and_an_unlisted_one_is_not_counted():
    catalog = load_catalog()
    repo = drafts_for(catalog, "llama-3.1-8b")[0].repo
    named = _fit("--speculative-method", "eagle3", "--draft-model", repo.upper())
    assert named["kv_cache_tokens"] == _fit("--speculative-method", "eagle3")["kv_cache_tokens"]
    unlisted = _fit("--speculative-method", "eagle3", "--draft-model", "someone/llama-eagle3")
    assert unlisted["kv_cache_tokens"] == _fit("--speculative-method", "ngram")["kv_cache_tokens"]
    assert any("someone/llama-eagle3" in n and "not counted" in n for n in unlisted["assumptions"])


def test_sglang_keeps_its_reserve_outside_the_fraction_for_a_draft():
    d = Deployment(model="llama-3.1-8b", gpu="H100", engine="sglang", engine_version="0.5.9")  # drafts outside until 0.5.13
    plain = fit_or_suggest(d, speculative_tokens=2, speculative_method="ngram")
    drafted = fit_or_suggest(d, speculative_tokens=2, speculative_method="eagle3", draft_model="lmsys/sglang-eagle3")
    assert drafted.kv_cache_tokens < plain.kv_cache_tokens  # a draft the catalogue lacks: the reserve alone


@pytest.mark.parametrize("draft_id", [d.id for d in load_catalog().eagle3_drafts if d.acceptance])
def test_the_rate_gives_back_the_stated_acceptance_length(draft_id):
    draft = _draft(draft_id)
    rate = acceptance_rate(draft)
    assert tokens_per_step(draft.acceptance.draft_tokens, rate) == pytest.approx(draft.acceptance.length.value, rel=1e-6)


def test_perf_prices_the_draft_at_its_measured_acceptance_unless_one_is_stated():
    args = ["perf", "--model", "gpt-oss-20b", "--gpu", "H100", "--speculative-tokens", "3", "--json"]
    draft = drafts_for(load_catalog(), "gpt-oss-20b")[0]
    eagle = json.loads(CliRunner().invoke(app, [*args, "--speculative-method", "eagle3"]).stdout)
    assert eagle["tokens_per_step"] == pytest.approx(tokens_per_step(3, acceptance_rate(draft)), rel=1e-3)
    stated = json.loads(CliRunner().invoke(app, [*args, "--speculative-method", "eagle3", "--acceptance-rate", "0.5"]).stdout)
    assert stated["tokens_per_step"] == pytest.approx(tokens_per_step(3, 0.5), rel=1e-3)


def test_an_mtp_draft_beside_an_eagle3_one_is_refused():
    d = Deployment(model="deepseek-v3", system="hgx-h200", mtp_draft=True)
    with pytest.raises(InvalidScenarioError) as exc:
        fit_or_suggest(d, speculative_tokens=1, speculative_method="eagle3")
    assert exc.value.field == "speculative_method"


def test_a_draft_for_a_model_the_catalogue_lacks_is_refused():
    catalog = load_catalog()
    bad = Eagle3Draft.model_validate({**_draft("eagle3-gpt-oss-20b-nebius").model_dump(), "model": "no-such"})

    class Fake:
        eagle3_drafts, models, sources = (bad,), catalog.models, catalog.sources

    with pytest.raises(CatalogError):
        check_eagle3_drafts(Fake())


def test_deploy_launches_the_catalogued_draft_and_plans_its_memory():
    """eagle3 without --draft-model launches the model's one catalogued draft; a model without one still
    needs it named."""
    from inferplan.deploy.command import Speculative, launch_command, with_draft, planned_speculative

    catalog = load_catalog()
    d = Deployment(model="llama-3.1-8b", gpu="H100")
    spec = planned_speculative(d, catalog, Speculative(method="eagle3", tokens=2))
    repo = drafts_for(catalog, "llama-3.1-8b")[0].repo
    assert spec.draft_model == repo and repo in launch_command(d, catalog, speculative=spec).script
    assert with_draft(d, catalog, spec).eagle3_draft == repo
    assert planned_speculative(Deployment(model="qwen2.5-7b", gpu="H100"), catalog,
                               Speculative(method="eagle3", tokens=2)).draft_model is None
    with pytest.raises(InvalidScenarioError):  # a plan counting a draft the command would not start
        with_draft(d.model_copy(update={"eagle3_draft": repo}), catalog, Speculative(method="ngram", tokens=2))


def test_the_fit_route_takes_the_draft(tmp_path):
    from fastapi.testclient import TestClient

    from inferplan.shells.api import create_app

    client = TestClient(create_app(tmp_path / "api.db"))
    body = {"model": "llama-3.1-8b", "gpu": "H100"}
    plain = client.post("/api/fit?speculative_tokens=2&speculative_method=ngram", json=body).json()["kv_cache_tokens"]
    default = client.post("/api/fit?speculative_tokens=2&speculative_method=eagle3", json=body).json()["kv_cache_tokens"]
    repo = drafts_for(load_catalog(), "llama-3.1-8b")[0].repo
    named = client.post(f"/api/fit?speculative_tokens=2&speculative_method=eagle3&draft_model={repo}", json=body)
    assert named.status_code == 200 and named.json()["kv_cache_tokens"] == default < plain


def test_separate_pools_draft_on_the_decode_instances_only():
    result = CliRunner().invoke(app, ["deploy", "--model", "llama-3.1-8b", "--gpu", "H100", "--gpus", "2",
                                      "--prefill-instances", "1", "--speculative-tokens", "2",
                                      "--speculative-method", "eagle3"])
    assert result.exit_code == 0, result.output
    repo = drafts_for(load_catalog(), "llama-3.1-8b")[0].repo
    lines = [line for line in result.stdout.splitlines() if "vllm serve" in line]
    assert [repo in line for line in lines] == [False, True]  # the prefill instance, then the decode one


def test_a_prefill_instance_derived_from_a_drafting_decode_one_drafts_nothing():
    from inferplan.deploy.pools_plan import prefill_deployment

    d = Deployment(model="llama-3.1-8b", gpu="H100", eagle3_draft="yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", speculative_tokens=2)
    assert prefill_deployment(d).eagle3_draft is None


def test_a_draft_checkpoint_without_a_method_that_drafts_with_one_names_the_flag():
    result = CliRunner().invoke(app, [*L8, "--draft-model", "nvidia/Llama-3.3-70B-Instruct-Eagle3"])
    assert result.exit_code == 2 and "--draft-model" in result.output


@pytest.mark.parametrize("draft_id", [d.id for d in load_catalog().eagle3_drafts])
def test_each_draft_names_the_engines_its_publisher_shows_it_on(draft_id):
    draft = _draft(draft_id)
    assert draft.engines and all(e in load_catalog().engines for e in draft.engines)
    if draft.repo.startswith("nvidia/"):  # a Model Optimizer head: the card lists TensorRT-LLM as its runtime
        assert draft.engines == ("trtllm",)


@pytest.mark.parametrize("engine", ["sglang", "vllm"])
def test_a_draft_on_an_engine_its_publisher_does_not_show_is_refused_naming_the_draft(engine):
    repo = "nvidia/Llama-3.3-70B-Instruct-Eagle3"
    d = Deployment(model="llama-3.3-70b", gpu="H100", gpus=2, engine=engine)
    with pytest.raises(InvalidScenarioError) as exc:
        fit_or_suggest(d, speculative_tokens=2, speculative_method="eagle3", draft_model=repo)
    assert exc.value.field == "draft_model" and "trtllm" in exc.value.allowed
    result = CliRunner().invoke(app, ["deploy", "--model", "gpt-oss-20b", "--gpu", "H100", "--engine", "sglang",
                                      "--speculative-tokens", "2", "--speculative-method", "eagle3"])
    assert result.exit_code != 0 and "--draft-model" in result.output and "vllm" in result.output


def test_an_unknown_engine_on_a_draft_is_a_catalogue_error():
    catalog = load_catalog()
    bad = Eagle3Draft.model_validate({**_draft("eagle3-gpt-oss-20b-nebius").model_dump(), "engines": ("no-such",)})

    class Fake:
        eagle3_drafts, models, sources, engines = (bad,), catalog.models, catalog.sources, catalog.engines

    with pytest.raises(CatalogError, match="no-such"):
        check_eagle3_drafts(Fake())


@pytest.mark.parametrize("engine, draft", [("vllm", None), ("sglang", "someone/gpt-oss-eagle3")])
def test_an_eagle3_draft_under_pipeline_parallelism_is_refused_where_the_engine_refuses_it(engine, draft):
    d = Deployment(model="gpt-oss-20b", gpu="H100", engine=engine, tensor_parallel_size=1, pipeline_parallel_size=2)
    with pytest.raises(InvalidScenarioError) as exc:
        fit_or_suggest(d, speculative_tokens=2, speculative_method="eagle3", draft_model=draft)
    assert exc.value.field == "pipeline_parallel_size" and "at most 1" in exc.value.allowed


def test_eagle3_without_a_draft_named_or_catalogued_is_refused_naming_draft_model():
    d = Deployment(model="qwen2.5-7b", gpu="H100", engine="vllm")
    assert not drafts_for(load_catalog(), "qwen2.5-7b")
    with pytest.raises(InvalidScenarioError) as exc:
        fit_or_suggest(d, speculative_tokens=2, speculative_method="eagle3")
    assert exc.value.field == "draft_model" and "nebius/EAGLE3-gpt-oss-20b" in exc.value.allowed
    result = CliRunner().invoke(app, ["perf", "--model", "qwen2.5-7b", "--gpu", "H100", "--speculative-tokens", "2",
                                      "--speculative-method", "eagle3"])
    assert result.exit_code != 0 and "--draft-model" in result.output


def test_a_draft_states_no_acceptance_measured_on_another_target():
    """The Llama-3.3-70B card's comparison row measures a head on the 70B target, not the 8B draft on its own."""
    draft = _draft("eagle3-llama-3.1-8b-yuhuili")
    assert draft.acceptance is None
    assert "e3-nebius-llama-3.3-70b" not in draft.sources


def test_a_draft_with_its_own_embeddings_says_the_count_is_an_upper_bound():
    draft = _draft("eagle3-llama-3.3-70b-nvidia")
    assert draft.embedding_parameters is not None and draft.embedding_parameters.value < draft.parameters.value * 1e9
    d = Deployment(model="llama-3.3-70b", gpu="H100", gpus=2, engine="trtllm")
    notes = fit_or_suggest(d, speculative_tokens=2, speculative_method="eagle3").assumptions
    assert any(draft.repo in n and "upper bound" in n for n in notes)


def _on_sglang(parameters_billion: float):
    """The catalogue with gpt-oss-20b's draft also on SGLang, at ``parameters_billion``."""
    import dataclasses

    from inferplan.catalog.registry import Registry

    catalog = load_catalog()
    draft = _draft("eagle3-gpt-oss-20b-nebius")
    params = draft.parameters.model_copy(update={"value": parameters_billion * 1e9})
    bigger = draft.model_copy(update={"engines": ("vllm", "sglang"), "parameters": params})
    return dataclasses.replace(catalog, eagle3_drafts=Registry("eagle3 drafts", {bigger.id: bigger}))


def test_sglang_refuses_a_draft_that_does_not_fit_outside_its_fraction():
    """SGLang through 0.5.13 loads the draft's weights and its own pool after its fraction is sized: a 6B-parameter head
    at TP 1 does not fit in what a 0.9 fraction of an H100 leaves beyond the draft reserve."""
    d = Deployment(model="gpt-oss-20b", gpu="H100", engine="sglang", gpu_memory_utilization=0.9, engine_version="0.5.9")
    assert fit_or_suggest(d, _on_sglang(0.4), speculative_tokens=2, speculative_method="eagle3").kv_cache_tokens
    with pytest.raises(InvalidScenarioError) as exc:
        fit_or_suggest(d, _on_sglang(6.0), speculative_tokens=2, speculative_method="eagle3")
    assert exc.value.field == "draft_model" and "outside the memory fraction" in str(exc.value)


ANGELSLIM = {"qwen3-1.7b": "AngelSlim/Qwen3-1.7B_eagle3", "qwen3-4b": "AngelSlim/Qwen3-4B_eagle3",
             "qwen3-8b": "AngelSlim/Qwen3-8B_eagle3", "qwen3-14b": "AngelSlim/Qwen3-14B_eagle3",
             "qwen3-30b-a3b": "AngelSlim/Qwen3-a3B_eagle3", "qwen3-32b": "AngelSlim/Qwen3-32B_eagle3"}


@pytest.mark.parametrize("model, repo", ANGELSLIM.items())
def test_angelslim_qwen3_drafts_load_with_their_configs_shape_and_vllm_acceptance(model, repo):
    """Each AngelSlim Qwen3 draft: one layer over a 32,000-token draft vocabulary, its weights the training
    config's shape (well under a tenth of the target's), measured on vLLM at two draft tokens, run on vLLM only."""
    catalog = load_catalog()
    (draft,) = drafts_for(catalog, model)
    assert draft.repo == repo and draft.engines == ("vllm",) and draft.draft_vocab_size == 32000
    assert draft.decoder_layers == 1 and draft.dtype == "bf16" and draft.embedding_parameters is None
    assert draft.parameters.kind == "derived" and draft.parameters.source.startswith("e3-angelslim-")
    assert 1e8 < draft.parameters.value < 0.1 * resolve_model(catalog, model).total_params
    assert draft.acceptance.draft_tokens == 2 and 1 < draft.acceptance.length.value < 3
    assert draft.acceptance.length.source == "e3-angelslim-benchmarks"


def test_the_qwen3_8b_draft_is_the_default_and_refused_on_trtllm():
    d = Deployment(model="qwen3-8b", gpu="H100", engine="vllm")
    plain = fit_or_suggest(d, speculative_tokens=2, speculative_method="ngram")
    drafted = fit_or_suggest(d, speculative_tokens=2, speculative_method="eagle3")
    assert drafted.kv_cache_tokens < plain.kv_cache_tokens
    with pytest.raises(InvalidScenarioError) as exc:
        fit_or_suggest(d.model_copy(update={"engine": "trtllm"}), speculative_tokens=2, speculative_method="eagle3",
                       draft_model=ANGELSLIM["qwen3-8b"])
    assert exc.value.field == "draft_model" and "vllm" in exc.value.allowed
