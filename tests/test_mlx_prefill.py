"""MLX's prefill working set (engine_memory_rules_context.yaml, rule mlx-in-flight-prefill): the
activations of a prompt chunk held by MLX's in-flight command buffers, walked over mlx-lm's block.
Each test fails when the rule is unwired from the data or the code."""

import pytest
from pydantic import ValidationError

from inferplan.catalog.memory_rules import MemoryRule, memory_rule
from inferplan.memory.budget_parts import activation_bytes
from inferplan.memory.budget_settings import EngineSettings
from inferplan.memory.fit import fit
from inferplan.memory.mlx_prefill import prefill_working_set_bytes
from inferplan.memory.resolve import resolve_model
from inferplan.units import MiB
from inferplan.validation.memory import deployment_for, validate_memory

X08 = "x08-qwen3-4b-mlx4-m4max-2k"


def _arch(catalog, model: str):
    return resolve_model(catalog, model).architecture


def test_mlx_lm_from_0_22_2_sizes_activations_by_the_in_flight_command_buffers(catalog):
    rule = memory_rule(catalog, "mlx")
    assert rule.id == "mlx-in-flight-prefill" and rule.activation.model == "mlx_in_flight"
    assert memory_rule(catalog, "mlx", "0.22.2").id == rule.id
    assert memory_rule(catalog, "mlx", "0.22.1").id == "mlx-working-set"  # before MLX's causal kernel and task cap
    working = rule.prefill_working_set
    assert working.max_active_tasks == 10  # MLX transforms.cpp MAX_ACTIVE_TASKS
    # MLX device.cpp: 's' (max) and 'd' (ultra) 50 ops / 50 MiB, 'g' (base, pro) and the default 40 / 40
    assert (working.limits_for("apple-m4-max").max_ops, working.limits_for("apple-m4-max").max_mib) == (50, 50)
    assert working.limits_for("apple-m2-ultra").max_mib == 50
    assert (working.limits_for("apple-m3-pro").max_ops, working.limits_for("apple-m3-pro").max_mib) == (40, 40)


def test_fit_counts_the_walked_working_set_as_the_mlx_activation(catalog):
    point = next(p for p in catalog.memory_points if p.id == X08)
    planned = fit(deployment_for(point), catalog)
    working = memory_rule(catalog, "mlx").prefill_working_set
    expected, _ = prefill_working_set_bytes(working, _arch(catalog, "qwen3-4b"), chunk_tokens=2048, context_tokens=2304,
                                            weight_bits=4.5, accelerator="apple-m4-max")
    assert planned.activation_bytes_per_gpu == expected
    assert 0.4e9 < expected < 0.7e9  # a generic 16 B x tokens x hidden workspace would be 0.08 GB


def test_the_peaks_mlx_lm_printed_from_0_22_2_are_planned_within_7_percent(catalog):
    """Printed "Peak memory" of mlx-lm 0.22.2-0.31.3 runs at 2,048-token chunks (Qwen3-4B at four
    precisions, Qwen3-30B-A3B at three, Mistral 7B at 34k context): the weights, the cache and the
    working set plan each within 7 % (up to 20 % short without the working set)."""
    checks = [c for c in validate_memory(catalog).checks
              if c.engine == "mlx" and c.memory_rule.startswith("mlx-lm 0.22.2") and c.rule_basis == "engine_release"]
    assert len(checks) >= 9
    assert all(abs(c.peak_error) < 0.07 for c in checks), {c.id: round(c.peak_error, 3) for c in checks}


@pytest.mark.parametrize("model", ["qwen3-4b", "qwen3-30b-a3b"])
def test_more_buffers_in_flight_never_hold_less(catalog, model):
    working = memory_rule(catalog, "mlx").prefill_working_set
    held = [prefill_working_set_bytes(working.model_copy(update={"max_active_tasks": n}), _arch(catalog, model),
                                      chunk_tokens=2048, context_tokens=2304, weight_bits=4.5,
                                      accelerator="apple-m4-max")[0] for n in (1, 10, 100)]
    assert held[0] < held[1] < held[2]


def test_without_commit_limits_every_activation_of_the_chunk_is_held(catalog):
    """With one open buffer for the whole chunk, the walk holds each array of mlx-lm's Llama block once:
    per layer the input, its norm, q, k, v, roped q and k, the attention output, its projection, the
    residual and its norm (hidden-wide x 6, q-wide x 3, kv-wide x 3), gate, up and product (MLP-wide
    x 3) and the down projection, plus the last layer's output."""
    working = memory_rule(catalog, "mlx").prefill_working_set
    unlimited = working.model_copy(update={"default_limits": working.default_limits.model_copy(
        update={"max_ops": 10**9, "max_mib": 1e12})})
    arch = _arch(catalog, "mistral-7b")
    tokens = 512
    held, _ = prefill_working_set_bytes(unlimited, arch, chunk_tokens=tokens, context_tokens=4096, weight_bits=4.5,
                                        accelerator=None)
    hid, q, kv, mlp = 4096, 32 * 128, 8 * 128, 14336
    per_layer = 6 * hid + 3 * q + 3 * kv + 3 * mlp
    assert held == 2 * tokens * (arch.num_layers * per_layer + hid)


def test_without_layer_shapes_the_working_set_is_the_buffers_limits(catalog):
    rule = memory_rule(catalog, "mlx")
    accel = catalog.accelerator("apple-m4-max")
    held, note = activation_bytes(catalog, rule, None, EngineSettings(1.0, 2048, 1, 256, 2048), 1, accel=accel)
    assert held == 11 * 50 * MiB
    assert "no layer shapes" in note


def test_an_in_flight_activation_needs_its_prefill_working_set(catalog):
    data = memory_rule(catalog, "mlx").model_dump()
    data["prefill_working_set"] = None
    with pytest.raises(ValidationError, match="prefill_working_set"):
        MemoryRule.model_validate(data)


def test_a_chunk_longer_than_the_context_is_the_context(catalog):
    rule = memory_rule(catalog, "mlx")
    arch = _arch(catalog, "qwen3-4b")
    settings = EngineSettings(1.0, 2048, 1, 256, 2048, context_tokens=512)
    held, _ = activation_bytes(catalog, rule, arch, settings, 1, accel=None, weight_bits=4.5)
    expected, _ = prefill_working_set_bytes(rule.prefill_working_set, arch, chunk_tokens=512, context_tokens=512,
                                            weight_bits=4.5, accelerator=None)
    assert held == expected
