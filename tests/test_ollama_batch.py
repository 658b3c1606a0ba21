"""An Ollama tag's build is planned at the generation batch Ollama passes llama-server as -b and -ub when no num_batch
is set (memory/ollama_batch.py, ollama.yaml ``generation_batch``); a stated --ubatch-size is Ollama's num_batch, wins,
and is launched as a Modelfile PARAMETER."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from inferplan.catalog.loader import load_catalog
from inferplan.catalog.ollama_schema import GenerationBatch
from inferplan.deploy import launch_command
from inferplan.inputs.deployment import Deployment
from inferplan.memory.fit import fit, placed_deployment

from catalog_edits import with_record

CATALOG = load_catalog()
RULE = CATALOG.ollama_runners.records["ollama"].generation_batch


def _batch(**stated) -> int | None:
    return placed_deployment(Deployment(**stated), CATALOG).ubatch_size


def test_a_long_context_with_headroom_runs_the_largest_batch():
    # gpt-oss:20b at 131,072 tokens on an RTX PRO 6000: far below 60 % of its memory, so -b / -ub 2048
    tag = fit(Deployment(model="gpt-oss:20b", gpu="rtx-pro-6000"), CATALOG)
    stated = fit(Deployment(model="gpt-oss:20b", gpu="rtx-pro-6000", ubatch_size=2048), CATALOG)
    assert tag.activation_bytes_per_gpu == stated.activation_bytes_per_gpu
    assert any(a.startswith("-b / -ub 2048: the generation batch Ollama chooses") for a in tag.assumptions)
    assert _batch(model="gpt-oss:20b", gpu="rtx-pro-6000") == RULE.tiers[0].tokens == 2048


def test_the_batch_steps_down_with_the_context_and_the_headroom():
    assert _batch(model="gpt-oss:20b", gpu="rtx-4090") == 1024  # 32,768 tokens: the medium tier
    assert _batch(model="qwen3:32b", gpu="rtx-3090", gpus=2, max_model_len=40960) == 2048  # 24.7 of 47.2 GiB
    assert _batch(model="qwen3:32b", gpu="rtx-4090") == RULE.default_tokens  # 23.4 GiB predicted of 23.6: no room
    assert _batch(model="qwen3:8b", gpu="t4") == RULE.default_tokens  # 4,096 tokens: a short context
    assert _batch(model="qwen3:8b", gpu="t4", max_num_seqs=9) == RULE.tiers[1].tokens  # 36,864 tokens, 61 % of it


def test_flash_attention_off_on_a_small_cuda_gpu_takes_the_small_batch():
    assert _batch(model="qwen3:8b", gpu="t4", max_model_len=8192, flash_attention=False) == RULE.default_tokens
    assert _batch(model="qwen3:8b", gpu="rtx-3070", max_model_len=8192, flash_attention=False) == RULE.small_gpu_tokens


def test_a_stated_ubatch_size_wins_and_launches_as_num_batch():
    d = placed_deployment(Deployment(model="gpt-oss:20b", gpu="rtx-pro-6000", ubatch_size=512), CATALOG)
    assert d.ubatch_size == 512 and d.batch_chosen_by is None
    command = launch_command(Deployment(model="qwen3:32b", gpu="rtx-4090", ubatch_size=1024, host_memory_gb=64), CATALOG)
    (modelfile,) = command.files
    assert f"PARAMETER {CATALOG.ollama_runners.records['ollama'].launch.modelfile_parameters['ubatch_size']} 1024" \
        in modelfile.text.splitlines() and "num_batch" in modelfile.text
    assert not any(n.startswith("ubatch_size") and "takes no setting" in n for n in command.notes)


def test_the_rule_is_the_runners_data():
    d = Deployment(model="gpt-oss:20b", gpu="rtx-pro-6000")
    wired = fit(d, CATALOG).activation_bytes_per_gpu
    unwired = fit(d, with_record(CATALOG, "ollama_runners", "ollama", generation_batch=None))
    assert unwired.activation_bytes_per_gpu < wired and not any("-b / -ub" in a for a in unwired.assumptions)


def test_tiers_out_of_order_are_refused():
    data = RULE.model_dump(mode="json")
    data["tiers"] = list(reversed(data["tiers"]))
    with pytest.raises(ValidationError, match="largest batch first"):
        GenerationBatch.model_validate(data)


def test_of_several_gpus_a_model_one_holds_counts_that_gpus_memory_alone():
    # qwen3:8b at 32,768 tokens predicts 9.2 GiB: one RTX 4090 holds it, so 23.6 GiB are available, not 47.2
    one = placed_deployment(Deployment(model="qwen3:8b", gpu="rtx-4090"), CATALOG)
    two = placed_deployment(Deployment(model="qwen3:8b", gpu="rtx-4090", gpus=2, max_model_len=32768), CATALOG)
    assert one.ubatch_size == two.ubatch_size and "of the 23.6 GiB available" in two.batch_chosen_by
