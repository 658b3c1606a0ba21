"""A mixture-of-experts model that does not fit on an engine that cannot keep experts in host RAM is
offered the engines that can (llama.cpp ``--n-cpu-moe N``, KTransformers), each with the setting that
fits the GPU, as a ready command checked against the host RAM known."""

from __future__ import annotations

from typer.testing import CliRunner

from inferplan.memory.context_steps import CONTEXT_STEP_TOKENS
from inferplan.inputs.deployment import Deployment
from inferplan.memory.fit import plan_memory
from inferplan.memory.suggest import fit_or_suggest
from inferplan.shells.cli import app

GPT_OSS = dict(model="gpt-oss-120b", gpu="rtx-5090", max_model_len=32768)


def _engine_switches(r):
    return {s.changes["engine"]: s for s in r.suggestions if "engine" in s.changes}


def test_gpt_oss_120b_on_one_5090_with_64_gb_is_offered_llamacpp_n_cpu_moe_that_fits(catalog):
    d = Deployment(**GPT_OSS, host_memory_gb=64)
    r = fit_or_suggest(d, catalog)
    assert not r.fits and any(s.changes.get("cpu_offload_gb") for s in r.suggestions)  # vLLM's own offload stays
    llama = _engine_switches(r)["llamacpp"]
    n = llama.changes["n_cpu_moe"]
    assert "llama.cpp --n-cpu-moe" in llama.summary and "of the 64 GiB of host RAM" in llama.summary
    moved = d.model_copy(update=llama.changes)
    assert plan_memory(moved, catalog).result.fits
    assert not plan_memory(moved.model_copy(update={"n_cpu_moe": n - 1}), catalog).result.fits  # the fewest that fit
    assert "ktransformers" not in _engine_switches(r)  # kt-kernel has no CPU expert method beside MXFP4


def test_a_16_bit_moe_is_offered_ktransformers_as_a_command_that_fits(catalog):
    d = Deployment(model="qwen3-30b-a3b", gpu="rtx-4090", max_model_len=32768, host_memory_gb=128)
    kt = _engine_switches(fit_or_suggest(d, catalog))["ktransformers"]
    assert plan_memory(d.model_copy(update=kt.changes), catalog).result.fits


def test_with_host_ram_unstated_the_hint_states_what_it_needs(catalog):
    llama = _engine_switches(fit_or_suggest(Deployment(**GPT_OSS), catalog))["llamacpp"]
    assert llama.changes["host_memory_gb"] >= 30 and "check the machine has it" in llama.summary


def test_too_little_host_ram_offers_no_expert_offload(catalog):
    assert "llamacpp" not in _engine_switches(fit_or_suggest(Deployment(**GPT_OSS, host_memory_gb=16), catalog))


def test_no_expert_offload_for_a_dense_model_nor_engine_switch_on_an_engine_that_offloads_experts_itself(catalog):
    dense = fit_or_suggest(Deployment(model="llama-3.3-70b", gpu="rtx-4090", max_model_len=8192, host_memory_gb=128), catalog)
    switches = _engine_switches(dense).values()  # a dense model's other engine splits it by layers
    assert not dense.fits and switches and all(s.changes.get("n_gpu_layers") and not s.changes.get("n_cpu_moe")
                                               for s in switches)
    own = fit_or_suggest(Deployment(**GPT_OSS, engine="llamacpp", host_memory_gb=64), catalog)
    assert not own.fits and not _engine_switches(own) and any(s.changes.get("n_cpu_moe") for s in own.suggestions)


def test_fit_prints_the_expert_offload_as_a_ready_command():
    out = CliRunner().invoke(app, ["fit", "--model", "gpt-oss-120b", "--gpu", "RTX 5090", "--host-memory-gb", "64",
                                   "--max-model-len", "32768"], env={"COLUMNS": "200"}).output
    assert "experts in host RAM, run by the CPU: llama.cpp --n-cpu-moe" in out
    line = next(x for x in out.splitlines() if "--engine llamacpp" in x)
    assert line.strip().startswith("inferplan fit --model gpt-oss-120b") and "--n-cpu-moe" in line


def test_an_engine_whose_build_holds_the_model_on_the_gpus_is_offered_without_an_offload(catalog):
    # DeepSeek-R1's FP8 weights overflow 8 H100s on vLLM; llama.cpp's GGUF Q4_K_M build fits them whole,
    # so no --n-cpu-moe is asked for (nor host RAM), while KTransformers still keeps its experts on the host
    d = Deployment(model="deepseek-r1", gpu="h100-sxm", gpus=8, host_memory_gb=2000)
    r = fit_or_suggest(d, catalog)
    assert not r.fits
    llama = _engine_switches(r)["llamacpp"]
    assert "n_cpu_moe" not in llama.changes and "no weights in host RAM" in llama.summary
    moved = plan_memory(d.model_copy(update=llama.changes), catalog).result
    assert moved.fits and moved.host_memory_bytes_used == 0 and moved.quantization == llama.changes["quantization"]
    assert "host RAM" in _engine_switches(r)["ktransformers"].summary.split(":")[0]


def test_a_smaller_build_of_another_engine_that_holds_the_model_whole_is_offered(catalog):
    # Qwen3-30B-A3B's BF16 and FP8 builds overflow one RTX 4090 on vLLM; llama.cpp's 4-bit GGUF holds it whole,
    # which beats keeping experts in host RAM: offered beside --n-cpu-moe, the most bits that fit
    d = Deployment(model="qwen3-30b-a3b", gpu="rtx-4090")
    r = fit_or_suggest(d, catalog)
    whole = [s for s in r.suggestions if s.changes.get("engine") == "llamacpp" and "n_cpu_moe" not in s.changes]
    assert len(whole) == 1 and "fewer bits" in whole[0].summary and "no weights in host RAM" in whole[0].summary
    moved = plan_memory(d.model_copy(update=whole[0].changes), catalog).result
    assert moved.fits and moved.host_memory_bytes_used == 0
    more_bits = [q for q in ("gguf-q8_0", "gguf-q6_k", "gguf-q5_k_m")
                 if catalog.quantization(q).bits_per_weight.value > catalog.quantization(moved.quantization).bits_per_weight.value]
    assert more_bits and not any(plan_memory(d.model_copy(update={**whole[0].changes, "quantization": q}), catalog).result.fits
                                 for q in more_bits)
    assert any("n_cpu_moe" in s.changes for s in r.suggestions)  # the 16-bit offload is still offered


def test_a_smaller_build_that_holds_the_model_whole_only_at_a_shorter_context_is_offered_at_the_longest(catalog):
    # Qwen3-30B-A3B-2507 at its own 262,144 tokens: no smaller llama.cpp build holds it on one RTX 4090, but
    # Q4_K_M does at a shorter context: offered with the longest context it holds, one step more does not fit
    d = Deployment(model="qwen3-30b-a3b-2507", gpu="rtx-4090")
    r = fit_or_suggest(d, catalog)
    shorter = [s for s in r.suggestions if "shorter context" in s.summary]
    assert len(shorter) == 1
    changes = shorter[0].changes
    assert changes["engine"] == "llamacpp" and changes["quantization"] == "gguf-q4_k_m"
    moved = plan_memory(d.model_copy(update=changes), catalog).result
    assert moved.fits and moved.host_memory_bytes_used == 0 and changes["max_model_len"] < r.max_model_len
    longer = plan_memory(d.model_copy(update={**changes, "max_model_len": changes["max_model_len"] + CONTEXT_STEP_TOKENS}), catalog).result
    assert not longer.fits or longer.host_memory_bytes_used
    assert f"{changes['max_model_len']:,} tokens" in shorter[0].summary
