"""The RTX 4090 field records (measurements/memory_field_4090.yaml), the model cards they plan with and
the vLLM 0.2.0-0.2.4 memory rule they need: the declared held-out split, the cards' KV bytes per token
from their configs, and the pre-PR #2031 budget that leaves non-torch memory outside the fraction."""

from pathlib import Path

import pytest
import yaml

from inferplan.catalog.loader import DATA_DIR
from inferplan.catalog.memory_rules import memory_rule
from inferplan.memory.fit import fit
from inferplan.validation.memory import check_point, deployment_for

FILE = Path(DATA_DIR) / "measurements" / "memory_field_4090.yaml"


def _point(catalog, point_id):
    return next(p for p in catalog.memory_points if p.id == point_id)


def test_the_held_out_split_follows_the_rule_declared_in_the_file(catalog):
    listed = yaml.safe_load(FILE.read_text())["memory_points"]
    # rule in the header: in listing order the 2nd, 4th, 6th … record is held out
    assert [p["split"] for p in listed] == ["development" if i % 2 == 0 else "holdout" for i in range(len(listed))]
    loaded = {p.id for p in catalog.memory_points}
    assert {p["id"] for p in listed} <= loaded


@pytest.mark.parametrize("model, layers, kv_heads, context", [
    ("deepseek-r1-distill-qwen-14b", 48, 8, 131072),  # Qwen2.5-14B's config.json
    ("codellama-13b", 40, 40, 16384),  # Llama 2 13B's layers, CodeLlama's context
])
def test_the_cards_take_kv_bytes_per_token_and_context_from_their_configs(catalog, model, layers, kv_heads, context):
    spec = catalog.model(model)
    assert spec.context_tokens.value == context
    # the record's vLLM 0.2.4 predates Qwen2ForCausalLM (engine_support.yaml: loaded from 0.3.0)
    r = fit(deployment_for(_point(catalog, "g02-codellama-13b-tp2-rtx4090-v024-16k")).model_copy(
        update={"model": model, "max_model_len": 4096, "engine_version": "0.3.0 V0"}), catalog)
    assert r.kv_cache_bytes_per_token == layers * 2 * kv_heads * 128 * 2


def test_vllm_0_2_4_is_planned_with_the_torch_peak_rule(catalog):
    assert memory_rule(catalog, "vllm", "0.2.4 V0").id == "vllm-v0-torch-peak-only"
    assert memory_rule(catalog, "vllm", "0.2.3").id == "vllm-v0-torch-peak-only"
    assert memory_rule(catalog, "vllm", "0.2.5").id == "vllm-v0-device-used"


def test_before_pr_2031_non_torch_memory_sits_outside_the_fraction(catalog):
    """The same CodeLlama-13B TP 2 start-up on 0.2.4 and 0.2.5: 0.2.4 counts weights and the activation
    peak only, 0.2.5 adds the non-torch memory total - free sees."""
    d = deployment_for(_point(catalog, "g02-codellama-13b-tp2-rtx4090-v024-16k"))
    v024, v025 = fit(d, catalog), fit(d.model_copy(update={"engine_version": "0.2.5 V0"}), catalog)
    assert v024.memory_rule_id == "vllm-v0-torch-peak-only" and v024.overhead_bytes_per_gpu == 0
    assert v025.overhead_bytes_per_gpu > 0
    assert v024.kv_cache_bytes_per_gpu > v025.kv_cache_bytes_per_gpu


def test_the_0_2_4_record_is_planned_within_ten_percent_of_its_printed_blocks(catalog):
    # vllm-project/vllm issue #2136: '# GPU blocks: 1464' on 2x RTX 4090, 0.2.3 and 0.2.4
    check = check_point(_point(catalog, "g02-codellama-13b-tp2-rtx4090-v024-16k"), catalog)
    assert check.refused is None and check.memory_rule.startswith("vLLM 0.2.0-0.2.4")
    assert abs(check.kv_error) < 0.10
    assert check.predicted_fits is True


def test_a_non_driver_ranks_peak_is_left_out_of_the_v0_activation_fit(catalog):
    """g01 copies rank 1's profiling line (no sampler: only the driver samples); fitting the V0 sampler
    constant on its 0.19 GiB would cut the constant several-fold."""
    from inferplan.validation.calibrate import fit_vllm_v0_activation

    point = _point(catalog, "g01-r1-distill-qwen-14b-tp2-rtx4090-v0-131k-fails")
    assert point.log_rank == 1 and point.split == "development" and point.measured.activation_bytes_per_gpu
    assert point.id not in fit_vllm_v0_activation(catalog).points


def test_a_non_driver_ranks_record_is_scored_against_the_pool_its_token_count_gives(catalog):
    # issue #13061: 'maximum number of tokens that can be stored in KV cache (81536)'; 98,304 bytes per
    # token per GPU (48 layers x 2 x 4 KV heads x 128 x 2 bytes); the quoted 8.69 GiB is rank 1's room
    check = check_point(_point(catalog, "g01-r1-distill-qwen-14b-tp2-rtx4090-v0-131k-fails"), catalog)
    assert check.measured_kv_bytes == 81536 * 98304
    assert check.measured_fits is False and check.predicted_fits is False
