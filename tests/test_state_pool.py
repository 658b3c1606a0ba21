"""SGLang's split of a hybrid model's cache room into recurrent-state slots and an attention KV pool
(catalog/hybrid_split.py, memory/state_pool.py; engine_memory_rules.yaml's hybrid_state_split)."""

import dataclasses
import datetime as dt

import pytest

from inferplan.catalog.hybrid_split import HybridStateSplit, hybrid_split_at
from inferplan.catalog.loader import load_catalog
from inferplan.catalog.memory_rules import memory_rule
from inferplan.inputs.deployment import Deployment
from inferplan.memory.fit import fit
from inferplan.memory.state_pool import state_pool
from inferplan.units import GiB

MiB = 2**20


def _split(padding: bool) -> HybridStateSplit:
    return HybridStateSplit(first_release="0.5.3", state_to_kv_ratio=0.9, padding_slot=padding, state_slots_per_request=3,
                            extra_buffer_slots=2, extra_buffer_architectures=("Qwen3NextForCausalLM",),
                            sources=("x",), checked=dt.date(2026, 12, 7), kind="spec")


def test_split_solves_for_whole_slots_with_the_padding_slot():
    # 0.5.23 _handle_max_mamba_cache: budget = 10 GiB x 0.9 / 1.9 = 4,850.53 MiB; K = int((budget - 10) // 10) = 484;
    # the pool takes (K + 1) x 10 MiB
    pool = state_pool(_split(True), 10 * GiB, 10 * MiB, "Qwen3NextForCausalLM")
    assert pool.slots == 484
    assert pool.state_bytes_per_gpu == 485 * 10 * MiB
    assert pool.kv_pool_bytes_per_gpu == 10 * GiB - 485 * 10 * MiB
    assert pool.running_cap == 484 // 5  # 3 slots + 2 tracking slots of the extra-buffer strategy


def test_split_without_the_padding_slot_and_outside_the_extra_buffer_list():
    # 0.5.6 / 0.5.13: K = int(budget // per_req), K x per_req taken; 3 slots a request under no_buffer
    pool = state_pool(_split(False), 10 * GiB, 10 * MiB, "NemotronHForCausalLM")
    assert pool.slots == 485
    assert pool.state_bytes_per_gpu == 485 * 10 * MiB
    assert pool.running_cap == 485 // 3


def test_the_split_is_picked_by_release():
    rule = memory_rule(load_catalog(), "sglang")
    assert hybrid_split_at(rule.hybrid_state_split, "0.5.13").padding_slot is False
    assert hybrid_split_at(rule.hybrid_state_split, "0.5.23").slots_per_request("Qwen3NextForCausalLM") == 5
    assert hybrid_split_at(rule.hybrid_state_split, "0.5.2") is None


def _qwen3_next(engine: str, version: str | None = None) -> Deployment:
    return Deployment(model="qwen3-next-80b-a3b", accelerator="h100-sxm", engine=engine, tensor_parallel_size=4,
                      max_model_len=32768, engine_version=version)


def test_fit_on_sglang_takes_the_kv_tokens_from_the_attention_pool():
    r = fit(_qwen3_next("sglang"))
    tp = 4
    state, per_tok = r.state_bytes_per_sequence / tp, r.kv_cache_bytes_per_token / tp
    budget = r.kv_cache_bytes_per_gpu * 0.9 / 1.9
    slots = int((budget - state) // state)
    assert r.kv_cache_tokens == int((r.kv_cache_bytes_per_gpu - (slots + 1) * state) // per_tok)
    assert r.max_concurrency == pytest.approx(min(r.kv_cache_tokens / 32768, slots // 5), rel=1e-6)
    note = next(a for a in r.assumptions if "recurrent-state slots" in a)
    assert f"{slots:,} recurrent-state slots" in note and f"at {slots // 5:,} per instance" in note


def test_the_running_sequences_are_capped_by_the_state_slots():
    r = fit(_qwen3_next("sglang").model_copy(update={"max_model_len": 1024}))
    note = next(a for a in r.assumptions if "recurrent-state slots" in a)
    cap = int(note.split("running sequences at ")[1].split(" ")[0].replace(",", ""))
    assert r.kv_cache_tokens / 1024 > cap
    assert r.max_concurrency == cap
    assert r.state_running_cap == cap and r.state_slots >= 5 * cap


def test_an_older_release_plans_three_slots_a_request():
    r = fit(_qwen3_next("sglang", "0.5.13"))
    assert any("(3 slots each)" in a for a in r.assumptions)


def test_vllm_keeps_the_state_inside_the_one_pool():
    r = fit(_qwen3_next("vllm"))
    assert not any("recurrent-state slots" in a for a in r.assumptions)


def test_unwired_split_data_changes_the_plan():
    catalog = load_catalog()
    rule = memory_rule(catalog, "sglang")
    records = {k: (r.model_copy(update={"hybrid_state_split": ()}) if r is rule else r)
               for k, r in catalog.memory_rules.records.items()}
    unwired = dataclasses.replace(catalog, memory_rules=dataclasses.replace(catalog.memory_rules, records=records))
    with_split, without = fit(_qwen3_next("sglang"), catalog), fit(_qwen3_next("sglang"), unwired)
    assert with_split.kv_cache_tokens < without.kv_cache_tokens
    assert not any("recurrent-state slots" in a for a in without.assumptions)


def test_stated_slots_set_the_state_pool():
    r = fit(_qwen3_next("sglang").model_copy(update={"max_mamba_cache_size": 100}))
    state, per_tok = r.state_bytes_per_sequence / 4, r.kv_cache_bytes_per_token / 4
    assert r.kv_cache_tokens == int((r.kv_cache_bytes_per_gpu - 101 * state) // per_tok)
    assert any("100 recurrent-state slots" in a and "as stated" in a and "at 20 per instance" in a for a in r.assumptions)


def test_a_stated_ratio_moves_memory_between_the_pools():
    low, high = (fit(_qwen3_next("sglang").model_copy(update={"mamba_full_memory_ratio": x})) for x in (0.1, 2.0))
    assert low.kv_cache_tokens > high.kv_cache_tokens
    assert any("0.1 x the KV pool's memory" in a for a in low.assumptions)


@pytest.mark.parametrize("field,value", [("max_mamba_cache_size", 64), ("mamba_full_memory_ratio", 0.5)])
def test_state_pool_settings_are_refused_off_sglang_and_off_hybrid_models(field, value):
    from inferplan.errors import InvalidScenarioError
    with pytest.raises(InvalidScenarioError) as off_engine:
        fit(_qwen3_next("vllm").model_copy(update={field: value}))
    assert off_engine.value.field == field and "sglang" in off_engine.value.allowed
    with pytest.raises(InvalidScenarioError) as off_model:
        fit(Deployment(model="qwen3-32b", accelerator="h100-sxm", engine="sglang", **{field: value}))
    assert off_model.value.field == field and "no Mamba or linear-attention layers" in str(off_model.value)


def test_deepseek_v4_compressor_state_stays_in_the_kv_pool():
    # its compressor state is per-sequence state too, but SGLang keeps no state slots for it
    r = fit(Deployment(model="deepseek-v4-flash", accelerator="b200", engine="sglang", tensor_parallel_size=8,
                       max_model_len=131072))
    assert r.state_bytes_per_sequence > 0
    assert not any("recurrent-state slots" in a for a in r.assumptions)


def test_the_hybrid_field_file_loads_and_keeps_its_split_rule():
    from pathlib import Path

    import yaml

    from inferplan.catalog.loader import DATA_DIR
    from inferplan.memory.resolve import resolve_model
    from inferplan.memory.state_pool import RECURRENT

    catalog = load_catalog()
    data = yaml.safe_load((Path(DATA_DIR) / "measurements" / "memory_field_hybrid.yaml").read_text())
    points = data["memory_points"]
    assert {p["id"] for p in points} <= set(catalog.memory_points.records)
    assert [p["split"] for p in points] == ["development" if i % 2 == 0 else "holdout" for i in range(len(points))]
    assert all(RECURRENT & set(resolve_model(catalog, p["model"]).architecture.layer_kinds) for p in points)
