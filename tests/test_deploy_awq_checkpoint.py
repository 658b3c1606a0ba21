"""An AWQ launch serves the model card's published AWQ build; where the card has none, a note names the
placeholder and what to put in its place."""

from __future__ import annotations

from inferplan.deploy.command import launch_command
from inferplan.inputs.deployment import Deployment


def test_llama_3_3_70b_awq_serves_the_published_awq_build(catalog):
    command = launch_command(Deployment(model="llama-3.3-70b", gpu="h100-sxm", tensor_parallel_size=2,
                                        quantization="int4-awq"), catalog)
    assert command.checkpoint == "casperhansen/llama-3.3-70b-instruct-awq"
    assert not any("names no" in n for n in command.notes), command.notes


def test_a_format_with_no_published_build_says_what_to_substitute(catalog):
    assert not any(c.quantization == "int4-awq" for c in catalog.model("llama-3.1-8b").checkpoints)
    command = launch_command(Deployment(model="llama-3.1-8b", gpu="h100-sxm", quantization="int4-awq"), catalog)
    assert command.checkpoint == "<int4-awq checkpoint of llama-3.1-8b>"
    assert any(f"replace {command.checkpoint} with its repo id or a local path" in n for n in command.notes)
