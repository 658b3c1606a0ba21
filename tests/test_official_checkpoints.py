"""Launch commands serve the publisher's own build where the catalogue names one, and a build meant for
one engine (``Checkpoint.engines``) is that engine's choice and no other's: TensorRT-LLM loads ModelOpt's
per-tensor FP8, not the row-wise FP8 of a compressed-tensors build (NVIDIA/TensorRT-LLM#3554)."""

from __future__ import annotations

import pytest

from inferplan.deploy import launch_command
from inferplan.inputs.deployment import Deployment


@pytest.mark.parametrize("deployment, served", [
    (dict(model="glm-4.5-air", gpu="l40s", gpus=4, quantization="fp8", max_model_len=32768), "zai-org/GLM-4.5-Air-FP8"),
    (dict(model="qwen3-32b", gpu="rtx-4090", gpus=2, quantization="awq"), "Qwen/Qwen3-32B-AWQ"),
    (dict(model="qwen3-coder-480b-a35b", gpu="apple-m3-ultra", engine="mlx", quantization="mlx-4bit",
          max_model_len=32768), "mlx-community/Qwen3-Coder-480B-A35B-Instruct-4bit"),
    (dict(model="llama-3.3-70b", gpu="h100", gpus=2, quantization="fp8", engine="trtllm"), "nvidia/Llama-3.3-70B-Instruct-FP8"),
    (dict(model="llama-3.3-70b", gpu="h100", gpus=2, quantization="fp8", engine="vllm"),
     "RedHatAI/Llama-3.3-70B-Instruct-FP8-dynamic"),
    (dict(model="llama-3.3-70b", gpu="h100", gpus=2, quantization="fp8", engine="sglang"),
     "RedHatAI/Llama-3.3-70B-Instruct-FP8-dynamic"),
    (dict(model="deepseek-v4-pro", gpu="b200", gpus=8, tensor_parallel_size=8, quantization="mixed-fp4-fp8",
          engine="vllm", max_model_len=2500), "deepseek-ai/DeepSeek-V4-Pro"),
    (dict(model="deepseek-v4-pro", gpu="b200", gpus=8, tensor_parallel_size=8, quantization="mixed-fp4-fp8",
          engine="sglang", max_model_len=2500), "deepseek-ai/DeepSeek-V4-Pro"),
    (dict(model="nemotron-3-super", gpu="b200", quantization="nvfp4", max_model_len=32768),
     "nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-NVFP4"),
])
def test_the_official_build_is_served_as_published(catalog, deployment, served):
    cmd = launch_command(Deployment(**deployment), catalog)
    assert cmd.checkpoint == served and served in cmd.argv
    assert "--quantization" not in cmd.argv  # already in the format: nothing quantized at load
    assert not any("placeholder" in n or "replace <" in n or "at load" in n for n in cmd.notes), cmd.notes


def test_every_build_meant_for_engines_names_known_engines_and_a_source(catalog):
    meant = [(m.id, c) for m in catalog.models for c in m.checkpoints if c.engines]
    assert meant
    for model, build in meant:
        assert all(e in {x.id for x in catalog.engines} for e in build.engines), (model, build.name)
        assert build.source in catalog.sources or build.size_bytes is not None, (model, build.name)
