"""Speculative decoding by the draft_model method: vLLM loads the draft model's weights and gives its attention
layers KV entries in the target's pool, so fit counts both; the method without a draft is refused as deploy and
vLLM refuse it; perf prices the draft's own forward passes."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from inferplan.catalog.loader import load_catalog
from inferplan.errors import InvalidScenarioError
from inferplan.inputs.workload import Workload
from inferplan.memory.resolve import resolve_model
from inferplan.memory.suggest import fit_or_suggest
from inferplan.performance.drafts import with_drafts
from inferplan.shells.cli import app
from inferplan.inputs.deployment import Deployment

QWEN = Deployment(model="qwen3-8b", gpu="h100")
DRAFTED = {"speculative_tokens": 3, "speculative_method": "draft_model"}


def _kv_bytes_per_token(arch) -> float:  # K and V of every layer at BF16
    return len(arch.layer_kinds) * 2 * arch.num_kv_heads * arch.head_dim * 2


def test_the_draft_models_weights_and_kv_per_token_are_counted():
    catalog = load_catalog()
    plain = fit_or_suggest(QWEN, catalog)
    drafted = fit_or_suggest(QWEN, catalog, **DRAFTED, draft_model="Qwen/Qwen3-0.6B")
    small = resolve_model(catalog, "qwen3-0.6b")
    assert drafted.weights_bytes_per_gpu - plain.weights_bytes_per_gpu == pytest.approx(small.checkpoints[0].size_bytes)
    target = resolve_model(catalog, "qwen3-8b").architecture
    assert plain.kv_cache_bytes_per_token == pytest.approx(_kv_bytes_per_token(target))
    assert drafted.kv_cache_bytes_per_token == pytest.approx(_kv_bytes_per_token(target) + _kv_bytes_per_token(small.architecture))
    assert drafted.kv_cache_tokens < 0.6 * plain.kv_cache_tokens
    assert any("draft_model on vllm with Qwen3 0.6B" in a for a in drafted.assumptions)


@pytest.mark.parametrize("call", [lambda c: fit_or_suggest(QWEN, c, **DRAFTED),
                                  lambda c: with_drafts(c, QWEN, Workload(speculative_tokens=3), "draft_model")])
def test_the_method_without_a_draft_is_refused_naming_draft_model(call):
    with pytest.raises(InvalidScenarioError) as e:
        call(load_catalog())
    assert e.value.field == "draft_model" and "config.json" in e.value.allowed


@pytest.mark.parametrize("draft, says", [("no-such-org/no-such-draft", "no model named"),
                                         ("llama-3.1-8b", "vocabulary")])
def test_a_draft_fit_cannot_count_is_refused_naming_draft_model(draft, says):
    with pytest.raises(Exception) as e:
        fit_or_suggest(QWEN, load_catalog(), **DRAFTED, draft_model=draft)
    assert getattr(e.value, "field", None) == "draft_model" and says in str(e.value)


def test_the_cli_refuses_it_naming_the_flag_in_fit_and_perf():
    for command in ("fit", "perf"):
        result = CliRunner().invoke(app, [command, "qwen3-8b", "--gpu", "h100", "--speculative-tokens", "3",
                                          "--speculative-method", "draft_model"])
        assert result.exit_code == 2 and "--draft-model" in result.output, (command, result.output)


def _perf(*extra: str) -> dict:
    result = CliRunner().invoke(app, ["perf", "qwen3-8b", "--gpu", "h100", "--json", *extra])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_perf_prices_the_draft_models_forward_passes():
    spec = ["--speculative-tokens", "3", "--acceptance-rate", "0.7"]
    ngram = _perf(*spec, "--speculative-method", "ngram")
    small = _perf(*spec, "--speculative-method", "draft_model", "--draft-model", "qwen3-0.6b")
    large = _perf(*spec, "--speculative-method", "draft_model", "--draft-model", "qwen3-1.7b")
    assert small["tokens_per_step"] == ngram["tokens_per_step"]  # the same drafts accepted
    assert large["tpot_s"] > small["tpot_s"] > ngram["tpot_s"]  # a larger draft's forward costs more
    notes = " ".join(small["assumptions"])
    assert "a forward of draft model qwen3-0.6b" in notes and "28 decoder layers" in notes



def test_deploy_plans_its_layout_with_the_draft_model_counted():
    from inferplan.deploy.command import Speculative, with_draft

    catalog = load_catalog()
    spec = Speculative(method="draft_model", tokens=3, draft_model="Qwen/Qwen3-0.6B")
    assert with_draft(QWEN, catalog, spec).draft_checkpoint == "Qwen/Qwen3-0.6B"
    eagle = Speculative(method="eagle3", tokens=3, draft_model="AngelSlim/Qwen3-8B_eagle3")
    assert with_draft(QWEN, catalog, eagle).draft_checkpoint is None


def test_a_draft_model_beside_another_draft_is_refused():
    both = QWEN.model_copy(update={"draft_checkpoint": "qwen3-0.6b", "eagle3_draft": "AngelSlim/Qwen3-8B_eagle3"})
    with pytest.raises(InvalidScenarioError) as e:
        fit_or_suggest(both, load_catalog())
    assert e.value.field == "draft_model"
