"""The library's errors name the inputs as the domain spells them (``kv_bytes_per_token``, ``model``) and list
them in ``names``, so each shell says them its own way: a flag on the command line, a JSON field in the API."""

from __future__ import annotations

import pytest

from inferplan.economics.plan import plan
from inferplan.economics.scenario import Scenario
from inferplan.errors import InvalidScenarioError
from inferplan.shells.cli_common import flags_in, named_in


def test_an_unpublished_architecture_names_the_fields_that_size_its_cache(sketch_catalog):
    s = Scenario.model_validate(dict(name="t", model="sketch-unpublished", platform={"system": "hgx-b300"},
                                     workload={"preset": "coding-developer-median"}, target_users=100))
    with pytest.raises(InvalidScenarioError) as exc:
        plan(s, sketch_catalog)
    message = str(exc.value)
    assert "--" not in message and "as kv_bytes_per_token" in message and "as model" in message
    flags = named_in({"model": "--model", "kv_bytes_per_token": "--kv-bytes-per-token"}, exc.value.names)
    said = flags_in(message, flags)
    assert "config.json as --model" in said and "as --kv-bytes-per-token" in said


def _refusal(fn, *args, **kwargs) -> InvalidScenarioError:
    with pytest.raises(InvalidScenarioError) as exc:
        fn(*args, **kwargs)
    assert "--" not in str(exc.value) + (exc.value.allowed or "")  # the API's user sees the domain's fields
    return exc.value


def _cli_says(exc: InvalidScenarioError, flags: dict[str, str]) -> str:
    said = named_in(flags, exc.names)
    return flags_in(str(exc), said) + " (allowed: " + flags_in(exc.allowed or "", said) + ")"


def _fit(**kw):
    from inferplan.catalog.loader import load_catalog
    from inferplan.inputs.deployment import Deployment
    from inferplan.memory.fit import fit

    return fit(Deployment(**kw), load_catalog())


def test_engine_setting_refusals_name_the_fields():
    from inferplan.shells.cli_common import FLAGS

    eager = _refusal(_fit, model="llama-3.1-8b", gpu="h100-sxm", engine="sglang", enforce_eager=True)
    assert "has no --enforce-eager setting" in _cli_says(eager, FLAGS)
    experts = _refusal(_fit, model="deepseek-v3", gpu="h200", gpus=24, engine="vllm", tensor_parallel_size=8,
                       data_parallel_size=3)
    assert experts.allowed.endswith("or enable_expert_parallel")
    assert _cli_says(experts, FLAGS).endswith("or --enable-expert-parallel)")
    chunk = _refusal(_fit, model="llama-3.1-8b", gpu="h100-sxm", engine="vllm", ubatch_size=512)
    assert chunk.names == ("ubatch_size", "max_num_batched_tokens")
    assert "batch: --ubatch-size is llama.cpp's n_ubatch (allowed: leave it out, or --max-num-batched-tokens" in \
        _cli_says(chunk, FLAGS)


def test_extensible_kv_cache_refusals_name_the_switch_and_say_off_in_words():
    from inferplan.shells.cli_common import FLAGS

    for kw in (dict(engine="sglang"), dict(engine="vllm", gpu="M4 Max", model="llama-3.1-8b"),
               dict(engine="vllm", kv_offloading_size=64, kv_offloading_backend="lmcache", host_memory_gb=512)):
        refused = _refusal(_fit, **{"model": "llama-3.3-70b", "gpu": "mi300x", "max_model_len": 16384, **kw},
                           enable_extensible_kv_cache=True)
        assert "enable_extensible_kv_cache" in str(refused) and "--enable-extensible-kv-cache" in _cli_says(refused, FLAGS)
    assert refused.allowed == "leave it out, turn it off, or leave kv_offloading_backend out"


def test_a_hybrid_draft_without_draft_tokens_names_the_field():
    from inferplan.shells.cli_common import FLAGS

    refused = _refusal(_fit, model="qwen3.5-397b-a17b", accelerator="h100-sxm", engine="sglang", tensor_parallel_size=8,
                       engine_version="0.5.23", mtp_draft=True)
    assert refused.allowed == "state speculative_tokens N (the draft tokens)"
    assert _cli_says(refused, FLAGS).endswith("(allowed: state --speculative-tokens N (the draft tokens))")


@pytest.mark.parametrize("ep", [False, True])
def test_a_reach_past_the_links_names_the_parallel_fields(ep):
    import dataclasses

    from inferplan.catalog.loader import load_catalog
    from inferplan.inputs.deployment import Deployment
    from inferplan.memory.fit import plan_memory
    from inferplan.performance.network import network_notes
    from inferplan.performance.rates import rates_for
    from inferplan.performance.work import model_work
    from inferplan.shells.cli_common import FLAGS

    catalog = load_catalog()
    mp = plan_memory(Deployment(model="qwen3-30b-a3b", gpu="h100-sxm", gpus=16, engine="vllm", tensor_parallel_size=8,
                                data_parallel_size=2, enable_expert_parallel=ep), catalog)
    rates = rates_for(catalog, mp.accelerator, mp.gpu_format, mp.result.engine, None, mp.hardware, mp.kv_dtype.id)
    unknown = dataclasses.replace(mp, hardware=dataclasses.replace(mp.hardware, scale_out=None))
    refused = _refusal(network_notes, unknown, model_work(mp, catalog), dataclasses.replace(rates, scale_out_bytes_per_s=0.0))
    said = _cli_says(refused, FLAGS)
    assert "(then --pipeline-parallel-size across nodes)" in said
    assert ("with --enable-expert-parallel" in said) == ep


def test_a_files_split_refusal_names_the_layout_fields(catalog):
    from pathlib import Path

    from inferplan.measurements.records import RunProvenance, read_runs
    from inferplan.shells.cli_measurements import FLAGS

    text = (Path(__file__).parent / "data" / "measurements" / "llama_bench.json").read_text()
    two = RunProvenance(model="llama-3.1-8b", gpu="rtx-4090", gpus=2)
    for split, said in (("none", "(allowed: --gpus 1 (and no tensor"),
                        ("row", "(allowed: state the split it ran with (--tensor-parallel-size, --pipeline-parallel-size))")):
        file = (f"lb_{split}.json", text.replace('"split_mode": "layer"', f'"split_mode": "{split}"').encode())
        refused = _refusal(read_runs, catalog, [file], two)
        assert said in _cli_says(refused, FLAGS) and f"split_mode is {split}" in _cli_says(refused, FLAGS)
