"""TensorRT-LLM refuses a prompt longer than max_num_tokens (8192 unless given) while chunked prefill is off,
its default: a plan that admits longer prompts is launched with enable_chunked_prefill in its options file
(``prompt_budget`` in engine_flags.yaml), in the script, the k8s ConfigMap and /api/deploy alike."""

from __future__ import annotations

import json

import yaml
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from inferplan.deploy import kubernetes_manifest, launch_command
from inferplan.deploy.command import engine_flags
from inferplan.deploy.prompt_budget import chunked_prefill_options
from inferplan.inputs.deployment import Deployment
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
