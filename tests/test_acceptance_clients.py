"""Every load-test client of an acceptance pack talks to the server its launch command starts: it sends
the model name that server answers to, loads a tokenizer that exists, speaks the engine's API on its
port, and only clients that can talk to that engine are written."""

from __future__ import annotations

import pytest

from inferplan.deploy import launch_command
from inferplan.inputs.deployment import Deployment
from inferplan.measurements.acceptance import acceptance_pack, clients, served_name

FP8_70B = dict(model="llama-3.3-70b", gpu="h100", tensor_parallel_size=2, quantization="fp8")


def _flag(argv: tuple[str, ...], flag: str) -> str:
    return argv[argv.index(flag) + 1]


MODEL_FLAG = {"vllm": "--model", "sglang": "--model", "genai-perf": "-m", "guidellm": "--model"}
TOKENIZER_FLAG = {"vllm": "--tokenizer", "sglang": "--tokenizer", "genai-perf": "--tokenizer", "guidellm": "--processor"}


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_an_fp8_checkpoints_clients_name_the_served_repo_its_tokenizer_and_the_engines_backend(catalog, engine):
    pack = acceptance_pack(Deployment(**FP8_70B, engine=engine), "chat-seat", catalog)
    checkpoint = "RedHatAI/Llama-3.3-70B-Instruct-FP8-dynamic"
    assert checkpoint in pack.launch.argv
    port = _flag(pack.launch.argv, "--port")
    assert {b.client for b in pack.benchmarks} == {"vllm", "sglang", "genai-perf", "guidellm"}  # no llama-bench
    for b in pack.benchmarks:
        assert _flag(b.argv, MODEL_FLAG[b.client]) == checkpoint, b.text
        assert _flag(b.argv, TOKENIZER_FLAG[b.client]) == checkpoint, b.text
        assert port in b.text
    sglang = next(b for b in pack.benchmarks if b.client == "sglang")
    assert _flag(sglang.argv, "--backend") == engine  # vLLM serves no /generate: its backend is vllm


def test_a_gguf_pack_benchmarks_with_llama_bench_and_the_models_own_tokenizer(catalog):
    d = Deployment(model="qwen3-30b-a3b", gpu="rtx-4090", engine="llamacpp", quantization="q4_k_m")
    pack = acceptance_pack(d, "chat-seat", catalog)
    assert {b.client for b in pack.benchmarks} == {"vllm", "llama-bench", "genai-perf", "guidellm"}  # no SGLang backend
    vllm = next(b for b in pack.benchmarks if b.client == "vllm")
    assert _flag(vllm.argv, "--tokenizer") == "Qwen/Qwen3-30B-A3B"  # a GGUF file holds no tokenizer a client loads


def test_trtllm_and_mlx_get_only_the_openai_api_clients(catalog):
    for d in (Deployment(model="llama-3.1-8b", gpu="h100", engine="trtllm"),
              Deployment(model="qwen3-8b", gpu="apple-m3-ultra", engine="mlx")):
        pack = acceptance_pack(d, "chat-seat", catalog)
        assert {b.client for b in pack.benchmarks} == {"vllm", "genai-perf", "guidellm"}, d.engine


def test_a_served_model_name_in_the_launch_is_the_name_every_client_sends(catalog):
    started = launch_command(Deployment(**FP8_70B), catalog)
    assert served_name(started, clients()) == "RedHatAI/Llama-3.3-70B-Instruct-FP8-dynamic"
    renamed = started.model_copy(update={"argv": (*started.argv, "--served-model-name", "llama-70b")})
    assert served_name(renamed, clients()) == "llama-70b"


def test_llama_bench_loads_the_file_the_launch_fetches(catalog):
    pack = acceptance_pack(Deployment(model="gpt-oss-120b", gpu="h100", engine="llamacpp"), "chat-seat", catalog)
    bench = next(b for b in pack.benchmarks if b.client == "llama-bench")
    assert "gpt-oss-120b-mxfp4-00001-of-00003.gguf" in bench.argv[bench.argv.index("-m") + 1]
