"""A model TensorRT-LLM does not chunk (sliding-window layers) is planned with one step as long as its longest
prompt where no budget is stated: fit charges that step's activations, perf prefills in it, the launch states
--max_num_tokens, and a search pick past the 8,192-token default launches instead of showing no command."""

from __future__ import annotations

import dataclasses
import json

import pytest
from typer.testing import CliRunner

from inferplan.deploy.command import engine_flags, launch_command
from inferplan.errors import UnsupportedSettingError
from inferplan.inputs.deployment import Deployment
from inferplan.inputs.workload import Workload
from inferplan.memory.fit import plan_memory
from inferplan.memory.step_budget import planned_step_budget
from inferplan.memory.suggest import fit_or_suggest
from inferplan.memory.resolve import resolve_model
from inferplan.performance.serving import estimate
from inferplan.shells.cli import app

SWA = dict(model="gpt-oss-120b", gpu="b200", engine="trtllm")  # sliding-window layers (hf_configs: sliding_window 128)
LONG = 20_000


def _chunking(catalog):
    """The catalogue with TensorRT-LLM's feature matrix allowing chunked prefill with sliding windows: a stated
    8,192-token step then runs the longest prompt in chunks (for a contrast; the engine does not)."""
    flags = engine_flags(catalog, "trtllm")
    opened = flags.model_copy(update={"prompt_budget": flags.prompt_budget.model_copy(update={"unsupported_with": ()})})
    records = {k: (opened if v is flags else v) for k, v in catalog.engine_flags.records.items()}
    return dataclasses.replace(catalog, engine_flags=dataclasses.replace(catalog.engine_flags, records=records))


def test_fit_charges_the_activations_of_a_step_as_long_as_the_longest_prompt(catalog):
    planned = plan_memory(Deployment(**SWA, max_model_len=LONG), catalog)
    stated = plan_memory(Deployment(**SWA, max_model_len=LONG, max_num_batched_tokens=LONG), catalog)
    default = plan_memory(Deployment(**SWA, max_model_len=LONG, max_num_batched_tokens=8192), _chunking(catalog))
    assert planned.settings.max_num_batched_tokens == LONG
    assert planned.result.activation_bytes_per_gpu == stated.result.activation_bytes_per_gpu
    assert planned.result.activation_bytes_per_gpu > default.result.activation_bytes_per_gpu
    assert planned.result.kv_cache_bytes_per_gpu < default.result.kv_cache_bytes_per_gpu
    assert any("--max_num_tokens" in a and "sliding-window" in a for a in planned.result.assumptions)


def test_perf_prefills_the_longest_prompt_in_that_step(catalog):
    w = Workload(input_len=LONG - 500, output_len=200, concurrency=1)
    planned = estimate(Deployment(**SWA, max_model_len=LONG), w, catalog, use_profiles=False)
    stated = estimate(Deployment(**SWA, max_model_len=LONG, max_num_batched_tokens=LONG), w, catalog, use_profiles=False)
    chunked = estimate(Deployment(**SWA, max_model_len=LONG, max_num_batched_tokens=8192), w, _chunking(catalog),
                       use_profiles=False)
    assert planned.prefill_s == stated.prefill_s != chunked.prefill_s


def test_a_model_the_engine_chunks_keeps_the_default_step(catalog):
    d = Deployment(model="llama-3.3-70b", gpu="h100-sxm", tensor_parallel_size=8, quantization="fp8", engine="trtllm",
                   max_model_len=LONG)
    assert plan_memory(d, catalog).settings.max_num_batched_tokens == 8192
    assert "--max_num_tokens" not in launch_command(d, catalog).argv


def test_the_feature_matrix_entry_is_what_decides(catalog):
    flags = engine_flags(catalog, "trtllm")
    d, spec = Deployment(**SWA, max_model_len=LONG), resolve_model(catalog, "gpt-oss-120b")
    assert planned_step_budget(d, spec, flags)[0] == LONG
    opened = flags.model_copy(update={"prompt_budget": flags.prompt_budget.model_copy(update={"unsupported_with": ()})})
    assert planned_step_budget(d, spec, opened) == (None, None)
    assert planned_step_budget(Deployment(**SWA, max_model_len=8192), spec, flags) == (None, None)


def test_a_search_pick_past_the_default_budget_launches_with_max_num_tokens():
    r = CliRunner().invoke(app, ["search", "--model", "gpt-oss-120b", "--engines", "trtllm", "--request-rate", "1",
                                 "--input-len", "12000", "--output-len", "500", "--accelerators", "b200",
                                 "--no-disaggregated", "--top", "1", "--json"])
    assert r.exit_code == 0, r.output
    pick = json.loads(r.stdout)["results"][0]
    assert pick["max_model_len"] == 12_500
    assert "--max_num_tokens 12500" in pick["deploy"] and "enable_chunked_prefill" not in pick["deploy"]


def test_a_stated_step_shorter_than_the_longest_prompt_is_refused_by_fit_perf_and_deploy_alike(catalog):
    """One check (memory.step_budget.needs_chunking): fit does not say "fits" where deploy refuses the launch."""
    d = Deployment(model="gemma-3-27b", gpu="h100-sxm", engine="trtllm", max_num_batched_tokens=8192)
    w = Workload(input_len=1000, output_len=200, concurrency=1)
    said = set()
    for plan in (lambda: fit_or_suggest(d, catalog), lambda: launch_command(d, catalog),
                 lambda: estimate(d.model_copy(update={"max_model_len": 131_072}), w, catalog, use_profiles=False)):
        with pytest.raises(UnsupportedSettingError) as refused:
            plan()
        assert refused.value.field == "max_model_len" and "131,072-token prompts" in str(refused.value)
        said.add(str(refused.value))
    assert len(said) == 1
    assert fit_or_suggest(d.model_copy(update={"max_model_len": 8192}), catalog).fits  # a context the step holds
    assert fit_or_suggest(d, _chunking(catalog)).fits  # the feature matrix entry is what refuses it


def test_a_logged_start_with_such_a_step_is_still_planned_for_its_memory(catalog):
    """trtllm-serve starts gpt-oss-120b at its 131,072-token context with max_num_tokens 8192 (memory point
    c02-gptoss-120b-gb10-trtllm-110rc3) and refuses the longer prompts when they come: the memory plan of that
    start is made, only the answers that serve prompts refuse it."""
    d = Deployment(model="gpt-oss-120b", gpu="gb10", engine="trtllm", max_num_batched_tokens=8192)
    assert plan_memory(d, catalog).result.max_model_len == 131_072
    with pytest.raises(UnsupportedSettingError):
        fit_or_suggest(d, catalog)


def test_the_cli_fit_and_deploy_print_the_same_refusal():
    argv = ["--model", "gemma-3-27b", "--gpu", "H100", "--engine", "trtllm", "--max-num-batched-tokens", "8192"]
    fit_run, deploy_run = (CliRunner().invoke(app, [command, *argv]) for command in ("fit", "deploy"))
    assert fit_run.exit_code == deploy_run.exit_code != 0
    assert "fits" not in fit_run.output and "--max-model-len" in fit_run.output
    assert " ".join(fit_run.output.split()) == " ".join(deploy_run.output.split())


def test_a_trtllm_step_is_charged_whole_on_every_tensor_parallel_rank(catalog):
    # TensorRT-LLM profiles the whole max_num_tokens step on each rank, whose hidden states are not split by TP
    # (mr-trtllm-util-estimate-v1x, mr-trtllm-linear-tp-modes): the workspace does not shrink with TP
    one = plan_memory(Deployment(**SWA, max_model_len=LONG, tensor_parallel_size=1), catalog)
    two = plan_memory(Deployment(**SWA, max_model_len=LONG, tensor_parallel_size=2), catalog)
    hidden = resolve_model(catalog, SWA["model"]).architecture.hidden_size
    assert two.result.activation_bytes_per_gpu == one.result.activation_bytes_per_gpu == 16 * LONG * hidden


def test_deepseek_v4_chunks_on_trtllm_as_its_own_feature_matrix_row_says(catalog):
    # supported-models.md: DeepseekV4ForCausalLM, Chunked Prefill Yes (its window is CSA/HCA's 128 tokens, not
    # a plain sliding-window model): the default step, and the launch turns chunked prefill on
    d = Deployment(model="deepseek-v4-flash", gpu="b200", gpus=8, engine="trtllm")
    assert plan_memory(d, catalog).settings.max_num_batched_tokens == 8192
    assert "--max_num_tokens" not in launch_command(d, catalog).argv
    flags, spec = engine_flags(catalog, "trtllm"), resolve_model(catalog, "deepseek-v4-flash")
    assert planned_step_budget(d, spec, flags) == (None, None)
    rowless = flags.model_copy(update={"prompt_budget": flags.prompt_budget.model_copy(update={"chunked_architectures": ()})})
    assert planned_step_budget(d, spec, rowless)[0] == spec.context_tokens  # the generic sliding-window row otherwise
