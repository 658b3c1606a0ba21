"""A model given as a config.json or folder is launched in the weight format fit planned: the engine's
on-load quantization flag where it makes that format from the config's 16-bit weights, else a note that
the folder must hold a checkpoint in that format (none where its config already states it)."""

from __future__ import annotations

import json

import pytest

from inferplan.deploy import launch_command
from inferplan.inputs.deployment import Deployment

CONFIG = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096,
          "intermediate_size": 14336, "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
          "head_dim": 128, "vocab_size": 128256, "max_position_embeddings": 32768, "tie_word_embeddings": False,
          "torch_dtype": "bfloat16", "rms_norm_eps": 1e-5, "rope_theta": 500000.0}


def _config(tmp_path, **extra) -> str:
    folder = tmp_path / "mymodel"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({**CONFIG, **extra}))
    return str(folder / "config.json")


def _deploy(model: str, quantization: str, engine: str = "vllm"):
    return launch_command(Deployment(model=model, gpu="RTX 4090", quantization=quantization, max_model_len=8192,
                                     engine=engine), None)


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_fp8_from_a_16_bit_folder_is_quantized_at_load(tmp_path, engine):
    command = _deploy(_config(tmp_path), "fp8", engine)
    assert command.argv[command.argv.index("--quantization") + 1] in ("fp8", "fp8_e4m3")
    assert str(tmp_path / "mymodel") in command.argv
    assert any("quantized to fp8" in note for note in command.notes)


def test_a_format_made_offline_is_a_note_that_the_folder_must_hold_it(tmp_path):
    command = _deploy(_config(tmp_path), "int4-awq")
    assert "--quantization" not in command.argv
    assert any("must hold a checkpoint in int4-awq" in note for note in command.notes)


def test_a_folder_whose_config_states_the_format_needs_neither(tmp_path):
    command = _deploy(_config(tmp_path, quantization_config={"quant_method": "awq", "bits": 4}), "int4-awq")
    assert "--quantization" not in command.argv
    assert not any("must hold a checkpoint" in note or "at load" in note for note in command.notes)


def test_the_16_bit_plan_of_a_16_bit_folder_needs_neither(tmp_path):
    command = _deploy(_config(tmp_path), "bf16")
    assert "--quantization" not in command.argv and len(command.notes) == 1
