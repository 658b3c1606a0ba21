"""Offload settings in launch commands: each engine's own flags for weights and KV cache in host RAM
(llama.cpp --n-gpu-layers / --n-cpu-moe, vLLM --cpu-offload-gb and --kv-offloading-size, SGLang HiCache),
parsed back with a parser built from the engine's accepted-flag list in engine_flags.yaml."""

from __future__ import annotations

import argparse

import pytest
import yaml

from inferplan.deploy import kubernetes_manifest, launch_command
from inferplan.deploy.command import engine_flags
from inferplan.errors import UnsupportedSettingError
from inferplan.inputs.deployment import Deployment

LLAMACPP = dict(model="qwen3-30b-a3b", gpu="RTX 4090", engine="llamacpp", quantization="gguf-q4_k_m")
VLLM = dict(model="llama-3.1-8b", gpu="L4")
SGLANG = dict(model="llama-3.1-8b", gpu="L4", engine="sglang")

# deployment -> the flags (and values) its command must carry
CASES = {
    "llamacpp -ngl": (dict(LLAMACPP, n_gpu_layers=30), {"--n-gpu-layers": "30"}),
    "llamacpp --n-cpu-moe": (dict(LLAMACPP, n_cpu_moe=20), {"--n-cpu-moe": "20", "--n-gpu-layers": "999"}),
    "llamacpp both": (dict(LLAMACPP, n_cpu_moe=12, n_gpu_layers=40), {"--n-cpu-moe": "12", "--n-gpu-layers": "40"}),
    "vllm --cpu-offload-gb": (dict(VLLM, cpu_offload_gb=6), {"--cpu-offload-gb": 6.0}),
    "vllm native KV offload": (dict(VLLM, kv_offloading_size=40), {"--kv-offloading-size": 40.0,
                                                                    "--kv-offloading-backend": "native"}),
    "vllm LMCache": (dict(VLLM, kv_offloading_size=64, kv_offloading_backend="lmcache", tensor_parallel_size=2),
                     {"--kv-offloading-size": 64.0, "--kv-offloading-backend": "lmcache"}),
    "vllm weights and KV": (dict(VLLM, cpu_offload_gb=2.5, kv_offloading_size=16),
                            {"--cpu-offload-gb": 2.5, "--kv-offloading-size": 16.0}),
    "sglang --hicache-ratio": (dict(SGLANG, hicache_ratio=2), {"--enable-hierarchical-cache": True, "--hicache-ratio": 2.0}),
    "sglang --hicache-size": (dict(SGLANG, hicache_size=100), {"--enable-hierarchical-cache": True, "--hicache-size": 100.0}),
    "sglang both": (dict(SGLANG, hicache_ratio=3, hicache_size=80),
                    {"--enable-hierarchical-cache": True, "--hicache-ratio": 3.0, "--hicache-size": 80.0}),
}


def parse_with_accepted_flags(catalog, engine: str, argv: tuple[str, ...]) -> dict[str, object]:
    """The engine's own parse of an argv, as far as its accepted-flag list (data) tells: every accepted
    flag an option with at most one value, the model an optional positional; an unknown flag is an error."""
    flags = engine_flags(catalog, engine)
    parser = argparse.ArgumentParser(allow_abbrev=False, exit_on_error=False, add_help=False)
    parser.add_argument("positional", nargs="?")
    for flag in sorted(flags.accepts()):
        parser.add_argument(flag, dest=flag, nargs="?", const=True, default=None)
    parsed, unknown = parser.parse_known_args(list(argv[len(flags.launcher):]))
    assert unknown == [], f"{engine} does not accept {unknown}"
    return {k: v for k, v in vars(parsed).items() if v is not None and k != "positional"}


@pytest.mark.parametrize("case", CASES)
def test_an_offload_deployments_command_parses_with_the_engines_flags_and_carries_its_values(catalog, case):
    fields, expected = CASES[case]
    d = Deployment(**fields)
    command = launch_command(d, catalog)
    parsed = parse_with_accepted_flags(catalog, d.engine, command.argv)
    for flag, value in expected.items():
        got = parsed[flag]
        assert (float(got) if isinstance(value, float) else got) == value, flag
    assert command.argv.count("--enable-hierarchical-cache") <= 1


def test_a_deployment_without_offload_emits_no_offload_flag(catalog):
    offload = {"--n-gpu-layers", "--n-cpu-moe", "--cpu-offload-gb", "--kv-offloading-size", "--kv-offloading-backend",
               "--enable-hierarchical-cache", "--hicache-ratio", "--hicache-size"}
    for fields in (VLLM, SGLANG):
        assert not offload & set(launch_command(Deployment(**fields), catalog).argv)
    argv = launch_command(Deployment(**LLAMACPP), catalog).argv  # every layer on the GPU, as a number
    assert not offload - {"--n-gpu-layers"} & set(argv) and argv[argv.index("--n-gpu-layers") + 1] == "999"


def test_a_llamacpp_launch_that_fills_the_gpu_states_every_layer_so_fit_moves_none(catalog):
    """The H200 Qwen3-235B Q4_K_M plan leaves ~218 MiB free, under --fit's 1024 MiB margin: left at its
    default (auto), --fit would move layers to host RAM, so the launch states the layer count, as a
    number every llama.cpp release parses (engine_flags.yaml n_gpu_layers)."""
    d = Deployment(model="qwen3-235b-a22b-2507", gpu="h200-sxm", engine="llamacpp", quantization="gguf-q4_k_m",
                   max_model_len=2500, max_num_seqs=12)
    command = launch_command(d, catalog)
    parsed = parse_with_accepted_flags(catalog, "llamacpp", command.argv)
    assert int(parsed["--n-gpu-layers"]) >= 999 and "--fit" not in parsed
    rule = engine_flags(catalog, "llamacpp").settings["n_gpu_layers"]
    assert rule.default == "999" and rule.default_with is None


def test_the_parser_refuses_a_flag_outside_the_list(catalog):
    with pytest.raises(AssertionError, match="--kv-offload-gb"):
        parse_with_accepted_flags(catalog, "vllm", ("vllm", "serve", "m", "--kv-offload-gb", "4"))


def test_flags_newer_than_the_recorded_release_name_the_release_they_need(catalog):
    flags = engine_flags(catalog, "vllm")
    command = launch_command(Deployment(**VLLM, kv_offloading_size=40), catalog)
    later = flags.later("--kv-offloading-size")
    assert later is not None and command.flags_checked_against == later.version != flags.version
    assert any(later.version in note for note in command.notes)
    weights_only = launch_command(Deployment(**VLLM, cpu_offload_gb=4), catalog)
    assert weights_only.flags_checked_against == flags.version and flags.later("--cpu-offload-gb") is None


@pytest.mark.parametrize("case", ["llamacpp --n-cpu-moe", "vllm --cpu-offload-gb", "vllm LMCache", "sglang both"])
def test_the_manifest_runs_the_offload_command_in_a_release_that_takes_it(catalog, case):
    fields, _ = CASES[case]
    d = Deployment(**fields)
    docs = list(yaml.safe_load_all(kubernetes_manifest(d, catalog)))
    assert [doc["kind"] for doc in docs] == ["Deployment", "Service"]
    container = docs[0]["spec"]["template"]["spec"]["containers"][0]
    flags = engine_flags(catalog, d.engine)
    command = launch_command(d, catalog)
    assert container["args"] == list(command.argv[len(flags.launcher):])
    later = next((flags.later(a) for a in command.argv if flags.later(a)), None)
    pinned = flags.release_images.get("nvidia")  # the planned release's image where one is recorded per release
    assert container["image"] == (pinned.replace("{release}", command.engine_version) if pinned
                                  else (later.images if later else flags.images)["nvidia"])


@pytest.mark.parametrize("fields, field", [
    (dict(VLLM, kv_offloading_backend="lmcache"), "kv_offloading_backend"),  # a backend with no buffer size
    (dict(SGLANG, kv_offloading_size=8), "kv_offloading_size"),  # SGLang's host tier is HiCache
    (dict(VLLM, n_cpu_moe=4), "n_cpu_moe"),  # a llama.cpp setting
    (dict(LLAMACPP, cpu_offload_gb=4), "cpu_offload_gb"),
])
def test_an_offload_setting_the_engine_does_not_take_is_refused_naming_it(catalog, fields, field):
    with pytest.raises(UnsupportedSettingError) as err:
        launch_command(Deployment(**fields), catalog)
    assert err.value.field == field


@pytest.mark.parametrize("gpus, layers, host_gb", ((1, 23, 62), (2, 45, 40)))
def test_a_llamacpp_offload_launch_states_the_planned_context_so_fit_keeps_it(catalog, gpus, layers, host_gb):
    """Left out, the context is automatic and --fit shortens it to keep its margin free; stated, it stays."""
    from inferplan.memory.fit_held import planned_length
    from inferplan.memory.resolve import resolve_model

    d = Deployment(model="llama-3.3-70b", gpu="rtx-3090", gpus=gpus, quantization="q4_k_m", engine="llamacpp",
                   n_gpu_layers=layers, host_memory_gb=host_gb)
    argv = launch_command(d, catalog).argv
    context = planned_length(d, resolve_model(catalog, d.model), None)
    assert int(argv[argv.index("--ctx-size") + 1]) == context * int(argv[argv.index("--parallel") + 1]) == 131072
