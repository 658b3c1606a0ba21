"""A real config.json with a key the parameter count or the KV cache needs taken out is refused
naming that key, never imported with a default that changes the weights or the cache; a key/value
head count under a name the importer does not read is refused naming it, never planned as full
multi-head attention."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from inferplan.catalog.hf_import import architecture_from_config
from inferplan.errors import ConfigImportError

HERE = Path(__file__).parent / "data" / "configs_2026"


def _config(name: str) -> dict:
    return json.loads((HERE / name).read_bytes())


def _without(name: str, key: str) -> dict:
    raw = _config(name)
    if isinstance(raw.get("text_config"), dict):
        return {**raw, "text_config": {k: v for k, v in raw["text_config"].items() if k != key}}
    return {k: v for k, v in raw.items() if k != key}


# (config, key taken out, key the refusal names)
MISSING = [
    ("meta-llama__Llama-3.1-8B-Instruct.json", "intermediate_size", "intermediate_size"),  # was 2.4B params
    ("meta-llama__Llama-3.1-8B-Instruct.json", "num_key_value_heads", "num_key_value_heads"),
    ("meta-llama__Llama-3.1-8B-Instruct.json", "model_type", "model_type"),
    ("openai__gpt-oss-120b.json", "intermediate_size", "intermediate_size"),  # was 2.1B
    ("openai__gpt-oss-120b.json", "head_dim", "head_dim"),
    ("deepseek-ai__DeepSeek-V3.json", "moe_intermediate_size", "moe_intermediate_size"),  # was 5,922.7B
    ("deepseek-ai__DeepSeek-V3.json", "kv_lora_rank", "kv_lora_rank"),  # was plain MHA, 1,708 KiB/token
    ("deepseek-ai__DeepSeek-V3.json", "q_lora_rank", "q_lora_rank"),
    ("deepseek-ai__DeepSeek-V3.json", "n_shared_experts", "n_shared_experts"),
    ("deepseek-ai__DeepSeek-V3.json", "first_k_dense_replace", "first_k_dense_replace"),
    ("deepseek-ai__DeepSeek-V3.2.json", "index_topk", "index_topk"),
    ("Qwen__Qwen3-30B-A3B.json", "moe_intermediate_size", "moe_intermediate_size"),
    ("Qwen__Qwen3-30B-A3B.json", "num_key_value_heads", "num_key_value_heads"),
    ("Qwen__Qwen3-0.6B.json", "head_dim", "head_dim"),
    ("MiniMaxAI__MiniMax-M2.7.json", "head_dim", "head_dim"),
    ("mistralai__Mixtral-8x7B-Instruct-v0.1.json", "intermediate_size", "intermediate_size"),
    ("nvidia__Nemotron-H-56B-Base-8K.json", "hybrid_override_pattern", "hybrid_override_pattern"),
    ("nvidia__Nemotron-H-56B-Base-8K.json", "mlp_hidden_act", "mlp_hidden_act"),
    ("nvidia__Nemotron-H-56B-Base-8K.json", "n_groups", "n_groups"),
]


@pytest.mark.parametrize(("name", "key", "named"), MISSING, ids=lambda v: str(v)[:40])
def test_a_config_missing_a_key_the_counts_need_is_refused_naming_it(name, key, named):
    architecture_from_config(_config(name))  # the config as published imports
    with pytest.raises(ConfigImportError) as err:
        architecture_from_config(_without(name, key))
    assert err.value.field == named
    assert named in str(err.value)


# key/value head counts as other config classes name them (ChatGLM, Falcon, Megatron/NeMo, MPT ...)
HEAD_ALIASES = ["multi_query_group_num", "num_heads_kv", "n_head_kv", "num_query_groups", "kv_head_num",
                "num_kv_groups", "num_kv_heads", "key_value_heads", "num_key_value_groups", "kv_channels"]


@pytest.mark.parametrize("key", HEAD_ALIASES)
def test_a_head_count_under_another_name_is_refused_naming_it(key):
    config = {**_config("meta-llama__Llama-3.1-8B-Instruct.json"), key: 2}
    with pytest.raises(ConfigImportError) as err:
        architecture_from_config(config)
    assert err.value.field == key


def test_experts_routed_without_an_expert_count_are_refused():
    config = {**_config("meta-llama__Llama-3.1-8B-Instruct.json"), "num_experts_per_tok": 2}
    with pytest.raises(ConfigImportError) as err:
        architecture_from_config(config)
    assert err.value.field == "num_experts"


@pytest.mark.parametrize(("key", "value"), [("intermediate_size_per_layer", [14336] * 32), ("ffn_dim_multiplier", 1.3),
                                             ("use_double_wide_mlp", True), ("pruned_heads", {"0": [1]})])
def test_an_unread_mlp_width_key_or_an_unmodelled_design_is_refused(key, value):
    config = {**_config("meta-llama__Llama-3.1-8B-Instruct.json"), key: value}
    with pytest.raises(ConfigImportError) as err:
        architecture_from_config(config)
    assert err.value.field == key


def test_a_head_count_stated_twice_with_different_values_is_refused():
    config = {**_config("meta-llama__Llama-3.1-8B-Instruct.json"), "n_kv_heads": 2}
    with pytest.raises(ConfigImportError) as err:
        architecture_from_config(config)
    assert err.value.field == "n_kv_heads"


@pytest.mark.parametrize(("key", "value"), [("mixer_type", "mamba"), ("ssm_d_conv", 4), ("conv_L_cache", 3)])
def test_an_unread_mixer_key_is_refused_naming_it(key, value):
    config = {**_config("meta-llama__Llama-3.1-8B-Instruct.json"), key: value}
    with pytest.raises(ConfigImportError) as err:
        architecture_from_config(config)
    assert err.value.field == key
