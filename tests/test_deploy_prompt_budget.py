"""TensorRT-LLM refuses a prompt longer than max_num_tokens (8192 unless given) while chunked prefill is off,
its default: a plan that admits longer prompts is launched with enable_chunked_prefill in its options file
(``prompt_budget`` in engine_flags.yaml), in the script, the k8s ConfigMap and /api/deploy alike."""

from __future__ import annotations

import json

import pytest
import yaml
from fastapi.testclient import TestClient
from pydantic import ValidationError
from typer.testing import CliRunner

from inferplan.deploy import kubernetes_manifest, launch_command
from inferplan.catalog.flag_parts_schema import PromptBudget
from inferplan.deploy.command import Speculative, engine_flags
from inferplan.deploy.prompt_budget import chunked_prefill, chunked_prefill_options
from inferplan.errors import UnsupportedSettingError
from inferplan.inputs.deployment import Deployment
from inferplan.memory.fit import plan_memory
from inferplan.shells.api import create_app
from inferplan.shells.cli import app

TRT = dict(model="llama-3.3-70b", gpu="h100-sxm", tensor_parallel_size=8, quantization="fp8", engine="trtllm")


def _options(command) -> dict:
    return yaml.safe_load(command.files[0].text) if command.files else {}


def test_a_16k_context_launches_with_chunked_prefill(catalog):
    command = launch_command(Deployment(**TRT, max_model_len=16_500), catalog)
    assert _options(command) == {"enable_chunked_prefill": True}
    assert command.argv[-2:] == ("--extra_llm_api_options", "extra_llm_api_options.yaml")
    assert "enable_chunked_prefill: true" in command.script


def test_a_4k_context_needs_no_options_file(catalog):
    command = launch_command(Deployment(**TRT, max_model_len=4096), catalog)
    assert command.files == () and "--extra_llm_api_options" not in command.argv


def test_a_stated_budget_above_the_longest_prompt_needs_no_chunking(catalog):
    d = Deployment(**TRT, max_model_len=16_500, max_num_batched_tokens=16_500)
    command = launch_command(d, catalog)
    assert "--max_num_tokens" in command.argv and command.files == ()


def test_without_a_max_model_len_the_models_context_is_the_longest_prompt(catalog):
    assert _options(launch_command(Deployment(**TRT), catalog)) == {"enable_chunked_prefill": True}


def test_the_entry_joins_the_other_options(catalog):
    command = launch_command(Deployment(**TRT, max_model_len=32_768, kv_cache_dtype="fp8"), catalog)
    assert _options(command) == {"kv_cache_config": {"dtype": "fp8"}, "enable_chunked_prefill": True}


def test_the_threshold_and_the_entry_are_read_from_the_flags_record(catalog):
    flags = engine_flags(catalog, "trtllm")
    rule = flags.prompt_budget
    assert rule is not None and rule.default_tokens == 8192
    d = Deployment(**TRT, max_model_len=16_500)
    assert chunked_prefill_options(d, catalog, flags) == {rule.option.key: rule.option.value}
    raised = flags.model_copy(update={"prompt_budget": rule.model_copy(update={"default_tokens": 32_768})})
    assert chunked_prefill_options(d, catalog, raised) == {}
    assert chunked_prefill_options(d, catalog, flags.model_copy(update={"prompt_budget": None})) == {}


def test_the_default_is_the_budget_the_speed_model_chunks_prompts_by(catalog):
    engine = catalog.engine("trtllm")
    assert engine.max_num_batched_tokens.value == engine_flags(catalog, "trtllm").prompt_budget.default_tokens


def test_the_k8s_configmap_and_the_api_carry_it(catalog):
    d = Deployment(**TRT, max_model_len=16_500)
    docs = list(yaml.safe_load_all(kubernetes_manifest(d, catalog)))
    config_map = next(doc for doc in docs if doc["kind"] == "ConfigMap")
    assert yaml.safe_load(config_map["data"]["extra_llm_api_options.yaml"]) == {"enable_chunked_prefill": True}
    r = TestClient(create_app()).post("/api/deploy", json={"deployment": {**TRT, "max_model_len": 16_500}})
    assert r.status_code == 200, r.text
    assert yaml.safe_load(r.json()["command"]["files"][0]["text"]) == {"enable_chunked_prefill": True}


def test_a_search_pick_for_16k_prompts_deploys_with_chunked_prefill():
    r = CliRunner().invoke(app, ["search", "--model", "llama-3.3-70b", "--request-rate", "1", "--input-len", "16000",
                                 "--output-len", "500", "--ttft-p95", "5", "--systems", "hgx-h100", "--engines", "trtllm",
                                 "--quantizations", "fp8", "--no-disaggregated", "--top", "1", "--json"])
    assert r.exit_code == 0, r.output
    pick = json.loads(r.stdout)["results"][0]
    assert pick["max_model_len"] > 8192 and "enable_chunked_prefill: true" in pick["deploy"]


SWA = dict(model="gpt-oss-120b", gpu="b200", engine="trtllm")  # sliding-window layers (hf_configs: sliding_window 128)


def test_the_feature_matrix_exclusions_are_sourced_data(catalog):
    rule = engine_flags(catalog, "trtllm").prompt_budget
    assert rule.unsupported_with == ("sliding_window",) and rule.untested_with == ("mtp",)
    assert rule.combination_source == "flags-trtllm-feature-matrix"
    with pytest.raises(ValidationError, match="combination_source"):
        PromptBudget(**{**rule.model_dump(), "combination_source": None})


def test_a_sliding_window_model_past_a_stated_budget_is_refused_naming_max_model_len(catalog):
    with pytest.raises(UnsupportedSettingError) as refused:
        launch_command(Deployment(**SWA, max_model_len=20_000, max_num_batched_tokens=8192), catalog)
    assert refused.value.field == "max_model_len"
    assert "at most 8,192 tokens" in refused.value.allowed and "max_num_batched_tokens" in refused.value.allowed
    assert "sliding-window" in str(refused.value)


def test_a_sliding_window_model_within_a_stated_budget_launches_and_plans_that_budget(catalog):
    assert launch_command(Deployment(**SWA, max_model_len=8192), catalog).files == ()
    d = Deployment(**SWA, max_model_len=20_000, max_num_batched_tokens=20_000)
    command = launch_command(d, catalog)
    assert command.files == () and command.argv[command.argv.index("--max_num_tokens") + 1] == "20000"
    assert plan_memory(d, catalog).settings.max_num_batched_tokens == 20_000  # fit sizes the step by the launched budget


def test_a_sliding_window_model_past_the_default_launches_with_a_step_of_its_longest_prompt(catalog):
    """No budget stated: the launch states --max_num_tokens of the longest prompt (its max_model_len, else the
    model's context), which fit plans too, instead of chunked prefill the engine does not run with the model."""
    for d, longest in ((Deployment(**SWA, max_model_len=20_000), 20_000), (Deployment(**SWA), 131_072)):
        command = launch_command(d, catalog)
        assert command.files == () and command.argv[command.argv.index("--max_num_tokens") + 1] == str(longest)
        assert any("--max_num_tokens" in n and "sliding-window" in n for n in command.notes)
        assert plan_memory(d, catalog).settings.max_num_batched_tokens == longest


def test_the_exclusion_is_what_decides(catalog):
    """Unwired: with the exclusion dropped, the sliding-window model chunks again."""
    flags = engine_flags(catalog, "trtllm")
    d = Deployment(**SWA, max_model_len=16_500)
    with pytest.raises(UnsupportedSettingError):
        chunked_prefill_options(d, catalog, flags)
    opened = flags.model_copy(update={"prompt_budget": flags.prompt_budget.model_copy(update={"unsupported_with": ()})})
    assert chunked_prefill_options(d, catalog, opened) == {"enable_chunked_prefill": True}


def test_mtp_with_chunked_prefill_says_the_combination_is_untested(catalog):
    d = Deployment(model="deepseek-r1", quantization="nvfp4", system="hgx-b200", engine="trtllm")
    command = launch_command(d, catalog, speculative=Speculative(method="mtp", tokens=3))
    assert _options(command)["enable_chunked_prefill"] is True
    assert any("untested" in n and "MTP" in n for n in command.notes)
    flags = engine_flags(catalog, "trtllm")
    quiet = flags.model_copy(update={"prompt_budget": flags.prompt_budget.model_copy(update={"untested_with": ()})})
    assert chunked_prefill(d, catalog, quiet, "mtp")[1] == ()
    assert not any("untested" in n for n in launch_command(d, catalog).notes)  # without MTP drafts: no note
